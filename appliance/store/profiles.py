"""SQL of profiles as admins list and change them."""

from __future__ import annotations

import sqlite_utils

from ..models import Profile
from .queries import _profile

ORDERINGS = {
    "username": "username COLLATE NOCASE",
    "-username": "username COLLATE NOCASE DESC",
    "last_login": "last_login",
    "-last_login": "last_login DESC",
    "created_at": "id",
    "-created_at": "id DESC",
}


def list_profiles(
    db: sqlite_utils.Database, org_id: int, search: str, ordering: str, limit: int, offset: int
) -> tuple[int, list[Profile]]:
    pattern = f"%{search}%"
    where = "org_id = ? AND (username LIKE ? OR email LIKE ?)"
    params = [org_id, pattern, pattern]
    count = db.execute(f"SELECT count(*) FROM profiles WHERE {where}", params).fetchone()[0]
    order = ORDERINGS.get(ordering, ORDERINGS["username"])
    rows = db.query(f"SELECT * FROM profiles WHERE {where} ORDER BY {order} LIMIT ? OFFSET ?", [*params, limit, offset])
    return count, [_profile(row) for row in rows]


def delete_profile(db: sqlite_utils.Database, org_id: int, profile_id: int) -> bool:
    return db.execute("DELETE FROM profiles WHERE id = ? AND org_id = ?", [profile_id, org_id]).rowcount == 1


def set_password_if_unchanged(
    db: sqlite_utils.Database, profile_id: int, old_hash: str | None, new_hash: str, changed_at: str
) -> bool:
    """Set a password only while the hash is still `old_hash`: a reset link, made from the
    old hash, then works once even when it is used twice at the same moment."""
    cursor = db.execute(
        "UPDATE profiles SET password_hash = ?, password_changed_at = ? WHERE id = ? AND password_hash IS ?",
        [new_hash, changed_at, profile_id, old_hash],
    )
    return cursor.rowcount == 1
