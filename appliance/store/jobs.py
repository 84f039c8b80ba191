"""SQL of the periodic jobs: trial expiry and log retention."""

from __future__ import annotations

import sqlite_utils


def expire_trials(db: sqlite_utils.Database, now: str) -> list[tuple[int, str]]:
    """Turn ended trials into payment_missing; return (id, name) of each one changed."""
    with db.atomic():
        ended = [
            (row["id"], row["name"])
            for row in db.query(
                "SELECT id, name FROM organisations WHERE status = 'trial' AND trial_ends_at IS NOT NULL "
                "AND trial_ends_at <= ?",
                [now],
            )
        ]
        for org_id, _ in ended:
            db.execute("UPDATE organisations SET status = 'payment_missing' WHERE id = ?", [org_id])
    return ended


def apply_retention(db: sqlite_utils.Database, now_epoch: float, batch: int = 10_000) -> int:
    """Delete log rows older than each organisation's retention; return how many."""
    removed = 0
    for row in list(db.query("SELECT id, log_retention_days FROM organisations WHERE log_retention_days IS NOT NULL")):
        cutoff = db.execute(
            "SELECT strftime('%Y-%m-%dT%H:%M:%fZ', ?, 'unixepoch', ?)",
            [now_epoch, f"-{int(row['log_retention_days'])} days"],
        ).fetchone()[0]
        while True:  # in batches, so the database thread is never held for long
            cursor = db.execute(
                "DELETE FROM logs WHERE id IN (SELECT id FROM logs WHERE org_id = ? AND created_at < ? LIMIT ?)",
                [row["id"], cutoff, batch],
            )
            removed += cursor.rowcount
            if cursor.rowcount < batch:
                break
    return removed
