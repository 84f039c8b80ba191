"""Repeated sign-ins with the right password skip bcrypt; nothing else about a sign-in changes."""

from __future__ import annotations

import dataclasses

import pytest
import pytest_twisted

from appliance.errors import AuthenticationFailed
from appliance.store import queries

from .conftest import make_account

PASSWORD = "user-password-1"


def count_bcrypt(core) -> list:
    """Wrap the core's bcrypt check; the returned list grows by one per check."""
    calls = []
    real = core.passwords.check

    def check(password: bytes, hashed: bytes) -> bool:
        calls.append(password)
        return real(password, hashed)

    core.passwords.check = check
    return calls


async def login(core, password=PASSWORD, protocol="sftp", username="alice"):
    live = await core.signin.sign_in(username, protocol=protocol, address="127.0.0.1", password=password)
    return live.account


async def logs(core, action: str) -> list[dict]:
    return [r for r in await core.store.run(queries.recent_logs, None) if r["action"] == action]


@pytest_twisted.ensureDeferred
async def test_a_repeated_login_does_not_run_bcrypt_again(core):
    await make_account(core)
    bcrypt = count_bcrypt(core)
    await login(core)
    assert len(bcrypt) == 1
    for protocol in ("sftp", "ftp", "sftp"):  # the cache sits under every protocol's login
        account = await login(core, protocol=protocol)
        assert account.profile.username == "alice"
    assert len(bcrypt) == 1
    assert len(await logs(core, "login")) == 4  # each one still recorded


@pytest_twisted.ensureDeferred
async def test_a_wrong_password_after_a_cached_success_is_refused_and_logged(core):
    await make_account(core)
    bcrypt = count_bcrypt(core)
    await login(core)
    for attempt in range(2):
        with pytest.raises(AuthenticationFailed, match="Invalid username or password"):
            await login(core, password="wrong-password-1")
        assert len(bcrypt) == 2 + attempt  # failures are never cached: each pays bcrypt
    failed = await logs(core, "login_failed")
    assert len(failed) == 2 and all("wrong password" in r["message"] for r in failed)
    await login(core)  # the right one still works, from the cache
    assert len(bcrypt) == 3


@pytest_twisted.ensureDeferred
async def test_the_cache_holds_no_password_and_no_hash(core):
    account = await make_account(core)
    await login(core)
    cache = core.passwords.cache
    assert len(cache) == 1
    stored = repr(cache.digests()).encode()
    for secret in (PASSWORD, account.profile.password_hash, account.profile.password_hash.split("$")[-1]):
        assert secret.encode() not in stored
        assert all(secret.encode() not in digest for digest in cache.digests())


async def change_by_user(core, account, new):
    in_console = dataclasses.replace(account, protocol="web")  # as the console's sign-in makes it
    await core.accounts.change_password(in_console, PASSWORD, new, new)


async def change_by_admin(core, account, new):
    admin = await make_account(core, "admin")
    values = await core.profile_admin.values(admin, {"password": new}, account.profile)
    await core.profile_admin.update(admin, account.profile, values)


async def change_by_reset_link(core, account, new):
    uid, token = core.accounts.link(account.profile).rsplit("/", 2)[-2:]
    await core.accounts.confirm(uid, token, new, new)


async def change_by_command(core, account, new):
    await core.profiles.set_password("alice", new, by="test")


@pytest.mark.parametrize("change", [change_by_user, change_by_admin, change_by_reset_link, change_by_command])
@pytest_twisted.ensureDeferred
async def test_a_password_change_or_reset_ends_the_old_password_at_once(core, change):
    account = await make_account(core)
    await login(core)
    await login(core)
    assert len(core.passwords.cache) == 1
    await change(core, account, "brand-new-password-2")
    assert len(core.passwords.cache) == 0  # dropped, not merely unreachable
    with pytest.raises(AuthenticationFailed, match="Invalid username or password"):
        await login(core)
    bcrypt = count_bcrypt(core)
    assert (await login(core, password="brand-new-password-2")).profile.username == "alice"
    await login(core, password="brand-new-password-2")
    assert len(bcrypt) == 1  # the new one is cached in its turn


@pytest.mark.parametrize(
    "changes,message",
    [
        ({"active": False}, "disabled"),
        ({"protocols": ["ftp"]}, "SFTP access is not enabled"),
        ({"ip_allow": ["10.0.0.0/8"]}, "not allowed"),
    ],
)
@pytest_twisted.ensureDeferred
async def test_a_cached_success_does_not_skip_the_other_checks(core, changes, message):
    account = await make_account(core)
    await login(core)
    bcrypt = count_bcrypt(core)
    await core.store.run(queries.update_profile, account.profile.id, changes)
    with pytest.raises(AuthenticationFailed, match=message):
        await login(core)
    assert bcrypt == []  # the password was right (from the cache); the refusal came after
    failed = await logs(core, "login_failed")
    assert len(failed) == 1 and message in failed[0]["message"]


@pytest_twisted.ensureDeferred
async def test_an_organisation_refused_after_a_cached_success_is_refused(core):
    account = await make_account(core)
    await login(core)
    await core.store.run(queries.update_organisation, account.organisation.id, {"status": "payment_missing"})
    with pytest.raises(AuthenticationFailed, match="Organisation payment missing"):
        await login(core)


@pytest_twisted.ensureDeferred
async def test_a_deleted_profile_is_forgotten(core):
    account = await make_account(core)
    admin = await make_account(core, "admin")
    await login(core)
    assert len(core.passwords.cache) == 1
    await core.profile_admin.delete(admin, account.profile)
    assert len(core.passwords.cache) == 0
    with pytest.raises(AuthenticationFailed, match="Invalid username or password"):
        await login(core)
