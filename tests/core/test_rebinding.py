"""DNS rebinding: a host name checked once and looked up again for the connection must
not reach a refused address. The core runs in-process with a stand-in resolver (not
the system's DNS) that answers a public address for a name's first lookup and
127.0.0.1 for every later one, as a rebinding name does; a real listener on 127.0.0.1
shows that no connection reached it."""

from __future__ import annotations

import dataclasses
import socket
from collections import Counter

import pytest
import pytest_twisted

from appliance import config
from appliance.core import build_core
from appliance.errors import Invalid
from appliance.netcheck import Destinations
from appliance.service import storage_backends
from appliance.storage.s3.client import Bucket, S3Problem
from appliance.storage.s3.credentials import token_request
from appliance.storage.sftp.client import Remote
from appliance.store import mailboxes as mailbox_queries

from ..helpers import seed_keys
from ..smtpserver import SmtpServer
from .conftest import make_account

PUBLIC = "203.0.113.10"  # TEST-NET-3: public as far as the checks go, never connected to here


class StandInResolver:
    """A stand-in for DNS: the first lookup of a name answers PUBLIC, every later one
    127.0.0.1 (`fixed` names always answer their address)."""

    def __init__(self, fixed: dict[str, str] | None = None):
        self.lookups: Counter[str] = Counter()
        self.fixed = fixed or {}

    def __call__(self, host: str, port: int) -> list[str]:
        self.lookups[host] += 1
        if host in self.fixed:
            return [self.fixed[host]]
        return [PUBLIC] if self.lookups[host] == 1 else ["127.0.0.1"]


class LoopbackListener:
    """A real TCP listener on 127.0.0.1 that never accepts: a connection made to it waits
    in its backlog, so `reached` tells for sure whether anything connected."""

    def __init__(self):
        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        self.socket.listen(8)
        self.port = self.socket.getsockname()[1]

    def reached(self) -> bool:
        self.socket.setblocking(False)
        try:
            connection, _ = self.socket.accept()
        except BlockingIOError:
            return False
        connection.close()
        return True

    def close(self) -> None:
        self.socket.close()


@pytest.fixture
def resolver() -> StandInResolver:
    return StandInResolver()


@pytest.fixture
def listener():
    found = LoopbackListener()
    yield found
    found.close()


@pytest.fixture
def core(tmp_path, resolver):
    from twisted.internet import reactor

    settings = config.load(None, {})
    settings.server.data_dir = str(seed_keys(tmp_path / "data"))
    settings.security.bcrypt_rounds = 4
    built = build_core(settings, reactor, storage_backends, destinations=Destinations(resolver))
    yield built
    built.threads.stop()
    built.store.close()


@pytest_twisted.ensureDeferred
async def test_an_s3_endpoint_that_rebinds_to_loopback_is_refused_on_connecting(core, resolver, listener):
    host = "rebind.stand-in.test"
    bucket = Bucket(
        endpoint=f"http://{host}:{listener.port}",
        region="us-east-1",
        bucket="files",
        prefix="",
        access_key="AKIASTANDIN",
        secret_key="stand-in-secret",
        path_style=True,
        verify_tls=False,
        allow_loopback=False,
    )
    with pytest.raises(S3Problem) as refused:
        await core.files.s3.check(bucket)
    assert f"{host} (127.0.0.1) may not be used" in refused.value.message
    assert "loopback" in refused.value.message
    assert resolver.lookups[host] >= 2  # checked when the client was made (public), again when connecting
    assert not listener.reached()


@pytest_twisted.ensureDeferred
async def test_an_imap_host_that_rebinds_to_loopback_is_refused_on_connecting(core, resolver, listener):
    host = "mail.stand-in.test"
    account = dataclasses.replace(await make_account(core, "admin"), protocol="web")  # as the console's sign-in
    body = {"name": "Rebinding", "host": host, "port": listener.port, "security": "none", "username": "partner",
            "password": "imap-password-1", "folder": "INBOX"}  # fmt: skip
    saved = await core.mailbox_admin.create(account, body, "127.0.0.1")  # the first lookup answered PUBLIC
    assert "warning" not in saved, saved
    mailbox_id = saved["id"]
    run_id = await core.mailboxes.run_now(account.organisation.id, mailbox_id)
    await core.mailboxes.wait(mailbox_id)
    runs = await core.store.run(mailbox_queries.runs, account.organisation.id, mailbox_id)
    run = next(r for r in runs if r["id"] == run_id)
    assert run["status"] == "failed"
    assert f"{host} (127.0.0.1) may not be used" in run["error"] and "loopback" in run["error"]
    assert resolver.lookups[host] == 2
    assert not listener.reached()


@pytest_twisted.ensureDeferred
async def test_outbound_mail_goes_to_the_address_the_check_returned(core, resolver):
    """The mailer connects to the address netcheck gave for this connection, not to the
    name (which the system cannot resolve): the stand-in's answer receives the mail."""
    smtp = SmtpServer()
    try:
        resolver.fixed["smtp.stand-in.test"] = "127.0.0.1"
        core.settings.smtp.host = "smtp.stand-in.test"
        core.settings.smtp.port = smtp.port
        core.mailer.send("someone@example.com", "Checked", "text", "<p>html</p>")
        await until(lambda: core.mailer.sent == 1)
        assert [(m[1], m[2]["Subject"]) for m in smtp.messages] == [(["someone@example.com"], "Checked")]
        assert resolver.lookups["smtp.stand-in.test"] == 1
    finally:
        smtp.stop()


@pytest_twisted.ensureDeferred
async def test_a_remote_sftp_host_is_checked_for_the_connection_itself(core, resolver, listener):
    host = "sftp.stand-in.test"
    resolver.fixed[host] = "127.0.0.1"
    remote = Remote(host, listener.port, "someone", "password", "", "", "", allow_loopback=False)
    with pytest.raises(Invalid) as refused:
        await core.files.remote.check(remote)
    assert f"{host} (127.0.0.1) may not be used" in refused.value.message
    assert not listener.reached()


def test_the_token_endpoint_is_checked_for_the_connection_itself(resolver, listener):
    """The OpenID provider's token endpoint (urllib): the connection asks the check itself."""
    host = "login.stand-in.test"
    resolver.fixed[host] = "127.0.0.1"
    with pytest.raises(Invalid) as refused:
        token_request(f"http://{host}:{listener.port}/token", {"grant_type": "refresh_token"}, "appliance", "",
                      Destinations(resolver), False)  # fmt: skip
    assert f"{host} (127.0.0.1) may not be used" in refused.value.message
    assert not listener.reached()


async def until(condition, timeout: float = 30) -> None:
    """Wait for `condition` without holding the reactor the core runs on."""
    from twisted.internet import reactor, task

    for _ in range(int(timeout / 0.02)):
        if condition():
            return
        await task.deferLater(reactor, 0.02, lambda: None)
    raise TimeoutError("the condition never held")
