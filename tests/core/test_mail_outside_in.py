"""Mailboxes tried from outside with a real Dovecot: what the admin set up meets
hostile or unlucky mail and changes made while a run is going on."""

from __future__ import annotations

import os

import pytest
import pytest_twisted
from twisted.logger import globalLogPublisher

from appliance.mail import parsing
from appliance.store import mailboxes as mailbox_queries
from appliance.store import queries

from . import test_mailboxes as base
from .conftest import make_account
from .test_mailboxes import files_under, make_mailbox, message, run, source_root

# the fixtures of the mailbox tests: a core, one Dovecot for the module, emptied folders
core = base.core
mail_server = base.mail_server
empty_mailbox = base.empty_mailbox  # autouse

pytestmark = pytest.mark.requires("/usr/sbin/dovecot")  # make test installs dovecot-imapd


@pytest.fixture
def log_events():
    """Every event the daemon logs during the test."""
    events: list[dict] = []
    globalLogPublisher.addObserver(events.append)
    yield events
    globalLogPublisher.removeObserver(events.append)


def _text(event: dict) -> str:
    from twisted.logger import formatEvent

    return formatEvent(event)


def _unseen(mail_server) -> list[int]:
    return [uid for uid, flags in mail_server.flags() if "\\Seen" not in flags]


@pytest.mark.parametrize("after", ["delete", "seen", "move"])
@pytest_twisted.ensureDeferred
async def test_a_message_left_over_the_size_limit_stays_on_the_server_untouched(core, mail_server, after):
    """It was 'left on the server': the next run must not delete, move or mark it
    as if it had been filed; raising the limit collects it."""
    big = os.urandom(3_000_000)
    mail_server.deliver(message("Huge", [("big.bin", big, "application/octet-stream")]).as_bytes())
    mailbox_id = await make_mailbox(core, mail_server, after=after, move_to="Archive")
    first = await run(core, mailbox_id)
    assert first["status"] == "partial" and "left on the server" in first["error"]
    second = await run(core, mailbox_id)
    assert (second["status"], second["messages"], second["files"]) == ("success", 0, 0)
    assert len(_unseen(mail_server)) == 1, mail_server.flags()  # still there, still new
    assert mail_server.flags("Archive") == []
    assert files_under(source_root(core)) == {}
    core.settings.mail.max_message_bytes = 5_000_000
    third = await run(core, mailbox_id)
    assert (third["status"], third["files"]) == ("success", 1), third
    assert files_under(source_root(core))["mail/2026-11-03/big.bin"] == big


@pytest_twisted.ensureDeferred
async def test_a_failed_run_is_logged_for_the_operator(core, mail_server, log_events):
    mailbox_id = await make_mailbox(core, mail_server, username="nobody-here", name="supplier invoices")
    result = await run(core, mailbox_id)
    assert result["status"] == "failed"
    lines = [_text(e) for e in log_events if e.get("log_namespace") == "appliance.core.mailboxes"]
    assert any("supplier invoices" in line and "refused the username or password" in line for line in lines), lines


@pytest_twisted.ensureDeferred
async def test_deleting_a_mailbox_during_a_run_stops_it_cleanly(core, mail_server, log_events):
    for n in range(5):
        mail_server.deliver(message(f"n{n}", [(f"f{n}.pdf", b"x" * 1000, "application/pdf")]).as_bytes())
    mailbox_id = await make_mailbox(core, mail_server, after="delete")
    org_id = (await make_account(core, "admin")).organisation.id
    await core.mailboxes.run_now(org_id, mailbox_id)
    await core.store.run(lambda db: db.execute("DELETE FROM mailboxes WHERE id = ?", [mailbox_id]))
    await core.mailboxes.wait(mailbox_id)
    failures = [_text(e) for e in log_events if e.get("log_failure") is not None]
    assert failures == []
    assert files_under(source_root(core)) == {}  # nothing filed for a mailbox that is gone
    assert len(_unseen(mail_server)) == 5  # and nothing taken from the server


# the access policy's organisation half, the one that applies to a mailbox (it acts for
# no profile): the same decisions and messages as every other principal's
# (tests/integration/test_policy_matrix.py)
ORGANISATION_REFUSALS = {
    "payment_missing": ({"status": "payment_missing"}, "Organisation payment missing"),
    "trial_over": ({"status": "trial", "trial_ends_at": "2020-01-01T00:00:00Z"}, "Organisation payment missing"),
    "deleted": ({"status": "deleted"}, "Organisation is deleted"),
}


