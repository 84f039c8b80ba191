"""SQL of the dashboard: counters, monthly transfers, latest activity, top users."""

from __future__ import annotations

import sqlite_utils

TRANSFERS = "('upload', 'download')"


def overview(db: sqlite_utils.Database, org_id: int, since_30d: str, since_12m: str) -> dict:
    one = lambda sql, *args: db.execute(sql, args).fetchone()[0]  # noqa: E731
    result = {
        "users": one("SELECT count(*) FROM profiles WHERE org_id = ?", org_id),
        "active_users": one("SELECT count(*) FROM profiles WHERE org_id = ? AND last_login >= ?", org_id, since_30d),
        "log_count": one("SELECT count(*) FROM logs WHERE org_id = ?", org_id),
        "file_transfers": sum(
            one(
                "SELECT count(*) FROM logs WHERE org_id = ? AND action = ? AND created_at >= ?",
                org_id,
                action,
                since_30d,
            )
            for action in ("upload", "download")
        ),
    }
    result["monthly"] = [
        (row[0], row[1], row[2])
        for row in db.execute(
            f"SELECT protocol, substr(created_at, 1, 7), count(*) FROM logs WHERE org_id = ? "
            f"AND action IN {TRANSFERS} AND created_at >= ? GROUP BY 1, 2",
            [org_id, since_12m],
        )
    ]
    result["logs"] = [
        {"id": r[0], "username": r[1], "created_at": r[2], "message": r[3]}
        for r in db.execute(
            "SELECT id, username, created_at, message FROM logs WHERE org_id = ? ORDER BY id DESC LIMIT 10", [org_id]
        )
    ]
    result["top_users"] = [
        {"id": r[0], "username": r[1], "last_login": r[2], "count": r[3]}
        for r in db.execute(
            f"SELECT p.id, p.username, p.last_login, count(*) AS n FROM logs l JOIN profiles p ON p.id = l.profile_id "
            f"WHERE l.org_id = ? AND l.action IN {TRANSFERS} AND l.created_at >= ? "
            f"GROUP BY p.id ORDER BY n DESC, p.username LIMIT 5",
            [org_id, since_30d],
        )
    ]
    return result
