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


def source_users(db: sqlite_utils.Database, org_id: int, source_id: int) -> tuple[bool, int, int]:
    """Whether the source is the organisation's default, and how many profiles and mailboxes use it."""
    default = db.execute(
        "SELECT 1 FROM organisations WHERE id = ? AND default_source_id = ?", [org_id, source_id]
    ).fetchone()
    profiles = db.execute("SELECT count(*) FROM profiles WHERE org_id = ? AND source_id = ?", [org_id, source_id])
    mailboxes = db.execute("SELECT count(*) FROM mailboxes WHERE org_id = ? AND source_id = ?", [org_id, source_id])
    return default is not None, profiles.fetchone()[0], mailboxes.fetchone()[0]


def delete_unused_source(db: sqlite_utils.Database, org_id: int, source_id: int) -> tuple[bool, int, int] | None:
    """Delete the source unless it is the default or in use (checked in the same transaction):
    None when deleted, else what source_users found."""
    with db.atomic():
        users = source_users(db, org_id, source_id)
        if users != (False, 0, 0):
            return users
        db.execute("DELETE FROM sources WHERE id = ? AND org_id = ?", [source_id, org_id])
        return None


def set_default_source(db: sqlite_utils.Database, org_id: int, source_id: int) -> None:
    db.execute("UPDATE organisations SET default_source_id = ? WHERE id = ?", [source_id, org_id])


def name_taken(db: sqlite_utils.Database, org_id: int, name: str, except_id: int | None) -> bool:
    row = db.execute(
        "SELECT 1 FROM sources WHERE org_id = ? AND name = ? AND id != ?", [org_id, name, except_id or 0]
    ).fetchone()
    return row is not None


def local_folders(db: sqlite_utils.Database) -> tuple[list[dict], list[dict]]:
    """Every local source with its organisation, and every organisation (whose own folder in the
    data dir is kept for it): what the rule that organisations never share a folder reads."""
    sources = [
        dict(row, path=json.loads(row.pop("config")).get("path", ""))
        for row in db.query(
            "SELECT s.id AS source_id, s.name AS source_name, s.config, o.id AS org_id, o.name AS org_name,"
            " o.subdomain FROM sources s JOIN organisations o ON o.id = s.org_id WHERE s.type = 'local' ORDER BY s.id"
        )
    ]
    organisations = list(db.query("SELECT id AS org_id, name AS org_name, subdomain FROM organisations ORDER BY id"))
    return sources, organisations
