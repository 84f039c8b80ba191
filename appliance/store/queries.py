"""Every SQL statement of the appliance. Plain synchronous functions taking the
database first; they run on the database thread and return materialised records
(never generators)."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import fields

import sqlite_utils

from ..models import LogEntry, Organisation, Profile, Source

_JSON_PROFILE_FIELDS = ("permissions", "protocols", "ssh_keys", "ip_allow")


def _organisation(row: dict) -> Organisation:
    return Organisation(
        id=row["id"],
        name=row["name"],
        subdomain=row["subdomain"],
        status=row["status"],
        trial_ends_at=row["trial_ends_at"],
        branding=bool(row["branding"]),
        branding_logo=row["branding_logo"],
        branding_colour=row["branding_colour"],
        user_terms=row["user_terms"],
        default_source_id=row["default_source_id"],
        created_at=row["created_at"],
        require_tls=bool(row["require_tls"]),
    )


def _source(row: dict) -> Source:
    return Source(
        id=row["id"],
        org_id=row["org_id"],
        name=row["name"],
        type=row["type"],
        config=json.loads(row["config"]),
        read_only=bool(row["read_only"]),
        status=row["status"],
        last_error=row["last_error"],
    )


def _profile(row: dict) -> Profile:
    values = {name: row[name] for name in Profile.__dataclass_fields__}
    for name in _JSON_PROFILE_FIELDS:
        values[name] = tuple(json.loads(row[name]))
    for name in ("is_admin", "is_superuser", "active"):
        values[name] = bool(row[name])
    if values["require_tls"] is not None:
        values["require_tls"] = bool(values["require_tls"])
    return Profile(**values)


def _one(db: sqlite_utils.Database, sql: str, params) -> dict | None:
    cursor = db.execute(sql, params)
    row = cursor.fetchone()
    if row is None:
        return None
    return dict(zip([c[0] for c in cursor.description], row, strict=True))


# -- organisations ---------------------------------------------------------------


def count_profiles(db: sqlite_utils.Database) -> int:
    return db.execute("SELECT count(*) FROM profiles").fetchone()[0]


def insert_organisation(db: sqlite_utils.Database, values: dict) -> int:
    return db["organisations"].insert(values).last_pk


def get_organisation(db: sqlite_utils.Database, org_id: int) -> Organisation | None:
    row = _one(db, "SELECT * FROM organisations WHERE id = ?", [org_id])
    return _organisation(row) if row else None


def organisation_by_subdomain(db: sqlite_utils.Database, subdomain: str) -> Organisation | None:
    row = _one(db, "SELECT * FROM organisations WHERE subdomain = ?", [subdomain])
    return _organisation(row) if row else None


def update_organisation(db: sqlite_utils.Database, org_id: int, values: dict) -> None:
    db["organisations"].update(org_id, values)


# -- sources ---------------------------------------------------------------------


def insert_source(db: sqlite_utils.Database, values: dict) -> int:
    values = dict(values, config=json.dumps(values.get("config", {})))
    return db["sources"].insert(values).last_pk


def get_source(db: sqlite_utils.Database, org_id: int, source_id: int) -> Source | None:
    row = _one(db, "SELECT * FROM sources WHERE id = ? AND org_id = ?", [source_id, org_id])
    return _source(row) if row else None


def all_sources(db: sqlite_utils.Database) -> list[Source]:
    return [_source(r) for r in db.query("SELECT * FROM sources ORDER BY id")]


# -- profiles --------------------------------------------------------------------


def insert_profile(db: sqlite_utils.Database, values: dict) -> int:
    values = dict(values)
    for name in _JSON_PROFILE_FIELDS:
        values[name] = json.dumps(list(values.get(name, ())))
    return db["profiles"].insert(values).last_pk


def profile_by_username(db: sqlite_utils.Database, username: str) -> Profile | None:
    row = _one(db, "SELECT * FROM profiles WHERE username = ? COLLATE NOCASE", [username])
    return _profile(row) if row else None


def get_profile(db: sqlite_utils.Database, org_id: int, profile_id: int) -> Profile | None:
    row = _one(db, "SELECT * FROM profiles WHERE id = ? AND org_id = ?", [profile_id, org_id])
    return _profile(row) if row else None


def get_profile_by_id(db: sqlite_utils.Database, profile_id: int) -> Profile | None:
    """A profile by id across organisations: only for a token already verified."""
    row = _one(db, "SELECT * FROM profiles WHERE id = ?", [profile_id])
    return _profile(row) if row else None


def profiles_by_email(db: sqlite_utils.Database, email: str) -> list[Profile]:
    return [_profile(r) for r in db.query("SELECT * FROM profiles WHERE email = ? COLLATE NOCASE AND active", [email])]


def password_changed_at(db: sqlite_utils.Database, profile_id: int) -> str | None:
    row = db.execute("SELECT password_changed_at FROM profiles WHERE id = ?", [profile_id]).fetchone()
    return row[0] if row else None


def update_profile(db: sqlite_utils.Database, profile_id: int, values: dict) -> None:
    values = dict(values)
    for name in _JSON_PROFILE_FIELDS:
        if name in values:
            values[name] = json.dumps(list(values[name]))
    db["profiles"].update(profile_id, values)


# -- one transaction for first-run setup ------------------------------------------


def create_organisation_with_admin(
    db: sqlite_utils.Database, organisation: dict, source: dict, admin: dict
) -> tuple[int, int, int]:
    """Insert an organisation, its default source and its first admin atomically."""
    with db.atomic():
        org_id = insert_organisation(db, organisation)
        source_id = insert_source(db, dict(source, org_id=org_id))
        update_organisation(db, org_id, {"default_source_id": source_id})
        profile_id = insert_profile(db, dict(admin, org_id=org_id, source_id=source_id))
    return org_id, source_id, profile_id


# -- audit log -------------------------------------------------------------------


_LOG_FIELDS = tuple(f.name for f in fields(LogEntry))
_INSERT_LOG = f"INSERT INTO logs ({', '.join(_LOG_FIELDS)}) VALUES ({', '.join('?' * len(_LOG_FIELDS))})"


def _log_row(entry: LogEntry) -> tuple:
    return tuple(getattr(entry, name) for name in _LOG_FIELDS)


def insert_log(db: sqlite_utils.Database, entry: LogEntry) -> int:
    return db.conn.execute(_INSERT_LOG, _log_row(entry)).lastrowid


def insert_logs(db: sqlite_utils.Database, entries: list[LogEntry]) -> list[int | Exception]:
    """Insert many log rows in one transaction (one commit for them all: the audit
    log's group commit). Each row's id, or the error that kept that row out (its
    organisation or profile deleted meanwhile): one bad row costs the others nothing."""
    conn = db.conn
    try:
        conn.execute("BEGIN IMMEDIATE")
        ids = [conn.execute(_INSERT_LOG, _log_row(entry)).lastrowid for entry in entries]
        conn.execute("COMMIT")
        return ids
    except sqlite3.IntegrityError:
        conn.execute("ROLLBACK")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    results: list[int | Exception] = []  # a row was refused: each on its own, to find which
    for entry in entries:
        try:
            results.append(insert_log(db, entry))
        except sqlite3.IntegrityError as e:
            results.append(e)
    return results


def recent_logs(db: sqlite_utils.Database, org_id: int | None, limit: int = 100) -> list[dict]:
    if org_id is None:
        return list(db.query("SELECT * FROM logs ORDER BY id DESC LIMIT ?", [limit]))
    return list(db.query("SELECT * FROM logs WHERE org_id = ? ORDER BY id DESC LIMIT ?", [org_id, limit]))
