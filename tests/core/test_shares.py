"""Share links in the core: uploads racing for one name never replace each other;
wrong link passwords are slowed and banned like failed sign-ins."""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

import pytest
import pytest_twisted
from twisted.internet import task
from twisted.internet.defer import Deferred

from appliance.core.auth import AuthService
from appliance.core.files import TEMP_PREFIX
from appliance.core.shares import Shares
from appliance.core.throttle import LoginThrottle
from appliance.errors import AlreadyExists, AuthenticationFailed
from appliance.store import queries

from .conftest import make_account


@pytest_twisted.ensureDeferred
async def test_an_exclusive_upload_never_replaces_a_file_made_while_it_ran(core):
    account = await make_account(core)
    session = await core.files.session(account, "sftp", "127.0.0.1")
    other = await core.files.session(account, "sftp", "127.0.0.1")  # (one session sees its own upload)
    first = await session.open_write("/race.txt", exclusive=True)
    second = await other.open_write("/race.txt", exclusive=True)  # both saw the name free
    await first.write(0, b"first")
    await second.write(0, b"second")
    await first.commit()
    with pytest.raises(AlreadyExists, match="created while this upload ran"):
        await second.commit()
    home = session.tree.root
    assert Path(os.path.join(home, "race.txt")).read_bytes() == b"first"
    assert [n for n in os.listdir(home) if n.startswith(TEMP_PREFIX)] == []


@pytest_twisted.ensureDeferred
async def test_drop_box_uploads_in_parallel_get_names_of_their_own(core):
    account = dataclasses.replace(await make_account(core), protocol="web")  # as the console's sign-in makes it
    session = await core.files.session(account, "web", "127.0.0.1")
    await session.mkdir("/inbox")
    created = await core.shares.create(account, {"path": "/inbox", "upload_only": True}, "127.0.0.1")
    visits = [await core.shares.visit(created["token"], "192.0.2.1") for _ in range(3)]
    writers = [await visit.open_upload("scan.pdf") for visit in visits]  # all before any commit
    assert [w.path for w in writers] == ["/inbox/scan.pdf", "/inbox/scan (1).pdf", "/inbox/scan (2).pdf"]
    for n, writer in enumerate(writers):
        await writer.write(0, b"upload %d" % n)
        await writer.commit()
    for visit in visits:
        visit.release()
    again = await core.shares.visit(created["token"], "192.0.2.1")
    writer = await again.open_upload("scan.pdf")
    assert writer.path == "/inbox/scan (3).pdf"
    await writer.abort()
    again.release()
    assert Path(os.path.join(session.tree.root, "inbox", "scan (1).pdf")).read_bytes() == b"upload 1"


@pytest_twisted.ensureDeferred
async def test_wrong_link_passwords_are_slowed_then_the_address_is_banned(core):
    from twisted.internet import reactor

    clock = task.Clock()
    clock.advance(time.time())
    auth = AuthService(core.store, core.audit, LoginThrottle(clock), clock)
    shares = Shares(core.store, core.files, auth, core.passwords, core.audit, core.mailer, b"k", lambda: "", clock)
    account = dataclasses.replace(await make_account(core), protocol="web")  # as the console's sign-in makes it
    session = await core.files.session(account, "web", "127.0.0.1")
    writer = await session.open_write("/f.txt")
    await writer.commit()
    token = (await shares.create(account, {"path": "/f.txt", "password": "link-pass-1"}, "127.0.0.1"))["token"]

    async def attempt(password: str) -> str:
        visit = Deferred.fromCoroutine(shares.visit(token, "192.0.2.7", password=password))
        while not visit.called:  # the throttle's pauses run on the fake clock
            waiting = clock.getDelayedCalls()
            if waiting:
                clock.advance(max(0.0, min(c.getTime() for c in waiting) - clock.seconds()))
            else:  # bcrypt runs in a real thread
                await task.deferLater(reactor, 0.005, lambda: None)
        try:
            await visit
        except AuthenticationFailed as e:
            return e.message
        return "ok"

    assert await attempt("link-pass-1") == "ok"
    started = clock.seconds()
    answers = [await attempt("wrong-pass-1") for _ in range(2)]
    assert answers == ["The password is not right."] * 2 and clock.seconds() == started  # a mistake costs nothing
    for _ in range(20):
        if auth.bans():
            break
        assert await attempt("wrong-pass-1") == "The password is not right."
    assert clock.seconds() - started >= 30  # each further failure was answered later and later
    assert (
        await attempt("link-pass-1") == "Too many wrong passwords for this link from 192.0.2.7: try again in 5 minutes."
    )
    assert auth.banned("192.0.2.7") is None  # the link only: others behind the address may sign in
    [ban] = auth.bans_for(account)  # the link's organisation sees it
    assert ban.kind == "share_link" and ban.why.startswith(
        "repeated wrong passwords for the share link to /f.txt of alice"
    )
    bans = await core.store.run(queries.recent_logs, account.organisation.id)
    assert any(r["action"] == "ban" and r["remote_address"] == "192.0.2.7" for r in bans)
