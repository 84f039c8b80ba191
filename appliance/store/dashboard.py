"""SQL of the dashboard: counters, daily transfers, latest activity, top users.

Counting log rows would take a second at a million rows, so the counts come from
the daily summaries that triggers keep (migration 5): `log_daily` (rows per
organisation and day) and `transfer_daily` (uploads and downloads per organisation,
day, protocol and profile, 0 for none). A window that starts inside a day counts
that first day's rows themselves, so the figures are exactly what counting says.
"""

from __future__ import annotations

from collections import Counter
from datetime import date, timedelta

import sqlite_utils

TRANSFERS = "('upload', 'download')"


def _next_day(day: str) -> str:
    return (date.fromisoformat(day) + timedelta(days=1)).isoformat()


def transfers_since(db: sqlite_utils.Database, org_id: int, since: str) -> Counter:
    """Uploads and downloads at or after `since` (ISO 8601, UTC), counted per
    (protocol, day as YYYY-MM-DD, profile id or 0)."""
    counts: Counter = Counter()
    first_day = since[:10]
    whole_from = first_day
    if since > first_day + "T00:00:00.000000Z":  # the window starts inside a day: count its rows
        whole_from = _next_day(first_day)
        for protocol, day, profile_id, n in db.execute(
            "SELECT protocol, substr(created_at, 1, 10), ifnull(profile_id, 0), count(*) FROM logs "
            f"WHERE org_id = ? AND action IN {TRANSFERS} AND created_at >= ? AND created_at < ? GROUP BY 1, 2, 3",
            [org_id, since, whole_from],
        ):
            counts[(protocol, day, profile_id)] += n
    for protocol, day, profile_id, n in db.execute(
        "SELECT protocol, day, profile_id, sum(n) FROM transfer_daily WHERE org_id = ? AND day >= ? GROUP BY 1, 2, 3",
        [org_id, whole_from],
    ):
        counts[(protocol, day, profile_id)] += n
    return counts


def top_users(db: sqlite_utils.Database, per_profile: Counter, limit: int = 5) -> list[dict]:
    """The profiles with the most transfers (most first, then by name)."""
    ids = [profile_id for profile_id in per_profile if profile_id]
    if not ids:
        return []
    marks = ", ".join("?" * len(ids))
    rows = db.execute(f"SELECT id, username, last_login FROM profiles WHERE id IN ({marks})", ids).fetchall()
    ranked = sorted(rows, key=lambda r: (-per_profile[r[0]], r[1]))[:limit]
    return [{"id": r[0], "username": r[1], "last_login": r[2], "count": per_profile[r[0]]} for r in ranked]


def overview(db: sqlite_utils.Database, org_id: int, since_30d: str, chart_since: str) -> dict:
    """The counters, the latest activity, the top users over 30 days, and `daily`: the
    transfers per (protocol, day) since `chart_since`, which the core puts in the
    chart's bars (days, weeks or months)."""
    one = lambda sql, *args: db.execute(sql, args).fetchone()[0]  # noqa: E731
    recent = transfers_since(db, org_id, since_30d)
    per_profile: Counter = Counter()
    for (_protocol, _day, profile_id), n in recent.items():
        per_profile[profile_id] += n
    daily: Counter = Counter()
    for (protocol, day, _profile_id), n in transfers_since(db, org_id, chart_since).items():
        daily[(protocol, day)] += n
    return {
        "users": one("SELECT count(*) FROM profiles WHERE org_id = ?", org_id),
        "active_users": one("SELECT count(*) FROM profiles WHERE org_id = ? AND last_login >= ?", org_id, since_30d),
        "log_count": one("SELECT ifnull(sum(n), 0) FROM log_daily WHERE org_id = ?", org_id),
        "file_transfers": sum(recent.values()),
        "daily": [(protocol, day, n) for (protocol, day), n in daily.items()],
        "logs": [
            {"id": r[0], "username": r[1], "created_at": r[2], "message": r[3]}
            for r in db.execute(
                "SELECT id, username, created_at, message FROM logs WHERE org_id = ? "
                "ORDER BY created_at DESC, id DESC LIMIT 10",
                [org_id],
            )
        ],
        "top_users": top_users(db, per_profile),
    }
