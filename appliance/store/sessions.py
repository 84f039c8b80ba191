"""SQL of web sessions: refresh tokens, each usable once."""

from __future__ import annotations

import sqlite_utils


def remember_refresh(
    db: sqlite_utils.Database, jti: str, profile_id: int, expires_at: str, session_id: str | None = None
) -> None:
    db["refresh_tokens"].insert(
        {"jti": jti, "profile_id": profile_id, "expires_at": expires_at, "session_id": session_id}
    )


def use_refresh(db: sqlite_utils.Database, jti: str, used_at: str) -> int | None:
    """Mark a refresh token used; return its profile id, or None if unknown, used or revoked
    (or of a session that was ended)."""
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


def end_session(db: sqlite_utils.Database, session_id: str, until: str, now: str) -> None:
    """End a web session: revoke its refresh tokens and remember it until `until` (when
    its last access token expires); forget sessions ended long enough ago."""
    with db.atomic():
        db.execute("UPDATE refresh_tokens SET revoked = 1 WHERE session_id = ?", [session_id])
        db.execute(
            "INSERT INTO ended_sessions (session_id, until) VALUES (?, ?) "
            "ON CONFLICT (session_id) DO UPDATE SET until = max(until, excluded.until)",
            [session_id, until],
        )
        db.execute("DELETE FROM ended_sessions WHERE until < ?", [now])


def ended_sessions(db: sqlite_utils.Database, now: str) -> dict[str, str]:
    """Sessions ended whose access tokens may still be unexpired: session id -> until."""
    rows = db.execute("SELECT session_id, until FROM ended_sessions WHERE until >= ?", [now]).fetchall()
    return {session_id: until for session_id, until in rows}


def forget_expired(db: sqlite_utils.Database, now: str) -> int:
    return db.execute("DELETE FROM refresh_tokens WHERE expires_at < ?", [now]).rowcount
