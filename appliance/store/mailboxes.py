"""SQL of mailboxes, their runs and the messages already filed."""

from __future__ import annotations

import sqlite_utils

from ..models import Mailbox

_FIELDS = tuple(Mailbox.__dataclass_fields__)


def _mailbox(row: dict) -> Mailbox:
    values = {name: row[name] for name in _FIELDS}
    values["verify_tls"] = bool(values["verify_tls"])
    values["enabled"] = bool(values["enabled"])
    return Mailbox(**values)


def get_mailbox(db: sqlite_utils.Database, org_id: int, mailbox_id: int) -> Mailbox | None:
    rows = list(db.query("SELECT * FROM mailboxes WHERE id = ? AND org_id = ?", [mailbox_id, org_id]))
    return _mailbox(rows[0]) if rows else None


def enabled_mailboxes(db: sqlite_utils.Database) -> list[Mailbox]:
    """Enabled mailboxes of organisations that may use the appliance now."""
    return [
        _mailbox(row)
        for row in db.query(
            "SELECT m.* FROM mailboxes m JOIN organisations o ON o.id = m.org_id "
            "WHERE m.enabled AND o.status IN ('trial', 'active') ORDER BY m.id"
        )
    ]


def insert_mailbox(db: sqlite_utils.Database, values: dict) -> int:
    return db["mailboxes"].insert(values).last_pk


def set_uid_state(db: sqlite_utils.Database, mailbox_id: int, uid_validity: int, last_uid: int) -> None:
    db.execute("UPDATE mailboxes SET uid_validity = ?, last_uid = ? WHERE id = ?", [uid_validity, last_uid, mailbox_id])


def start_run(db: sqlite_utils.Database, org_id: int, mailbox_id: int, started_at: str) -> int:
    return (
        db["mailbox_runs"]
        .insert({"org_id": org_id, "mailbox_id": mailbox_id, "started_at": started_at, "status": "running"})
        .last_pk
    )


def finish_run(db: sqlite_utils.Database, run_id: int, values: dict) -> None:
    """Record how a run ended (nothing when its mailbox was deleted meanwhile)."""
    sets = ", ".join(f"{name} = ?" for name in values)
    db.execute(f"UPDATE mailbox_runs SET {sets} WHERE id = ?", [*values.values(), run_id])


def collecting_state(db: sqlite_utils.Database, mailbox_id: int) -> str | None:
    """The status of the mailbox's organisation; None when the mailbox is gone."""
    rows = list(
        db.query(
            "SELECT o.status FROM mailboxes m JOIN organisations o ON o.id = m.org_id WHERE m.id = ?", [mailbox_id]
        )
    )
    return rows[0]["status"] if rows else None


def interrupt_runs(db: sqlite_utils.Database, finished_at: str) -> int:
    """Runs left 'running' by a stop or crash are failed, saying so."""
    cursor = db.execute(
        "UPDATE mailbox_runs SET status = 'failed', finished_at = ?, "
        "error = 'Interrupted: the appliance stopped during this run.' WHERE status = 'running'",
        [finished_at],
    )
    return cursor.rowcount


def runs(db: sqlite_utils.Database, org_id: int, mailbox_id: int, limit: int = 50, offset: int = 0) -> list[dict]:
    return list(
        db.query(
            "SELECT id, started_at, finished_at, status, messages, files, bytes, error FROM mailbox_runs "
            "WHERE org_id = ? AND mailbox_id = ? ORDER BY id DESC LIMIT ? OFFSET ?",
            [org_id, mailbox_id, limit, offset],
        )
    )


def last_run(db: sqlite_utils.Database, org_id: int, mailbox_id: int) -> dict | None:
    found = runs(db, org_id, mailbox_id, limit=1)
    return found[0] if found else None


def filed_keys(db: sqlite_utils.Database, mailbox_id: int, keys: list[str]) -> set[str]:
    """Which of `keys` (UID or Message-ID keys) were filed already."""
    if not keys:
        return set()
    marks = ",".join("?" * len(keys))
    return {
        row["message_key"]
        for row in db.query(
            f"SELECT message_key FROM mailbox_messages WHERE mailbox_id = ? AND message_key IN ({marks})",
            [mailbox_id, *keys],
        )
    }


def keys_like(db: sqlite_utils.Database, mailbox_id: int, prefix: str) -> set[str]:
    """The recorded keys of a mailbox that start with `prefix`."""
    return {
        row["message_key"]
        for row in db.query(
            "SELECT message_key FROM mailbox_messages WHERE mailbox_id = ? AND substr(message_key, 1, ?) = ?",
            [mailbox_id, len(prefix), prefix],
        )
    }


def mark_filed(db: sqlite_utils.Database, mailbox_id: int, keys: list[str], filed_at: str) -> None:
    """Record keys (a mailbox deleted meanwhile records nothing)."""
    with db.atomic():
        for key in keys:
            db.execute(
                "INSERT OR IGNORE INTO mailbox_messages (mailbox_id, message_key, filed_at) "
                "SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM mailboxes WHERE id = ?)",
                [mailbox_id, key, filed_at, mailbox_id],
            )


def list_mailboxes(db: sqlite_utils.Database, org_id: int, search: str, limit: int, offset: int) -> tuple[int, list]:
    pattern = f"%{search}%"
    where = "org_id = ? AND (name LIKE ? OR host LIKE ? OR username LIKE ?)"
    params = [org_id, pattern, pattern, pattern]
    count = db.execute(f"SELECT count(*) FROM mailboxes WHERE {where}", params).fetchone()[0]
    rows = db.query(
        f"SELECT * FROM mailboxes WHERE {where} ORDER BY name, id LIMIT ? OFFSET ?", [*params, limit, offset]
    )
    return count, [_mailbox(row) for row in rows]


def update_mailbox(db: sqlite_utils.Database, org_id: int, mailbox_id: int, values: dict) -> None:
    sets = ", ".join(f"{name} = ?" for name in values)
    db.execute(f"UPDATE mailboxes SET {sets} WHERE id = ? AND org_id = ?", [*values.values(), mailbox_id, org_id])


def delete_mailbox(db: sqlite_utils.Database, org_id: int, mailbox_id: int) -> bool:
    return db.execute("DELETE FROM mailboxes WHERE id = ? AND org_id = ?", [mailbox_id, org_id]).rowcount == 1


def count_runs(db: sqlite_utils.Database, org_id: int, mailbox_id: int) -> int:
    return db.execute(
        "SELECT count(*) FROM mailbox_runs WHERE org_id = ? AND mailbox_id = ?", [org_id, mailbox_id]
    ).fetchone()[0]
