"""Sign-in: every refusal, the audit rows, and the slowing of repeated failures."""

from __future__ import annotations

from datetime import timedelta

import pytest
import pytest_twisted
from twisted.internet import task
from twisted.internet.defer import Deferred

from appliance.core.auth import address_allowed, key_blob
from appliance.core.throttle import BAN_BASE, BAN_THRESHOLD, FREE_FAILURES, MAX_DELAY, LoginThrottle
from appliance.errors import AuthenticationFailed
from appliance.store import queries

from ..helpers import now_iso
from .conftest import make_account

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHb2J7mY1c3x6T7p6xQb2g0dWmzq0cN0Lr9mJm3bq9r8 alice@laptop"


async def login(core, username="alice", password="user-password-1", protocol="sftp", address="127.0.0.1"):
    return await core.auth.login(username, protocol=protocol, address=address, password=password)


@pytest_twisted.ensureDeferred
async def test_success_records_the_login(core):
    await make_account(core)
    account = await login(core)
    assert account.profile.username == "alice"
    assert account.organisation.name == "Acme"
    assert account.source.type == "local"
    profile = await core.store.run(queries.profile_by_username, "alice")
    assert profile.last_login is not None
    rows = await core.store.run(queries.recent_logs, None)
    assert rows[0]["action"] == "login" and "alice signed in over SFTP" in rows[0]["message"]


@pytest_twisted.ensureDeferred
async def test_usernames_are_case_insensitive(core):
    await make_account(core)
    assert (await login(core, "ALICE")).profile.username == "alice"


@pytest_twisted.ensureDeferred
async def test_wrong_password_and_unknown_user_answer_the_same_and_are_logged(core):
    await make_account(core)
    with pytest.raises(AuthenticationFailed) as wrong:
        await login(core, password="nope-nope")
    with pytest.raises(AuthenticationFailed) as unknown:
        await login(core, username="mallory")
    assert wrong.value.message == unknown.value.message == "Invalid username or password."
    rows = [r for r in await core.store.run(queries.recent_logs, None) if r["action"] == "login_failed"]
    assert {r["username"] for r in rows} == {"alice", "mallory"}
    assert all(r["remote_address"] == "127.0.0.1" for r in rows)


@pytest.mark.parametrize(
    "org_changes,profile_changes,protocol,message",
    [
        ({"status": "payment_missing"}, {}, "sftp", "Organisation payment missing"),
        ({"status": "deleted"}, {}, "sftp", "Organisation is deleted"),
        ({"status": "trial", "trial_ends_at": now_iso(-timedelta(days=1))}, {}, "ftp", "Organisation payment missing"),
        ({}, {"active": False}, "sftp", "disabled"),
        ({}, {"expires_at": now_iso(-timedelta(minutes=1))}, "sftp", "expired"),
        ({}, {"protocols": ["sftp"]}, "ftp", "FTP access is not enabled"),
        ({}, {"ip_allow": ["10.0.0.0/8"]}, "sftp", "not allowed"),
    ],
)
@pytest_twisted.ensureDeferred
async def test_refusals_say_why(core, org_changes, profile_changes, protocol, message):
    account = await make_account(core, **profile_changes)
    if org_changes:
        await core.store.run(queries.update_organisation, account.organisation.id, org_changes)
    with pytest.raises(AuthenticationFailed, match=message):
        await login(core, protocol=protocol)
    rows = await core.store.run(queries.recent_logs, None)
    assert rows[0]["action"] == "login_failed" and message in rows[0]["message"]


@pytest_twisted.ensureDeferred
async def test_a_trial_still_running_and_a_future_expiry_are_fine(core):
    account = await make_account(core, expires_at=now_iso(timedelta(days=1)), ip_allow=["127.0.0.0/8"])
    await core.store.run(
        queries.update_organisation,
        account.organisation.id,
        {"status": "trial", "trial_ends_at": now_iso(timedelta(days=3))},
    )
    assert (await login(core)).profile.username == "alice"


@pytest_twisted.ensureDeferred
async def test_public_key_login(core):
    await make_account(core, ssh_keys=[KEY])
    blob = key_blob(KEY)
    assert await core.auth.accepts_key("alice", blob)
    assert not await core.auth.accepts_key("alice", blob[:-1] + b"x")
    account = await core.auth.login("alice", protocol="sftp", address="::1", public_key=blob)
    assert account.profile.username == "alice"
    with pytest.raises(AuthenticationFailed):
        await core.auth.login("alice", protocol="sftp", address="::1", public_key=b"other")


