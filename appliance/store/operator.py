"""SQL of the operator's view across organisations."""

from __future__ import annotations

import sqlite_utils

from .queries import _organisation


def list_organisations(db: sqlite_utils.Database, search: str, limit: int, offset: int) -> tuple[int, list]:
    where, params = "(name LIKE ? OR subdomain LIKE ?)", [f"%{search}%", f"%{search}%"]
    count = db.execute(f"SELECT count(*) FROM organisations WHERE {where}", params).fetchone()[0]
    rows = db.query(
        f"SELECT o.*, (SELECT count(*) FROM profiles p WHERE p.org_id = o.id) AS users FROM organisations o "
        f"WHERE {where} ORDER BY o.name LIMIT ? OFFSET ?",
        [*params, limit, offset],
    )
    return count, [(_organisation(row), row["users"]) for row in rows]


def members(db: sqlite_utils.Database, org_id: int) -> int:
    """How many profiles the organisation has (its users in the operator's list)."""
    return db.execute("SELECT count(*) FROM profiles WHERE org_id = ?", [org_id]).fetchone()[0]


def organisation_ids(db: sqlite_utils.Database) -> list[int]:
    """Every organisation's id (deleted ones too: their files are still on disk)."""
    return [row[0] for row in db.execute("SELECT id FROM organisations ORDER BY id")]
