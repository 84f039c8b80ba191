"""Audit rows that may linger (core/audit.py LINGER): a download's row, answered before
it is written, waits a moment for others to go with it into one transaction."""

from __future__ import annotations

import pytest_twisted
from twisted.internet import defer, task

from appliance.core.audit import LINGER, LINGER_ROWS, AuditLog
from appliance.models import LogEntry
from appliance.store import queries

from .conftest import make_account


def row(account, path: str, action: str = "download") -> LogEntry:
    return LogEntry(
        org_id=account.organisation.id,
        profile_id=account.profile.id,
        username=account.profile.username,
        protocol="ftp",
        action=action,
        path=path,
        bytes=1,
        message=f"{action} {path}",
    )


class Counted:
    """The store, counting the transactions of audit rows (queries.insert_logs)."""

    def __init__(self, store):
        self._store = store
        self.transactions: list[int] = []  # rows in each

    async def run(self, query, *args):
        if query is queries.insert_logs:
            self.transactions.append(len(args[0]))
        return await self._store.run(query, *args)


async def paths(core) -> list[str]:
    rows = await core.store.run(queries.recent_logs, None, 1000)
    return [r["path"] for r in sorted(rows, key=lambda r: r["id"]) if r["path"].startswith("/linger/")]


async def settle(ds) -> None:
    """Each row's wait, bounded: a row that never goes fails the test instead of hanging it."""
    from twisted.internet import reactor

    for d in ds:
        await d.addTimeout(10, reactor)


async def lingering(core):
    """(an account, the clock, the counted store, an AuditLog on them) for a test."""
    clock, store = task.Clock(), Counted(core.store)
    return await make_account(core), clock, store, AuditLog(store, None, clock)


def recorded(audit, account, path, linger=True):
    return audit.record(row(account, path), linger=linger)


@pytest_twisted.ensureDeferred
async def test_lingering_rows_wait_for_the_clock_then_go_in_one_transaction(core):
    account, clock, store, audit = await lingering(core)
    ds = [defer.ensureDeferred(recorded(audit, account, f"/linger/{i}")) for i in range(3)]
    assert store.transactions == [] and not any(d.called for d in ds)
    clock.advance(LINGER)
    await settle(ds)
    assert store.transactions == [3]
    assert await paths(core) == ["/linger/0", "/linger/1", "/linger/2"]


@pytest_twisted.ensureDeferred
async def test_a_row_somebody_waits_for_takes_the_lingering_ones_with_it_in_order(core):
    account, clock, store, audit = await lingering(core)
    ds = [defer.ensureDeferred(recorded(audit, account, f"/linger/{i}")) for i in range(2)]
    ds.append(defer.ensureDeferred(audit.record(row(account, "/linger/delete", "delete"))))
    await settle(ds)  # the clock never moved
    assert store.transactions == [3]
    assert await paths(core) == ["/linger/0", "/linger/1", "/linger/delete"]


@pytest_twisted.ensureDeferred
async def test_write_now_and_flush_write_lingering_rows_without_the_clock(core):
    account, clock, store, audit = await lingering(core)
    first = defer.ensureDeferred(recorded(audit, account, "/linger/a"))
    audit.write_now()
    await settle([first])
    second = defer.ensureDeferred(recorded(audit, account, "/linger/b"))
    assert not second.called
    await audit.flush()
    assert second.called and store.transactions == [1, 1]
    assert await paths(core) == ["/linger/a", "/linger/b"]
    assert clock.getDelayedCalls() == []  # nothing left to fire on an idle log
    await audit.flush()  # nothing waits: returns at once


@pytest_twisted.ensureDeferred
async def test_no_more_than_linger_rows_wait(core):
    account, clock, store, audit = await lingering(core)
    ds = [defer.ensureDeferred(recorded(audit, account, f"/linger/{i:03d}")) for i in range(LINGER_ROWS)]
    await settle(ds)
    assert store.transactions == [LINGER_ROWS]
    assert len(await paths(core)) == LINGER_ROWS
