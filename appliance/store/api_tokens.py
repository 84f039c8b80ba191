"""SQL of API tokens (the secret itself is never stored, only its hash)."""

from __future__ import annotations

import json

import sqlite_utils

FIELDS = "id, name, prefix, scopes, created_by, expires_at, last_used_at, revoked, created_at"


def _row(row: dict) -> dict:
    return dict(row, scopes=json.loads(row["scopes"]), revoked=bool(row["revoked"]))


def insert_token(db: sqlite_utils.Database, values: dict) -> int:
    return db["api_tokens"].insert(dict(values, scopes=json.dumps(values["scopes"]))).last_pk


def _like(text: str) -> str:
    """`text` as a LIKE pattern that matches it literally (% and _ are common in names)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def list_tokens(
    db: sqlite_utils.Database, org_id: int, limit: int, offset: int, name: str = "", prefix: str = ""
) -> tuple[int, list[dict]]:
    """The organisation's tokens, newest first; with `name` those whose name contains it
    or whose prefix starts with `prefix` (either matching is enough)."""
    where, params = "org_id = ?", [org_id]
    if name or prefix:
        where += " AND (name LIKE ? ESCAPE '\\' OR prefix LIKE ? ESCAPE '\\')"
        params += [f"%{_like(name)}%" if name else "", f"{_like(prefix)}%" if prefix else ""]
    count = db.execute(f"SELECT count(*) FROM api_tokens WHERE {where}", params).fetchone()[0]
    rows = db.query(
        f"SELECT {FIELDS} FROM api_tokens WHERE {where} ORDER BY id DESC LIMIT ? OFFSET ?", [*params, limit, offset]
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
