"""The dashboard's counts (migration 5): daily summaries kept by triggers on logs
answer exactly what counting the rows answers, through inserts, retention
deletes, profile and organisation deletion, and the backfill of an existing
database."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from appliance.models import LogEntry, to_iso
from appliance.store import dashboard, db, jobs, queries

NOW = datetime(2026, 11, 22, 15, 30, tzinfo=UTC)
SINCE_30D = to_iso(NOW - timedelta(days=30))
SINCE_12M = "2025-12-01T00:00:00.000000Z"
EVENTS = [("sftp", "upload"), ("ftp", "download"), ("web", "upload"), ("mail", "upload"), ("sftp", "login"),
          ("web", "delete"), ("system", "organisation_created"), ("ftp", "login_failed")]  # fmt: skip


def by_counting(conn, org_id: int) -> dict:
    """The overview the slow way: counting the log rows themselves."""
    one = lambda sql, *args: conn.execute(sql, args).fetchone()[0]  # noqa: E731
    transfers = "action IN ('upload', 'download')"
    return {
        "log_count": one("SELECT count(*) FROM logs WHERE org_id = ?", org_id),
        "file_transfers": one(
            f"SELECT count(*) FROM logs WHERE org_id = ? AND {transfers} AND created_at >= ?", org_id, SINCE_30D
        ),
        "daily": sorted(
            conn.execute(
                f"SELECT protocol, substr(created_at, 1, 10), count(*) FROM logs WHERE org_id = ? AND {transfers} "
                "AND created_at >= ? GROUP BY 1, 2",
                [org_id, SINCE_12M],
            ).fetchall()
        ),
        "top_users": [
            {"id": r[0], "username": r[1], "last_login": r[2], "count": r[3]}
            for r in conn.execute(
                f"SELECT p.id, p.username, p.last_login, count(*) AS n FROM logs l JOIN profiles p "
                f"ON p.id = l.profile_id WHERE l.org_id = ? AND {transfers} AND l.created_at >= ? "
                "GROUP BY p.id ORDER BY n DESC, p.username LIMIT 5",
                [org_id, SINCE_30D],
            )
        ],
    }


def from_summaries(database, org_id: int) -> dict:
    overview = dashboard.overview(database, org_id, SINCE_30D, SINCE_12M)
    return {
        "log_count": overview["log_count"],
        "file_transfers": overview["file_transfers"],
        "daily": sorted(overview["daily"]),
        "top_users": overview["top_users"],
    }


def organisation(database, name: str) -> tuple[int, list[int]]:
    org_id = queries.insert_organisation(database, {"name": name, "subdomain": name, "created_at": to_iso(NOW)})
    profiles = [
        database["profiles"].insert({"org_id": org_id, "username": f"{name}-{n}", "created_at": to_iso(NOW)}).last_pk
        for n in range(7)
    ]
    return org_id, profiles


def fill(database, org_id: int, profiles: list[int], count: int, rng: random.Random) -> None:
    for _ in range(count):
        protocol, action = rng.choice(EVENTS)
        # 14 months back to a day ahead; many rows on the day the 30-day window starts
        moment = NOW - timedelta(days=30, hours=rng.uniform(-20, 20)) if rng.random() < 0.2 else (
            NOW - timedelta(days=rng.uniform(-1, 420)))  # fmt: skip
        queries.insert_log(
            database,
            LogEntry(
                org_id=org_id,
                protocol=protocol,
                action=action,
                message="m",
                created_at=to_iso(moment),
                profile_id=rng.choice([*profiles, None]),
            ),  # fmt: skip
        )


@pytest.fixture
def database(tmp_path):
    database = db.connect(tmp_path / "a.db")
    yield database
    database.conn.close()


def test_the_summaries_answer_what_counting_answers(database):
    rng = random.Random(6)
    first, first_profiles = organisation(database, "first")
    second, second_profiles = organisation(database, "second")
    fill(database, first, first_profiles, 3000, rng)
    fill(database, second, second_profiles, 500, rng)
    queries.insert_log(database, LogEntry(org_id=None, protocol="system", action="start", message="no organisation"))
    for org_id in (first, second):
        assert from_summaries(database, org_id) == by_counting(database.conn, org_id)
    assert from_summaries(database, first)["log_count"] == 3000
    assert len(from_summaries(database, first)["top_users"]) == 5


def test_deletes_keep_them_exact(database):
    rng = random.Random(7)
    org_id, profiles = organisation(database, "shrinking")
    fill(database, org_id, profiles, 2000, rng)
    # retention: everything older than 200 days goes, in batches
    database.execute("UPDATE organisations SET log_retention_days = 200 WHERE id = ?", [org_id])
    assert jobs.apply_retention(database, NOW.timestamp(), batch=97) > 0
    assert from_summaries(database, org_id) == by_counting(database.conn, org_id)
    for table in ("log_daily", "transfer_daily"):  # emptied days leave no rows behind
        assert database.execute(f"SELECT count(*) FROM {table} WHERE n <= 0").fetchone()[0] == 0
    # a deleted profile's rows stay (profile_id NULL) and leave the top users
    database.execute("DELETE FROM profiles WHERE id = ?", [profiles[0]])
    assert from_summaries(database, org_id) == by_counting(database.conn, org_id)
    assert (
        database.execute("SELECT count(*) FROM transfer_daily WHERE profile_id = ?", [profiles[0]]).fetchone()[0] == 0
    )
    database.execute("DELETE FROM organisations WHERE id = ?", [org_id])
    for table in ("log_daily", "transfer_daily"):
        assert database.execute(f"SELECT count(*) FROM {table} WHERE org_id = ?", [org_id]).fetchone()[0] == 0


def test_the_migration_counts_the_rows_already_there(tmp_path, monkeypatch):
    monkeypatch.setattr(db, "SCHEMA_VERSION", 4)
    old = db.connect(tmp_path / "old.db")
    assert "log_daily" not in old.table_names()
    rng = random.Random(8)
    org_id, profiles = organisation(old, "older")
    fill(old, org_id, profiles, 1500, rng)
    old.conn.close()
    monkeypatch.undo()
    database = db.connect(tmp_path / "old.db")
    assert database.execute("PRAGMA user_version").fetchone()[0] >= 5
    assert from_summaries(database, org_id) == by_counting(database.conn, org_id)
    fill(database, org_id, profiles, 100, rng)  # and the triggers carry on from there
    assert from_summaries(database, org_id) == by_counting(database.conn, org_id)
    database.conn.close()
