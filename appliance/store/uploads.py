"""SQL of resumable (tus) uploads in progress: one row per upload until it completes,
is terminated or expires."""

from __future__ import annotations

import json
from dataclasses import dataclass

import sqlite_utils

FIELDS = (
    'id, org_id, profile_id, source_id, home, path, temp_name, length, "offset", metadata, overwrite, '
    "expires_at, created_at"
)


@dataclass(frozen=True)
class UploadRow:
    id: str
    org_id: int
    profile_id: int
    source_id: int
    home: str  # the profile's home when the upload began (the tree `path` is in)
    path: str  # the target's virtual path inside that home
    temp_name: str  # the partial file's name, in the target's folder; "staged:<id>" on the appliance's disk
    length: int
    offset: int
    metadata: dict
    overwrite: bool
    expires_at: str
    created_at: str


def _row(row: dict) -> UploadRow:
    return UploadRow(
        **dict(row, metadata=json.loads(row["metadata"] or "{}"), overwrite=bool(row["overwrite"])),
    )


def insert_upload(db: sqlite_utils.Database, values: dict) -> None:
    db.execute(
        f"INSERT INTO uploads ({FIELDS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
        [
            values["id"],
            values["org_id"],
            values["profile_id"],
            values["source_id"],
            values["home"],
            values["path"],
            values["temp_name"],
            values["length"],
            values.get("offset", 0),
            json.dumps(values.get("metadata", {})),
            int(bool(values.get("overwrite", False))),
            values["expires_at"],
            values["created_at"],
        ],
    )


def get_upload(db: sqlite_utils.Database, upload_id: str) -> UploadRow | None:
    rows = list(db.query(f"SELECT {FIELDS} FROM uploads WHERE id = ?", [upload_id]))
    return _row(rows[0]) if rows else None


def set_offset(db: sqlite_utils.Database, upload_id: str, offset: int, expires_at: str) -> None:
    db.execute('UPDATE uploads SET "offset" = ?, expires_at = ? WHERE id = ?', [offset, expires_at, upload_id])


def delete_upload(db: sqlite_utils.Database, upload_id: str) -> bool:
    return db.execute("DELETE FROM uploads WHERE id = ?", [upload_id]).rowcount == 1


def expired_uploads(db: sqlite_utils.Database, now: str, limit: int = 500) -> list[UploadRow]:
    return [
        _row(r)
        for r in db.query(
            f"SELECT {FIELDS} FROM uploads WHERE expires_at <= ? ORDER BY expires_at LIMIT ?", [now, limit]
        )
    ]


def temp_names(db: sqlite_utils.Database, source_id: int) -> set[str]:
    """The partial files' names of a source's uploads (the start-up sweep keeps these)."""
    return {r["temp_name"] for r in db.query("SELECT temp_name FROM uploads WHERE source_id = ?", [source_id])}


def reserved_bytes(db: sqlite_utils.Database, profile_id: int) -> int:
    """The full lengths of a profile's uploads in progress (held against its quota)."""
    return db.execute("SELECT coalesce(sum(length), 0) FROM uploads WHERE profile_id = ?", [profile_id]).fetchone()[0]


def temp_names_staged(db: sqlite_utils.Database) -> set[str]:
    """The temp_names of uploads staged on the appliance's disk (to remote sources): the
    start-up sweep of the staging folder keeps these."""
    return {r["temp_name"] for r in db.query("SELECT temp_name FROM uploads WHERE temp_name LIKE 'staged:%'")}