def test_address_allow_list():
    assert address_allowed("192.168.1.5", ())
    assert address_allowed("192.168.1.5", ("192.168.1.0/24",))
    assert not address_allowed("192.168.2.5", ("192.168.1.0/24",))
    assert address_allowed("::ffff:192.168.1.5", ("192.168.1.0/24",))
    assert address_allowed("2001:db8::1", ("2001:db8::/32", "10.0.0.0/8"))
    assert not address_allowed("not an address", ("0.0.0.0/0",))


def test_throttle_delays_grow_and_fade():
    clock = task.Clock()
    throttle = LoginThrottle(clock)
    delays = []
    for _ in range(FREE_FAILURES + 6):
        delays.append(throttle.delay("alice", "10.0.0.1"))
        throttle.record_failure("alice", "10.0.0.1")
    assert delays[:FREE_FAILURES] == [0.0] * FREE_FAILURES
    assert delays[FREE_FAILURES:] == sorted(delays[FREE_FAILURES:]) and delays[-1] == MAX_DELAY
    # another address guessing the same user is slowed too; another user from the same address too
    assert throttle.delay("alice", "10.9.9.9") > 0
    assert throttle.delay("bob", "10.0.0.1") > 0
    clock.advance(3600)  # an hour later the score has faded
    assert throttle.delay("alice", "10.0.0.1") == 0.0


def test_success_clears_the_username_score_not_the_address():
    clock = task.Clock()
    throttle = LoginThrottle(clock)
    for _ in range(FREE_FAILURES + 2):
        throttle.record_failure("alice", "10.0.0.1")
    throttle.record_success("alice", "10.0.0.2")
    assert throttle.delay("alice", "10.0.0.2") == 0.0
    assert throttle.delay("mallory", "10.0.0.1") > 0


def test_pause_waits_on_the_injected_clock():
    clock = task.Clock()
    throttle = LoginThrottle(clock)
    done = []
    Deferred.fromCoroutine(throttle.pause(2.0)).addCallback(done.append)
    clock.advance(1.9)
    assert not done
    clock.advance(0.2)
    assert done == [None]


def test_an_address_that_keeps_failing_is_banned_longer_each_time():
    clock = task.Clock()
    throttle = LoginThrottle(clock)
    bans = [throttle.record_failure(f"user{i}", "10.0.0.1") for i in range(int(BAN_THRESHOLD))]
    assert bans[:-1] == [None] * (int(BAN_THRESHOLD) - 1)
    first = bans[-1]
    assert first.address == "10.0.0.1" and first.until == BAN_BASE and first.offences == 1
    assert "user0" in first.usernames
    assert throttle.banned("10.0.0.1") == first
    assert throttle.banned("10.0.0.2") is None
    clock.advance(BAN_BASE + 1)
    assert throttle.banned("10.0.0.1") is None
    for _ in range(int(BAN_THRESHOLD)):
        second = throttle.record_failure("alice", "10.0.0.1")
    assert second.offences == 2 and second.until - clock.seconds() == BAN_BASE * 4
    assert throttle.unban("10.0.0.1") and throttle.banned("10.0.0.1") is None


@pytest_twisted.ensureDeferred
async def test_a_banned_address_is_refused_before_any_password_check_and_logged(core):
    await make_account(core)
    for _ in range(int(BAN_THRESHOLD)):
        core.auth._throttle.record_failure("alice", "10.1.1.1")
    with pytest.raises(AuthenticationFailed, match="Too many failed sign-ins from 10.1.1.1: try again in 5 minutes"):
        await login(core, address="10.1.1.1")  # even the right password
    assert (await login(core, address="10.1.1.2")).profile.username == "alice"  # others are unaffected
    assert [b.address for b in core.auth.bans()] == ["10.1.1.1"]
    assert await core.auth.unban("10.1.1.1", by="admin")
    assert (await login(core, address="10.1.1.1")).profile.username == "alice"
    rows = await core.store.run(queries.recent_logs, None)
    assert rows[1]["action"] == "unban" and "admin lifted the ban on 10.1.1.1" in rows[1]["message"]


@pytest_twisted.ensureDeferred
async def test_failures_through_login_cause_an_audited_ban(core):
    await make_account(core)
    core.auth._throttle.pause = _no_pause  # the growing delays are tested above, with a clock
    for _ in range(int(BAN_THRESHOLD)):
        with pytest.raises(AuthenticationFailed, match="Invalid username or password"):
            await login(core, password="guess-guess", address="10.2.2.2")
    with pytest.raises(AuthenticationFailed, match="Too many failed sign-ins"):
        await login(core, address="10.2.2.2")
    bans = [r for r in await core.store.run(queries.recent_logs, None) if r["action"] == "ban"]
    assert len(bans) == 1 and "10.2.2.2 banned for 5 minutes" in bans[0]["message"]
    assert "alice" in bans[0]["message"] and bans[0]["org_id"] is not None


async def _no_pause(seconds):
    return None
