"""The database: migrations, refusing a newer schema, file mode."""

from __future__ import annotations

import sqlite3
import stat

import pytest

from appliance.errors import ConfigError
from appliance.store import db
from appliance.store.migrations import MIGRATIONS


def test_migrations_create_every_table(tmp_path):
    database = db.connect(tmp_path / "a.db")
    tables = set(database.table_names())
    assert {
        "organisations",
        "sources",
        "profiles",
        "api_tokens",
        "mailboxes",
        "mailbox_runs",
        "shares",
        "logs",
    } <= tables
    assert database.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    assert database.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert database.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_reopening_is_idempotent(tmp_path):
    db.connect(tmp_path / "a.db").conn.close()
    database = db.connect(tmp_path / "a.db")
    assert database.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)


def test_the_database_is_private(tmp_path):
    db.connect(tmp_path / "a.db").conn.close()
    assert stat.S_IMODE((tmp_path / "a.db").stat().st_mode) == 0o600


def test_a_newer_database_is_refused(tmp_path):
    conn = sqlite3.connect(tmp_path / "new.db")
    conn.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 5}")
    conn.close()
    with pytest.raises(ConfigError, match="newer release"):
        db.connect(tmp_path / "new.db")


def test_a_failed_migration_leaves_the_previous_version(tmp_path, monkeypatch):
    broken = MIGRATIONS + ["CREATE TABLE half (x); THIS IS NOT SQL;"]
    monkeypatch.setattr(db, "MIGRATIONS", broken)
    monkeypatch.setattr(db, "SCHEMA_VERSION", len(broken))
    with pytest.raises(sqlite3.OperationalError):
        db.connect(tmp_path / "a.db")
    conn = sqlite3.connect(tmp_path / "a.db")
    assert conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    assert conn.execute("SELECT count(*) FROM sqlite_master WHERE name='half'").fetchone()[0] == 0


def test_an_upgrade_backs_the_database_up_first(tmp_path, monkeypatch):
    monkeypatch.setattr(db, "SCHEMA_VERSION", len(MIGRATIONS) - 1)
    old = db.connect(tmp_path / "a.db")
    old.execute("INSERT INTO organisations (name, subdomain, status, created_at) VALUES ('Old', 'old', 'active', 'x')")
    old.conn.close()
    monkeypatch.undo()
    assert not list(tmp_path.glob("*.bak"))  # a new database has nothing to back up

    database = db.connect(tmp_path / "a.db")
    assert database.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    backup = tmp_path / f"a.db.v{len(MIGRATIONS) - 1}.bak"
    assert stat.S_IMODE(backup.stat().st_mode) == 0o600
    saved = sqlite3.connect(backup)
    assert saved.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS) - 1
    assert saved.execute("SELECT name FROM organisations").fetchall() == [("Old",)]
    assert saved.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    database.conn.close()
    db.connect(tmp_path / "a.db").conn.close()  # reopening at the current version copies nothing more
    assert [p.name for p in tmp_path.glob("*.bak")] == [backup.name]
