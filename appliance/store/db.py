"""Opening the SQLite database: WAL, foreign keys, and numbered migrations.

The connection is used from the one database thread only (see threads.py);
`check_same_thread` is off because that thread is owned by a pool, not created
here.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import sqlite_utils

from ..errors import ConfigError
from .migrations import MIGRATIONS

SCHEMA_VERSION = len(MIGRATIONS)


def connect(path: str | Path) -> sqlite_utils.Database:
    """Open (creating if needed) and migrate the database at `path`."""
    try:
        if not Path(path).exists():  # password hashes live here: owner only
            Path(path).touch(mode=0o600)
        elif not os.access(path, os.R_OK | os.W_OK):
            raise ConfigError(_not_writable(path))
        conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None, timeout=30)
        conn.execute("PRAGMA journal_mode=WAL")
    except sqlite3.Error as e:
        raise ConfigError(f"{path}: cannot open the database: {e}") from None
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA busy_timeout=30000")
    db = sqlite_utils.Database(conn)
    migrate(db, path)
    return db


def _not_writable(path: str | Path) -> str:
    return (
        f"{path}: not writable by this user (uid {os.geteuid()}); give it to the user the daemon runs as "
        "(a restore or copy made as root leaves it root's)"
    )


def problems(path: Path) -> list[str]:
    """What would stop the daemon from opening the database at `path` (read only, no
    changes): not a database, damaged (SQLite's quick_check), or newer than this code."""
    try:
        conn = sqlite3.connect(f"{Path(path).absolute().as_uri()}?mode=ro", uri=True, timeout=30)
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            check = conn.execute("PRAGMA quick_check").fetchone()[0]
        finally:
            conn.close()
    except sqlite3.Error as e:
        return [f"{path}: cannot open the database: {e}"]
    found = [] if os.access(path, os.R_OK | os.W_OK) else [_not_writable(path)]
    if check != "ok":
        found.append(f"{path}: the database is damaged ({check}); restore a backup")
    if version > SCHEMA_VERSION:
        found.append(
            f"{path}: the database is at schema version {version} but this appliance knows only up to "
            f"{SCHEMA_VERSION}; install the newer release or restore a backup"
        )
    return found


def migrate(db: sqlite_utils.Database, where: str | Path = "database") -> int:
    """Apply the migrations the database lacks; refuse one newer than the code."""
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise ConfigError(
            f"{where}: the database is at schema version {version} but this appliance "
            f"knows only up to {SCHEMA_VERSION}; install the newer release or restore a backup"
        )
    if 0 < version < SCHEMA_VERSION and Path(where).is_file():
        backup_before_upgrade(db.conn, Path(where), version)
    for number in range(version + 1, SCHEMA_VERSION + 1):
        script = MIGRATIONS[number - 1]
        # executescript commits first; wrap in an explicit transaction so a crash
        # mid-migration leaves the previous version intact.
        try:
            db.conn.executescript(f"BEGIN IMMEDIATE;\n{script}\nPRAGMA user_version = {number};\nCOMMIT;")
        except sqlite3.Error:
            if db.conn.in_transaction:
                db.conn.execute("ROLLBACK")
            raise
    return SCHEMA_VERSION


def backup_before_upgrade(conn: sqlite3.Connection, path: Path, version: int) -> Path:
    """Copy the database as it is (SQLite's online backup) before migrating it, so an
    upgrade that goes wrong can be undone: `<name>.v<version>.bak` beside it, owner only.
    An existing copy of the same version is kept (the first one is the original)."""
    target = path.with_name(f"{path.name}.v{version}.bak")
    if target.exists():
        return target
    partial = target.with_name(target.name + ".partial")
    try:
        partial.unlink(missing_ok=True)
        partial.touch(mode=0o600)
        copy = sqlite3.connect(str(partial))
        try:
            conn.backup(copy)
        finally:
            copy.close()
        partial.replace(target)
    except (OSError, sqlite3.Error) as e:
        partial.unlink(missing_ok=True)
        raise ConfigError(f"{path}: cannot back up the database before upgrading it: {e}") from None
    return target


def copy_online(path: Path, target: Path) -> None:
    """A consistent copy of the database at `path` in `target` (SQLite's online backup:
    safe while the daemon serves it)."""
    source = sqlite3.connect(path, timeout=30)
    destination = sqlite3.connect(target)
    try:
        source.backup(destination)
    finally:
        destination.close()
        source.close()


def integrity(path: Path) -> tuple[str, int | None]:
    """(PRAGMA integrity_check's answer, the schema version) of a database file; a file
    SQLite cannot read at all: (why, None)."""
    conn = sqlite3.connect(path)
    try:
        return conn.execute("PRAGMA integrity_check").fetchone()[0], conn.execute("PRAGMA user_version").fetchone()[0]
    except sqlite3.DatabaseError as e:
        return str(e), None
    finally:
        conn.close()