@pytest.mark.parametrize("refusal", sorted(ORGANISATION_REFUSALS))
@pytest_twisted.ensureDeferred
async def test_an_organisation_that_stops_paying_stops_collecting_mid_run(core, mail_server, refusal):
    changes, told = ORGANISATION_REFUSALS[refusal]
    for n in range(5):
        mail_server.deliver(message(f"n{n}", [(f"f{n}.pdf", b"x" * 1000, "application/pdf")]).as_bytes())
    mailbox_id = await make_mailbox(core, mail_server)
    org_id = (await make_account(core, "admin")).organisation.id
    run_id = await core.mailboxes.run_now(org_id, mailbox_id)
    await core.store.run(queries.update_organisation, org_id, changes)
    await core.mailboxes.wait(mailbox_id)
    assert files_under(source_root(core)) == {}
    assert len(_unseen(mail_server)) == 5
    row = next(r for r in await core.store.run(mailbox_queries.runs, org_id, mailbox_id) if r["id"] == run_id)
    assert row["status"] == "failed", row
    assert row["error"] == f"{told}: the organisation's mailboxes are not checked.", row


def test_an_inline_image_without_a_name_keeps_its_type_as_extension():
    raw = (
        b"From: a@b.example\r\nSubject: logo\r\nContent-Type: multipart/related; boundary=R\r\n\r\n"
        b"--R\r\nContent-Type: text/html\r\n\r\n<img src=cid:logo>\r\n"
        b"--R\r\nContent-Type: image/png\r\nContent-ID: <logo>\r\nContent-Disposition: inline\r\n"
        b"Content-Transfer-Encoding: base64\r\n\r\niVBORw0KGgo=\r\n"
        b"--R\r\nContent-Type: image/jpeg\r\nContent-Transfer-Encoding: base64\r\n\r\n/9j/\r\n"
        b"--R\r\nContent-Type: application/x-unheard-of\r\n\r\n???\r\n"
        b"--R--\r\n"
    )
    names = [name for name, _ in parsing.attachments(parsing.parse(raw))]
    assert names == ["attachment-1.png", "attachment-2.jpg", "attachment-3.bin"]


@pytest.mark.parametrize(
    "security,port,expected",
    [
        ("tls", "imap_port", "did not answer in TLS: the port may be for STARTTLS or plain IMAP"),
        ("starttls", "imaps_port", "sent no IMAP greeting within 2 seconds: the port may expect TLS from the start"),
        ("none", "imaps_port", "sent no IMAP greeting within 2 seconds: the port may expect TLS from the start"),
    ],
)
@pytest_twisted.ensureDeferred
async def test_a_tls_setting_that_does_not_fit_the_port_says_so(
    core, mail_server, monkeypatch, security, port, expected
):
    from appliance.mail import imap

    monkeypatch.setattr(imap, "CONNECT_TIMEOUT", 2)
    mailbox_id = await make_mailbox(core, mail_server, security=security, port=getattr(mail_server, port))
    result = await run(core, mailbox_id)
    assert result["status"] == "failed"
    assert expected in result["error"], result["error"]


@pytest_twisted.ensureDeferred
async def test_a_message_nested_too_deep_to_parse_is_filed_whole_and_does_not_block_the_rest(core, mail_server):
    deep = (
        b"From: a@b.example\r\nSubject: Russian dolls\r\nDate: Tue, 03 Nov 2026 10:00:00 +0000\r\n"
        b"Content-Type: multipart/mixed; boundary=A\r\n\r\n--A\r\n"
        + b"".join(b"Content-Type: multipart/mixed; boundary=L%d\r\n\r\n--L%d\r\n" % (i, i) for i in range(2000))
        + b"Content-Disposition: attachment; filename=deep.txt\r\n\r\ndeep\r\n"
    )
    mail_server.deliver(deep)
    mail_server.deliver(message("After it", [("next.csv", b"a,b\n", "text/csv")]).as_bytes())
    mailbox_id = await make_mailbox(core, mail_server)
    result = await run(core, mailbox_id)
    assert (result["status"], result["messages"]) == ("partial", 2), result
    assert "filed whole" in result["error"]
    files = files_under(source_root(core))
    assert files["mail/2026-11-03/next.csv"] == b"a,b\n"
    assert files["mail/2026-11-03/Russian dolls.eml"].replace(b"\r\n", b"\n") == deep.replace(b"\r\n", b"\n")
    assert _unseen(mail_server) == []


@pytest_twisted.ensureDeferred
async def test_a_quiet_poll_leaves_no_noise_in_the_log(core, mail_server, log_events):
    """journald gets one line per event: not 'Starting factory', 'Stopping factory' and
    'Unhandled unsolicited response: BYE' for every poll of every mailbox."""
    mail_server.deliver(message("One", [("one.txt", b"1", "text/plain")]).as_bytes())
    mailbox_id = await make_mailbox(core, mail_server)
    assert (await run(core, mailbox_id))["status"] == "success"
    noise = [_text(e) for e in log_events if "factory" in _text(e).lower() or "unsolicited" in _text(e)]
    assert noise == []
