"""SQL of the appliance-wide settings the operator keeps in the console: one row a
key ("smtp.host"), its value as JSON."""

from __future__ import annotations

import json

import sqlite_utils


def all_settings(db: sqlite_utils.Database) -> dict[str, object]:
    """Every stored setting, by key."""
    return {row["key"]: json.loads(row["value"]) for row in db.query("SELECT key, value FROM appliance_settings")}


def save_settings(db: sqlite_utils.Database, changed: dict[str, object], removed: list[str], now: str) -> dict:
    """Store `changed` and forget `removed` in one transaction; every stored setting after."""
    with db.atomic():
        for key, value in changed.items():
            db.execute(
                "INSERT INTO appliance_settings (key, value, changed_at) VALUES (?, ?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value, changed_at = excluded.changed_at",
                [key, json.dumps(value), now],
            )
        for key in removed:
            db.execute("DELETE FROM appliance_settings WHERE key = ?", [key])
    return all_settings(db)
