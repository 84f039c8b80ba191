"""SQL of share links.

The `token` column holds the SHA-256 of the link's secret, never the secret. A
folder share's `path` ends with "/", so a share of a folder can never turn into
a share of a file put in its place (and the kind is known without a disk look).
"""

from __future__ import annotations

import sqlite_utils

from ..models import Share

_SELECT = (
    "SELECT s.id, s.org_id, s.profile_id, s.path, s.expires_at, s.password_hash, s.max_downloads, s.downloads,"
    " s.upload_only, s.revoked, s.created_at, p.username AS created_by"
    " FROM shares s JOIN profiles p ON p.id = s.profile_id"
)


def _share(row: dict) -> Share:
    path = row["path"]
    return Share(
        id=row["id"],
        org_id=row["org_id"],
        profile_id=row["profile_id"],
        path=path.rstrip("/") or "/",
        is_folder=path.endswith("/"),
        expires_at=row["expires_at"],
        password_hash=row["password_hash"] or None,
        max_downloads=row["max_downloads"],
        downloads=row["downloads"],
        upload_only=bool(row["upload_only"]),
        revoked=bool(row["revoked"]),
        created_at=row["created_at"],
        created_by=row["created_by"],
    )


def stored_path(path: str, is_folder: bool) -> str:
    """The `path` column's form: folders end with "/" (the home folder is "/")."""
    return path.rstrip("/") + "/" if is_folder else path


def insert_share(db: sqlite_utils.Database, values: dict) -> int:
    return db["shares"].insert(values).last_pk


def get_share(db: sqlite_utils.Database, org_id: int, share_id: int) -> Share | None:
    rows = list(db.query(f"{_SELECT} WHERE s.id = ? AND s.org_id = ?", [share_id, org_id]))
    return _share(rows[0]) if rows else None


def share_by_token(db: sqlite_utils.Database, token_hash: str) -> Share | None:
    rows = list(db.query(f"{_SELECT} WHERE s.token = ?", [token_hash]))
    return _share(rows[0]) if rows else None


def list_shares(
    db: sqlite_utils.Database, org_id: int, profile_id: int | None, limit: int, offset: int
) -> tuple[int, list[Share]]:
    """An organisation's shares (only one profile's when `profile_id` is given), newest first."""
    where, params = "s.org_id = ?", [org_id]
    if profile_id is not None:
        where += " AND s.profile_id = ?"
        params.append(profile_id)
    count = db.execute(f"SELECT count(*) FROM shares s WHERE {where}", params).fetchone()[0]
    rows = db.query(f"{_SELECT} WHERE {where} ORDER BY s.id DESC LIMIT ? OFFSET ?", [*params, limit, offset])
    return count, [_share(r) for r in rows]


def update_share(db: sqlite_utils.Database, org_id: int, share_id: int, values: dict) -> None:
    assignments = ", ".join(f"{name} = ?" for name in values)
    db.execute(f"UPDATE shares SET {assignments} WHERE id = ? AND org_id = ?", [*values.values(), share_id, org_id])


def revoke_share(db: sqlite_utils.Database, org_id: int, share_id: int) -> bool:
    return db.execute("UPDATE shares SET revoked = 1 WHERE id = ? AND org_id = ?", [share_id, org_id]).rowcount == 1


def count_download(db: sqlite_utils.Database, share_id: int) -> bool:
    """Count one download if the limit allows it (atomically: two visitors racing for
    the last download cannot both get it). False: the limit is reached or the link revoked."""
    cursor = db.execute(
        "UPDATE shares SET downloads = downloads + 1 WHERE id = ? AND revoked = 0"
        " AND (max_downloads IS NULL OR downloads < max_downloads)",
        [share_id],
    )
    return cursor.rowcount == 1
