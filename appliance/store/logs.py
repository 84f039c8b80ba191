"""SQL of the audit log as admins search and export it."""

from __future__ import annotations

import sqlite_utils

COLUMNS = "id, created_at, username, protocol, action, path, bytes, remote_address, message"


def _where(org_id: int, filters: dict) -> tuple[str, list]:
    clauses, params = ["org_id = ?"], [org_id]
    if filters.get("search"):
        clauses.append("(message LIKE ? OR path LIKE ? OR username LIKE ?)")
        params += [f"%{filters['search']}%"] * 3
    for name in ("action", "protocol", "username"):
        if filters.get(name):
            clauses.append(f"{name} = ?")
            params.append(filters[name])
    if filters.get("date_from"):
        clauses.append("created_at >= ?")
        params.append(filters["date_from"])
    if filters.get("date_to"):
        clauses.append("created_at < ?")
        params.append(filters["date_to"])
    return " AND ".join(clauses), params


def search_logs(db: sqlite_utils.Database, org_id: int, filters: dict, limit: int, offset: int) -> tuple[int, list]:
    where, params = _where(org_id, filters)
    count = db.execute(f"SELECT count(*) FROM logs WHERE {where}", params).fetchone()[0]
    rows = list(db.query(f"SELECT {COLUMNS} FROM logs WHERE {where} ORDER BY id DESC LIMIT ? OFFSET ?",
                         [*params, limit, offset]))  # fmt: skip
    return count, rows


def export_logs(db: sqlite_utils.Database, org_id: int, filters: dict, before_id: int | None, limit: int) -> list:
    """A batch of rows for the CSV export, newest first, keyset-paged by id."""
    where, params = _where(org_id, filters)
    if before_id is not None:
        where += " AND id < ?"
        params.append(before_id)
    return [
        tuple(row.values())
        for row in db.query(f"SELECT {COLUMNS} FROM logs WHERE {where} ORDER BY id DESC LIMIT ?", [*params, limit])
    ]
