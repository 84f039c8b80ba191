"""SQL of web sessions: refresh tokens, each usable once."""

from __future__ import annotations

import sqlite_utils


def remember_refresh(db: sqlite_utils.Database, jti: str, profile_id: int, expires_at: str) -> None:
    db["refresh_tokens"].insert({"jti": jti, "profile_id": profile_id, "expires_at": expires_at})


def use_refresh(db: sqlite_utils.Database, jti: str, used_at: str) -> int | None:
    """Mark a refresh token used; return its profile id, or None if unknown, used or revoked."""
    with db.atomic():
        cursor = db.execute(
            "UPDATE refresh_tokens SET used_at = ? WHERE jti = ? AND used_at IS NULL AND NOT revoked",
            [used_at, jti],
        )
        if cursor.rowcount != 1:
            return None
        return db.execute("SELECT profile_id FROM refresh_tokens WHERE jti = ?", [jti]).fetchone()[0]


def revoke_refresh(db: sqlite_utils.Database, jti: str) -> None:
    db.execute("UPDATE refresh_tokens SET revoked = 1 WHERE jti = ?", [jti])


def forget_expired(db: sqlite_utils.Database, now: str) -> int:
    return db.execute("DELETE FROM refresh_tokens WHERE expires_at < ?", [now]).rowcount
