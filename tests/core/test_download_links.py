"""Download links in the core, on an injected clock: a link lasts DOWNLOAD_LINK_SECONDS,
is bound to its profile and path, and share-link access values (the same signing)
keep their form."""

from __future__ import annotations

import time

import pytest
import pytest_twisted
from twisted.internet import task

from appliance.core import signed
from appliance.core.sessions import DOWNLOAD_LINK_SECONDS, Sessions
from appliance.errors import AuthenticationFailed, PermissionDenied

from .conftest import make_account


@pytest_twisted.ensureDeferred
async def test_a_link_works_for_its_lifetime_then_not(core):
    clock = task.Clock()
    clock.advance(time.time())
    sessions = Sessions(core.store, b"secret-of-the-data-dir", clock)
    alice = await make_account(core, "alice")
    access, until = sessions.download_access(alice, "/report.pdf")
    assert until == int(clock.seconds()) + DOWNLOAD_LINK_SECONDS == int(clock.seconds()) + 60
    assert (await sessions.download_account(access, "/report.pdf")).profile.id == alice.profile.id
    clock.advance(DOWNLOAD_LINK_SECONDS - 1)
    assert (await sessions.download_account(access, "/report.pdf")).profile.username == "alice"
    clock.advance(1)
    with pytest.raises(AuthenticationFailed, match="not valid for this file, or it has expired"):
        await sessions.download_account(access, "/report.pdf")


@pytest_twisted.ensureDeferred
async def test_a_link_is_bound_to_its_path_profile_and_secret(core):
    clock = task.Clock()
    clock.advance(time.time())
    sessions = Sessions(core.store, b"secret-of-the-data-dir", clock)
    alice = await make_account(core, "alice")
    bob = await make_account(core, "bob")
    access, _ = sessions.download_access(alice, "/a:b/report.pdf")
    for path in ("/a:b/other.pdf", "/a:b", "/a", "/report.pdf"):
        with pytest.raises(AuthenticationFailed):
            await sessions.download_account(access, path)
    with pytest.raises(PermissionDenied, match="made for another user"):
        await sessions.download_account(access, "/a:b/report.pdf", signed_in=bob)
    assert (await sessions.download_account(access, "/a:b/report.pdf", signed_in=alice)).profile.id == alice.profile.id
    other_secret = Sessions(core.store, b"another-data-dir", clock)
    with pytest.raises(AuthenticationFailed):
        await other_secret.download_account(access, "/a:b/report.pdf")
    # a disabled profile's links stop working
    await make_account(core, "alice", active=False)
    with pytest.raises(AuthenticationFailed):
        await sessions.download_account(access, "/a:b/report.pdf")


def test_signed_values_keep_the_share_access_form():
    # the form share links gave out before the signing moved to core/signed.py
    import hashlib
    import hmac

    value = signed.sign(b"k", "share-access", 7, 1_900_000_000, "None")
    mac = hmac.new(b"k", b"share-access:7:1900000000:None", hashlib.sha256).hexdigest()
    assert value == f"7.1900000000.{mac}"
    assert signed.verify(b"k", value, "share-access", 1_899_999_999, "None") == ("7", 1_900_000_000)
    assert signed.verify(b"k", value, "share-access", 1_900_000_000, "None") is None  # expired
    assert signed.verify(b"k", value, "file-download", 0, "None") is None
    assert signed.verify(b"k", value.replace(".1900000000.", ".01900000000."), "share-access", 0, "None") is None
    for garbage in ("", "a.b", "a.b.c.d", "1.x.00", "1.2.é"):
        assert signed.verify(b"k", garbage, "share-access", 0, "None") is None
