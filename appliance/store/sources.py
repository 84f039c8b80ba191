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


def delete_unused_source(
    db: sqlite_utils.Database, org_id: int, source_id: int, reserve: dict | None = None
) -> tuple[bool, int, int] | None:
    """Delete the source unless it is the default or in use (checked in the same transaction):
    None when deleted, else what source_users found. `reserve` (path, source_name,
    reserved_at): its folder is kept for the organisation in the same transaction."""
    with db.atomic():
        users = source_users(db, org_id, source_id)
        if users != (False, 0, 0):
            return users
        db.execute("DELETE FROM sources WHERE id = ? AND org_id = ?", [source_id, org_id])
        if reserve is not None:
            db["reserved_folders"].insert(dict(reserve, org_id=org_id))
        return None


def forget_reserved(db: sqlite_utils.Database, reserved_ids: list[int]) -> None:
    """Forget reservations of folders whose files are gone."""
    with db.atomic():
        for reserved_id in reserved_ids:
            db.execute("DELETE FROM reserved_folders WHERE id = ?", [reserved_id])


def release_folder(db: sqlite_utils.Database, reserved_id: int) -> dict | None:
    """Forget a reserved folder: the row it was (with its organisation's name), or None."""
    with db.atomic():
        row = next(
            db.query(
                "SELECT r.*, o.name AS org_name FROM reserved_folders r JOIN organisations o ON o.id = r.org_id"
                " WHERE r.id = ?",
                [reserved_id],
            ),
            None,
        )
        if row is not None:
            db.execute("DELETE FROM reserved_folders WHERE id = ?", [reserved_id])
        return row


def set_default_source(db: sqlite_utils.Database, org_id: int, source_id: int) -> None:
    db.execute("UPDATE organisations SET default_source_id = ? WHERE id = ?", [source_id, org_id])


def name_taken(db: sqlite_utils.Database, org_id: int, name: str, except_id: int | None) -> bool:
    row = db.execute(
        "SELECT 1 FROM sources WHERE org_id = ? AND name = ? AND id != ?", [org_id, name, except_id or 0]
    ).fetchone()
    return row is not None


def local_folders(db: sqlite_utils.Database) -> tuple[list[dict], list[dict], list[dict]]:
    """Every local source with its organisation, every organisation (whose own folder in the
    data dir is kept for it) and every folder kept for an organisation after its source was
    deleted: what the rule that organisations never share a folder reads."""
    sources = [
        dict(row, path=json.loads(row.pop("config")).get("path", ""))
        for row in db.query(
            "SELECT s.id AS source_id, s.name AS source_name, s.config, o.id AS org_id, o.name AS org_name,"
            " o.subdomain, o.status AS org_status FROM sources s JOIN organisations o ON o.id = s.org_id WHERE s.type = 'local' ORDER BY s.id"
        )
    ]
    organisations = list(
        db.query(
            "SELECT id AS org_id, name AS org_name, subdomain, status AS org_status FROM organisations ORDER BY id"
        )
    )
    reserved = list(
        db.query(
            "SELECT r.id AS reserved_id, r.path, r.source_name, r.reserved_at, o.id AS org_id, o.name AS org_name,"
            " o.subdomain, o.status AS org_status FROM reserved_folders r JOIN organisations o ON o.id = r.org_id ORDER BY r.id"
        )
    )
    return sources, organisations, reserved
