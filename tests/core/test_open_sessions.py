"""An admin's change reaches the profile's open connections: ended with the reason,
or refreshed from the next call (core/open_sessions.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import pytest_twisted
from twisted.internet import task

from appliance.core.connections import ConnectionLimits
from appliance.core.open_sessions import CHECK_INTERVAL, DEACTIVATED, DELETED, EXPIRED, MOVED, QUOTA_SET, OpenSessions
from appliance.core.sessions import TokenInvalid
from appliance.errors import PermissionDenied, QuotaExceeded
from appliance.models import to_iso
from appliance.store import queries

from .conftest import make_account

START = datetime(2026, 11, 1, tzinfo=UTC)


class Connection:
    """What a front end gives the core: a callback ending it with a message."""

    def __init__(self, limits: ConnectionLimits, protocol: str = "ftp", address: str = "10.0.0.1"):
        self.ended: list[str] = []
        self.ticket = limits.open(address, protocol, end=self.ended.append)


async def open_connection(core, account, protocol: str = "ftp", address: str = "10.0.0.1") -> Connection:
    connection = Connection(core.connections, protocol, address)
    connection.ticket.authenticated(await core.files.session(account, protocol, address))
    return connection


async def change(core, account, **body) -> None:
    """As the admin API does it."""
    admin = await make_account(core, "admin")
    existing = await core.profile_admin.get(admin, account.profile.id)
    await core.profile_admin.update(admin, existing, await core.profile_admin.values(admin, body, existing))


@pytest_twisted.ensureDeferred
async def test_deactivating_a_profile_ends_its_open_connections_with_the_reason(core):
    account = await make_account(core)
    ftp = await open_connection(core, account, "ftp")
    sftp = await open_connection(core, account, "sftp")
    other = await open_connection(core, await make_account(core, "bob"), "ftp")
    await change(core, account, active=False)
    assert ftp.ended == [DEACTIVATED] and sftp.ended == [DEACTIVATED]
    assert other.ended == []
    assert core.connections.signed_in(account.profile.id) == []  # ended: not checked again
    assert await core.open_sessions.check() == 0 and ftp.ended == [DEACTIVATED]
    rows = await core.store.run(queries.recent_logs, account.organisation.id)
    assert any("alice's FTP session from 10.0.0.1 was ended" in row["message"] for row in rows)


@pytest_twisted.ensureDeferred
async def test_deleting_a_profile_ends_its_open_connections(core):
    account = await make_account(core)
    ftp = await open_connection(core, account)
    admin = await make_account(core, "admin")
    await core.profile_admin.delete(admin, account.profile)
    assert ftp.ended == [DELETED]


@pytest_twisted.ensureDeferred
async def test_withdrawn_permissions_hold_from_the_next_call_without_ending_the_session(core):
    account = await make_account(core)
    ftp = await open_connection(core, account)
    session = ftp.ticket.session
    writer = await session.open_write("/before.txt")
    await writer.write(0, b"allowed")
    await writer.commit()
    await change(core, account, permissions=["list", "download"], quota_bytes=None)
    assert ftp.ended == []
    assert tuple(session.account.profile.permissions) == ("list", "download")
    with pytest.raises(PermissionDenied, match="upload"):
        await session.open_write("/after.txt")
    assert [entry.name for entry in await session.list("/")] == ["before.txt"]


@pytest_twisted.ensureDeferred
async def test_a_withdrawn_protocol_ends_only_that_protocols_connections(core):
    account = await make_account(core)
    ftp = await open_connection(core, account, "ftp")
    sftp = await open_connection(core, account, "sftp")
    await change(core, account, protocols=["sftp", "web"])
    assert ftp.ended == ["FTP access is not enabled for this account. Ask your administrator."]  # as sign-in says
    assert sftp.ended == []


@pytest_twisted.ensureDeferred
async def test_another_home_ends_the_session_which_cannot_follow_it(core):
    account = await make_account(core)
    ftp = await open_connection(core, account)
    await change(core, account, home="/elsewhere")
    assert ftp.ended == [MOVED]


@pytest_twisted.ensureDeferred
async def test_a_password_change_leaves_open_connections_alone(core):
    account = await make_account(core)
    ftp = await open_connection(core, account)
    await change(core, account, password="a-new-password-2")
    assert ftp.ended == []
    assert await core.open_sessions.check() == 0


@pytest_twisted.ensureDeferred
async def test_an_organisation_that_may_not_transfer_ends_its_members_sessions(core):
    account = await make_account(core)
    ftp = await open_connection(core, account)
    await core.store.run(queries.update_organisation, account.organisation.id, {"status": "payment_missing"})
    assert await core.open_sessions.check(org_id=account.organisation.id + 1) == 0  # another organisation's
    assert await core.open_sessions.check(org_id=account.organisation.id) == 1
    assert ftp.ended == ["Organisation payment missing"]  # the access policy's message, as sign-in says it


@pytest_twisted.ensureDeferred
async def test_expiry_ends_open_connections_at_the_next_periodic_check(core):
    account = await make_account(core, expires_at=to_iso(START + timedelta(minutes=30)))
    ftp = await open_connection(core, account)
    clock = task.Clock()
    clock.advance(START.timestamp())
    checks = OpenSessions(core.store, core.connections, core.audit, clock)
    checks.start()
    try:
        clock.advance(CHECK_INTERVAL)
        await core.store.run(lambda db: None)
        assert ftp.ended == []
        clock.advance(30 * 60)
        for _ in range(4):
            await core.store.run(lambda db: None)  # the check's reads, then its audit row
        assert ftp.ended == [EXPIRED]
    finally:
        checks.stop()
    assert not clock.getDelayedCalls()


def test_a_connection_without_an_end_callback_is_hung_up_once():
    limits = ConnectionLimits()
    dropped = []
    ticket = limits.open("10.0.0.1", "ftp", drop=lambda: dropped.append(1))
    ticket.end_session("why")
    ticket.end_session("why again")
    assert dropped == [1]
    ticket.close()
    ticket.end_session("closed")
    assert dropped == [1]


@pytest_twisted.ensureDeferred
async def test_web_sessions_of_an_expired_profile_or_one_without_web_access_stop_working(core):
    account = await make_account(core)
    tokens = await core.sessions.issue(account.profile.id)
    assert (await core.sessions.account(tokens["access"])).profile.id == account.profile.id
    await core.store.run(queries.update_profile, account.profile.id, {"protocols": ["sftp", "ftp"]})
    with pytest.raises(TokenInvalid, match="Web access"):
        await core.sessions.account(tokens["access"])
    expired = to_iso(datetime.now(UTC) - timedelta(minutes=1))
    await core.store.run(queries.update_profile, account.profile.id, {"protocols": ["web"], "expires_at": expired})
    with pytest.raises(TokenInvalid, match="expired"):
        await core.sessions.account(tokens["access"])
    with pytest.raises(TokenInvalid):
        await core.sessions.refresh(tokens["refresh"])


@pytest_twisted.ensureDeferred
async def test_a_quota_change_holds_from_the_next_upload_or_ends_a_session_that_had_none(core):
    account = await make_account(core, quota_bytes=1 << 20)
    measured = await open_connection(core, account)
    await change(core, account, quota_bytes=10)
    assert measured.ended == []
    writer = await measured.ticket.session.open_write("/big.bin")
    with pytest.raises(QuotaExceeded):
        await writer.write(0, b"x" * 100)
    await writer.abort()
    unmeasured = await open_connection(core, await make_account(core, "bob"))
    await change(core, await make_account(core, "bob"), quota_files=5)
    assert unmeasured.ended == [QUOTA_SET]
