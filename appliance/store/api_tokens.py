"""SQL of API tokens (the secret itself is never stored, only its hash)."""

from __future__ import annotations

import json

import sqlite_utils

FIELDS = "id, name, prefix, scopes, created_by, expires_at, last_used_at, revoked, created_at"


def _row(row: dict) -> dict:
    return dict(row, scopes=json.loads(row["scopes"]), revoked=bool(row["revoked"]))


def insert_token(db: sqlite_utils.Database, values: dict) -> int:
    return db["api_tokens"].insert(dict(values, scopes=json.dumps(values["scopes"]))).last_pk


def list_tokens(db: sqlite_utils.Database, org_id: int, limit: int, offset: int) -> tuple[int, list[dict]]:
    count = db.execute("SELECT count(*) FROM api_tokens WHERE org_id = ?", [org_id]).fetchone()[0]
    rows = db.query(
        f"SELECT {FIELDS} FROM api_tokens WHERE org_id = ? ORDER BY id DESC LIMIT ? OFFSET ?", [org_id, limit, offset]
    )
    return count, [_row(r) for r in rows]


def get_token(db: sqlite_utils.Database, org_id: int, token_id: int) -> dict | None:
    rows = list(db.query(f"SELECT {FIELDS} FROM api_tokens WHERE id = ? AND org_id = ?", [token_id, org_id]))
    return _row(rows[0]) if rows else None


def token_by_prefix(db: sqlite_utils.Database, prefix: str) -> dict | None:
    rows = list(db.query(f"SELECT {FIELDS}, org_id, secret_hash FROM api_tokens WHERE prefix = ?", [prefix]))
    return _row(rows[0]) if rows else None


def revoke_token(db: sqlite_utils.Database, org_id: int, token_id: int) -> bool:
    return db.execute("UPDATE api_tokens SET revoked = 1 WHERE id = ? AND org_id = ?", [token_id, org_id]).rowcount == 1


def touch_token(db: sqlite_utils.Database, token_id: int, when: str) -> None:
    db.execute("UPDATE api_tokens SET last_used_at = ? WHERE id = ?", [when, token_id])
