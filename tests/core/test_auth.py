"""Sign-in: every refusal, the audit rows, and the slowing of repeated failures."""

from __future__ import annotations

from datetime import timedelta

import pytest
import pytest_twisted
from twisted.internet import task
from twisted.internet.defer import Deferred

from appliance.core.access import address_allowed
from appliance.core.auth import key_blob
from appliance.core.throttle import BAN_BASE, BAN_THRESHOLD, FREE_FAILURES, MAX_DELAY, LoginThrottle, Target
from appliance.errors import AuthenticationFailed
from appliance.store import queries

from ..helpers import now_iso
from .conftest import make_account

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHb2J7mY1c3x6T7p6xQb2g0dWmzq0cN0Lr9mJm3bq9r8 alice@laptop"


async def login(core, username="alice", password="user-password-1", protocol="sftp", address="127.0.0.1"):
    return (await core.signin.sign_in(username, protocol=protocol, address=address, password=password)).account


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
    account = (await core.signin.sign_in("alice", protocol="sftp", address="::1", public_key=blob)).account
    assert account.profile.username == "alice"
    with pytest.raises(AuthenticationFailed):
        await core.signin.sign_in("alice", protocol="sftp", address="::1", public_key=b"other")


def test_address_allow_list():
    assert address_allowed("192.168.1.5", ())
    assert address_allowed("192.168.1.5", ("192.168.1.0/24",))
    assert not address_allowed("192.168.2.5", ("192.168.1.0/24",))
    assert address_allowed("::ffff:192.168.1.5", ("192.168.1.0/24",))
    assert address_allowed("2001:db8::1", ("2001:db8::/32", "10.0.0.0/8"))
    assert not address_allowed("not an address", ("0.0.0.0/0",))


ALICE = Target("user:alice", 1, "alice")  # a known username of organisation 1


def known(name: str, org_id: int = 1) -> Target:
    return Target("user:" + name, org_id, name)


def unknown(name: str) -> Target:
    return Target("user:" + name, None, name)


def test_throttle_delays_grow_and_fade():
    clock = task.Clock()
    throttle = LoginThrottle(clock)
    delays = []
    for _ in range(FREE_FAILURES + 6):
        delays.append(throttle.delay(ALICE.key, "10.0.0.1"))
        throttle.record_failure(ALICE, "10.0.0.1")
    assert delays[:FREE_FAILURES] == [0.0] * FREE_FAILURES
    assert delays[FREE_FAILURES:] == sorted(delays[FREE_FAILURES:]) and delays[-1] == MAX_DELAY
    # another address guessing the same user is slowed too; another user at the same address is not
    assert throttle.delay(ALICE.key, "10.9.9.9") > 0
    assert throttle.delay("user:bob", "10.0.0.1") == 0.0
    clock.advance(3600)  # an hour later the score has faded
    assert throttle.delay(ALICE.key, "10.0.0.1") == 0.0


def test_known_and_unknown_names_are_slowed_alike():
    """The delays do not tell an attacker which names exist."""
    for spray in (False, True):
        clock = task.Clock()
        throttle = LoginThrottle(clock)
        seen = {}
        for kind, target in (("known", known), ("unknown", unknown)):
            address = f"10.0.0.{len(seen) + 1}"
            delays = []
            for i in range(8):
                name = target(f"{kind}{i if spray else ''}")
                delays.append(throttle.delay(name.key, address))
                throttle.record_failure(name, address)
            seen[kind] = delays
        assert seen["known"] == seen["unknown"] and seen["known"][-1] > 0


def test_success_clears_the_username_score_not_the_address():
    clock = task.Clock()
    throttle = LoginThrottle(clock)
    for i in range(FREE_FAILURES + 2):
        throttle.record_failure(unknown(f"guess{i}"), "10.0.0.1")
        throttle.record_failure(ALICE, "10.0.0.3")
    throttle.record_success(ALICE.key, "10.0.0.2")
    assert throttle.delay(ALICE.key, "10.0.0.2") == 0.0
    assert throttle.delay("user:mallory", "10.0.0.1") > 0


