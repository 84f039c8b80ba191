"""SQL of sources' sign-ins with an OAuth2 provider: the pending ones (a `state`
awaiting the admin's return from the provider) and the refresh token a source keeps."""

from __future__ import annotations

import sqlite_utils


def add_sign_in(db: sqlite_utils.Database, row: dict) -> None:
    with db.atomic():
        db.execute("DELETE FROM source_sign_ins WHERE expires_at < ?", [row["created_at"]])  # the abandoned ones
        db["source_sign_ins"].insert(row)


def take_sign_in(db: sqlite_utils.Database, state_hash: str) -> dict | None:
    """The pending sign-in with this state, removed (a state is used once, whatever happens next)."""
    with db.atomic():
        row = db.execute("SELECT * FROM source_sign_ins WHERE state_hash = ?", [state_hash]).fetchone()
        if row is None:
            return None
        db.execute("DELETE FROM source_sign_ins WHERE state_hash = ?", [state_hash])
        columns = ("state_hash", "org_id", "source_id", "profile_id", "code_verifier", "redirect_uri", "expires_at")
        return dict(zip(columns, row[:7], strict=True))


def save_refresh_token(db: sqlite_utils.Database, source_id: int, grant: str, sealed: str) -> bool:
    """Keep a rotated refresh token, if the source still holds the sign-in it came from."""
    cursor = db.execute(
        "UPDATE sources SET config = json_set(config, '$.oauth.refresh_token_encrypted', ?) "
        "WHERE id = ? AND json_extract(config, '$.oauth.grant') = ?",
        [sealed, source_id, grant],
    )
    return cursor.rowcount == 1


def sign_in_refused(db: sqlite_utils.Database, source_id: int, grant: str, message: str, when: str) -> None:
    """The provider refused the source's saved sign-in: the source is in error until an admin signs in again."""
    db.execute(
        "UPDATE sources SET status = 'error', last_error = ?, checked_at = ? "
        "WHERE id = ? AND json_extract(config, '$.oauth.grant') = ?",
        [message, when, source_id, grant],
    )
