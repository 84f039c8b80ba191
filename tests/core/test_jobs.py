"""Trial expiry and log retention, driven by a fake clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest_twisted
from twisted.internet import task

from appliance.core.jobs import TRIAL_CHECK, Jobs
from appliance.models import LogEntry, to_iso
from appliance.store import queries

from .conftest import make_account

START = datetime(2026, 11, 1, tzinfo=UTC)


async def settle(core) -> None:
    """Let the jobs a clock tick started finish their database work."""
    await core.store.run(lambda db: None)
    await core.store.run(lambda db: None)


@pytest_twisted.ensureDeferred
async def test_a_trial_that_ends_turns_to_payment_missing(core):
    account = await make_account(core)
    org_id = account.organisation.id
    await core.store.run(
        queries.update_organisation,
        org_id,
        {"status": "trial", "trial_ends_at": to_iso(START + timedelta(hours=1))},
    )
    clock = task.Clock()
    clock.advance(START.timestamp())
    jobs = Jobs(core.store, core.audit, clock)
    jobs.start()
    try:
        await settle(core)
        assert (await core.store.run(queries.get_organisation, org_id)).status == "trial"
        for _ in range(int(3600 / TRIAL_CHECK) + 1):
            clock.advance(TRIAL_CHECK)
            await settle(core)
        assert (await core.store.run(queries.get_organisation, org_id)).status == "payment_missing"
        rows = await core.store.run(queries.recent_logs, org_id)
        assert rows[0]["action"] == "billing" and "trial of Acme ended" in rows[0]["message"]
        assert await jobs.expire_trials() == 0  # once only
    finally:
        jobs.stop()
    assert not clock.getDelayedCalls()


@pytest_twisted.ensureDeferred
async def test_retention_removes_only_old_rows_of_organisations_that_set_it(core):
    account = await make_account(core)
    org_id = account.organisation.id
    now = START + timedelta(days=100)
    for age_days in (1, 29, 31, 90):
        await core.store.run(
            queries.insert_log,
            LogEntry(
                org_id=org_id,
                protocol="sftp",
                action="upload",
                message=f"{age_days} days old",
                created_at=to_iso(now - timedelta(days=age_days)),
            ),
        )
    clock = task.Clock()
    clock.advance(now.timestamp())
    jobs = Jobs(core.store, core.audit, clock)
    assert await jobs.apply_retention() == 0  # no retention set: keep everything
    await core.store.run(queries.update_organisation, org_id, {"log_retention_days": 30})
    # the two old rows go, and so does the set-up row written today (100 days before `now`)
    assert await jobs.apply_retention() == 3
    left = {r["message"] for r in await core.store.run(queries.recent_logs, org_id)}
    assert {"1 days old", "29 days old"} <= left and not {"31 days old", "90 days old"} & left