def test_pause_waits_on_the_injected_clock():
    clock = task.Clock()
    throttle = LoginThrottle(clock)
    done = []
    Deferred.fromCoroutine(throttle.pause(2.0)).addCallback(done.append)
    clock.advance(1.9)
    assert not done
    clock.advance(0.2)
    assert done == [None]


def test_one_users_failures_ban_that_user_from_that_address_only():
    clock = task.Clock()
    throttle = LoginThrottle(clock)
    bans = [throttle.record_failure(ALICE, "10.0.0.1") for _ in range(int(BAN_THRESHOLD))]
    assert bans[:-1] == [None] * (int(BAN_THRESHOLD) - 1)
    ban = bans[-1]
    assert ban.target == ALICE and ban.tried == (ALICE,) and ban.until == BAN_BASE
    assert ban.organisations == {1} and ban.usernames == ("alice",)
    assert throttle.banned("10.0.0.1") is None  # the office behind 10.0.0.1 goes on
    assert throttle.banned("10.0.0.1", "user:bob") is None
    assert throttle.banned("10.0.0.1", "USER:ALICE") == ban
    assert throttle.banned("10.0.0.2", ALICE.key) is None  # alice elsewhere too
    assert throttle.bans() == [ban]
    assert throttle.unban("10.0.0.1", ALICE.key) and throttle.banned("10.0.0.1", ALICE.key) is None


def test_a_name_attacked_from_many_addresses_is_slowed_never_banned():
    clock = task.Clock()
    throttle = LoginThrottle(clock)
    for n in range(200):
        for _ in range(int(BAN_THRESHOLD) - 1):
            assert throttle.record_failure(ALICE, f"10.1.{n // 250}.{n % 250}") is None
    assert throttle.bans() == []
    assert throttle.banned("10.9.9.9", ALICE.key) is None and throttle.delay(ALICE.key, "10.9.9.9") == MAX_DELAY


def test_spraying_names_bans_the_address_known_or_not():
    clock = task.Clock()
    throttle = LoginThrottle(clock)
    sprayed = [known("bob"), known("carol", org_id=2), *(unknown(f"nobody{i}") for i in range(7))]
    for target in sprayed:
        assert throttle.record_failure(target, "10.0.0.1") is None
        if target.known:  # a repeat of a known name adds nothing to the address
            assert throttle.record_failure(target, "10.0.0.1") is None
    ban = throttle.record_failure(unknown("root"), "10.0.0.1")
    assert ban is not None and ban.target is None and ban.organisations == {1, 2}
    assert throttle.banned("10.0.0.1") == ban and throttle.banned("10.0.0.1", "user:anyone") == ban
    assert throttle.banned("10.0.0.2") is None


def test_an_address_banned_again_is_banned_longer():
    clock = task.Clock()
    throttle = LoginThrottle(clock)
    for i in range(int(BAN_THRESHOLD)):
        first = throttle.record_failure(unknown(f"user{i}"), "10.0.0.1")
    assert first.address == "10.0.0.1" and first.until == BAN_BASE and first.offences == 1
    assert "user0" in first.usernames
    clock.advance(BAN_BASE + 1)
    assert throttle.banned("10.0.0.1") is None and throttle.bans() == []
    for _ in range(int(BAN_THRESHOLD)):
        second = throttle.record_failure(unknown("root"), "10.0.0.1")
    assert second.offences == 2 and second.until - clock.seconds() == BAN_BASE * 4
    assert throttle.unban("10.0.0.1") and throttle.banned("10.0.0.1") is None


def test_failures_spread_out_fade_and_ban_nobody():
    clock = task.Clock()
    throttle = LoginThrottle(clock)
    for i in range(60):  # one mistake every five minutes, all day long
        assert throttle.record_failure(ALICE, "10.0.0.1") is None
        assert throttle.record_failure(unknown(f"typo{i}"), "10.0.0.1") is None
        clock.advance(300)
    assert throttle.bans() == []


