"""SQL of sources as admins list and change them."""

from __future__ import annotations

import json

import sqlite_utils

from ..models import Source
from .queries import _source


def list_sources(
    db: sqlite_utils.Database, org_id: int, search: str, limit: int, offset: int
) -> tuple[int, list[Source]]:
    where, params = "org_id = ? AND name LIKE ?", [org_id, f"%{search}%"]
    count = db.execute(f"SELECT count(*) FROM sources WHERE {where}", params).fetchone()[0]
    rows = db.query(f"SELECT * FROM sources WHERE {where} ORDER BY name LIMIT ? OFFSET ?", [*params, limit, offset])
    return count, [_source(r) for r in rows]


def update_source(db: sqlite_utils.Database, org_id: int, source_id: int, values: dict) -> None:
    values = dict(values)
    if "config" in values:
        values["config"] = json.dumps(values["config"])
    sets = ", ".join(f"{name} = ?" for name in values)
    db.execute(f"UPDATE sources SET {sets} WHERE id = ? AND org_id = ?", [*values.values(), source_id, org_id])


def delete_source(db: sqlite_utils.Database, org_id: int, source_id: int) -> bool:
    with db.atomic():
        db.execute("UPDATE organisations SET default_source_id = NULL WHERE id = ? AND default_source_id = ?",
                   [org_id, source_id])  # fmt: skip
        return db.execute("DELETE FROM sources WHERE id = ? AND org_id = ?", [source_id, org_id]).rowcount == 1


def name_taken(db: sqlite_utils.Database, org_id: int, name: str, except_id: int | None) -> bool:
    row = db.execute(
        "SELECT 1 FROM sources WHERE org_id = ? AND name = ? AND id != ?", [org_id, name, except_id or 0]
    ).fetchone()
    return row is not None


def other_organisations(db: sqlite_utils.Database, org_id: int) -> list[str]:
    return [row[0] for row in db.execute("SELECT subdomain FROM organisations WHERE id != ?", [org_id])]