def test_trusted_networks_are_never_banned_as_a_whole():
    clock = task.Clock()
    throttle = LoginThrottle(clock, trusted_networks=["10.0.0.0/8", "2001:db8::/32"])
    for address in ("10.1.2.3", "::ffff:10.1.2.3", "2001:db8::7"):
        assert throttle.trusted(address)
        for i in range(50):
            assert throttle.record_failure(unknown(f"nobody{i}"), address) is None
        assert throttle.banned(address) is None
        assert throttle.delay("user:someone-else", address) == 0.0  # colleagues are not slowed
    assert not throttle.trusted("192.0.2.1") and not throttle.trusted("not an address")
    # one account guessed from inside is still slowed, then banned for that address
    for _ in range(int(BAN_THRESHOLD)):
        ban = throttle.record_failure(ALICE, "10.1.2.3")
    assert ban is not None and ban.target == ALICE and throttle.banned("10.1.2.3") is None


def test_bad_trusted_networks_are_refused_by_the_config():
    from appliance import config
    from appliance.errors import ConfigError

    assert config.load(
        None, {"APPLIANCE_SECURITY_TRUSTED_NETWORKS": "10.0.0.0/8, 2001:db8::/32"}
    ).security.trusted_networks == ["10.0.0.0/8", "2001:db8::/32"]
    with pytest.raises(ConfigError, match=r"\[security\] trusted_networks: 'office' is not an address or network"):
        config.load(None, {"APPLIANCE_SECURITY_TRUSTED_NETWORKS": "office"})


@pytest_twisted.ensureDeferred
async def test_a_banned_address_is_refused_before_any_password_check_and_logged(core):
    alice = await make_account(core)
    admin = await make_account(core, "admin")
    for i in range(int(BAN_THRESHOLD)):
        core.auth.throttle.record_failure(unknown(f"nobody{i}"), "10.1.1.1")
    with pytest.raises(AuthenticationFailed, match="Too many failed sign-ins from 10.1.1.1: try again in 5 minutes"):
        await login(core, address="10.1.1.1")  # even the right password
    assert (await login(core, address="10.1.1.2")).profile.username == "alice"  # others are unaffected
    assert [b.address for b in core.auth.bans()] == ["10.1.1.1"]
    assert core.auth.bans_for(alice) == []  # only names of no account: the operator's alone
    [view] = core.auth.bans_for(admin)  # the first admin is the operator
    assert view.kind == "address" and "'nobody0'" in view.why and "every sign-in" in view.why
    assert await core.auth.lift(admin, "10.1.1.1") == 1
    assert (await login(core, address="10.1.1.1")).profile.username == "alice"
    rows = await core.store.run(queries.recent_logs, None)
    assert rows[1]["action"] == "unban" and "admin lifted the ban on 10.1.1.1" in rows[1]["message"]


@pytest_twisted.ensureDeferred
async def test_failures_through_login_ban_that_account_from_that_address(core):
    await make_account(core)
    await make_account(core, "bob")
    core.auth.throttle.pause = _no_pause  # the growing delays are tested above, with a clock
    for _ in range(int(BAN_THRESHOLD)):
        with pytest.raises(AuthenticationFailed, match="Invalid username or password"):
            await login(core, password="guess-guess", address="10.2.2.2")
    with pytest.raises(AuthenticationFailed, match="Too many failed sign-ins for this account from 10.2.2.2"):
        await login(core, address="10.2.2.2")
    with pytest.raises(AuthenticationFailed, match="Too many failed sign-ins for this account"):
        await login(core, "ALICE", address="10.2.2.2")
    assert (await login(core, "bob", address="10.2.2.2")).profile.username == "bob"
    assert (await login(core, address="10.2.2.3")).profile.username == "alice"
    bans = [r for r in await core.store.run(queries.recent_logs, None) if r["action"] == "ban"]
    assert len(bans) == 1 and "10.2.2.2 banned for 5 minutes" in bans[0]["message"]
    assert "alice" in bans[0]["message"] and bans[0]["org_id"] is not None


async def _no_pause(seconds):
    return None
