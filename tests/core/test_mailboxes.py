"""Mailboxes against a real Dovecot IMAP server: files land with the right bytes,
runs are recorded, the after-processing action happens on the server, and every
failure says what is wrong."""

from __future__ import annotations

import os
from email.message import EmailMessage
from pathlib import Path

import pytest
import pytest_twisted

from appliance import config
from appliance.core import build_core
from appliance.core.files import TEMP_PREFIX
from appliance.service import storage_backends
from appliance.store import mailboxes as mailbox_queries
from appliance.store import queries

from ..helpers import seed_keys
from ..mailserver import PASSWORD, USER, start_mail_server
from .conftest import make_account

pytestmark = pytest.mark.requires("/usr/sbin/dovecot")  # make test installs dovecot-imapd


@pytest.fixture(scope="module")
def mail_server():
    server = start_mail_server()
    yield server
    server.stop()


@pytest.fixture
def core(tmp_path):
    from twisted.internet import reactor

    settings = config.load(None, {})
    settings.server.data_dir = str(seed_keys(tmp_path / "data"))
    settings.security.bcrypt_rounds = 4
    settings.mail.allow_loopback = True
    settings.mail.max_message_bytes = 2_000_000
    built = build_core(settings, reactor, storage_backends)
    yield built
    built.threads.stop()
    built.store.close()


@pytest.fixture(autouse=True)
def empty_mailbox(mail_server):
    """Each test starts with empty INBOX and Archive folders."""
    conn = mail_server.client()
    for folder in ("INBOX", "Archive"):
        _, count = conn.select(folder)
        if int(count[0]):
            conn.store("1:*", "+FLAGS", "\\Deleted")
            conn.expunge()
    conn.logout()


def message(subject="Invoice", attachments=(), sender="Supplier <billing@supplier.example>", message_id=None):
    msg = EmailMessage()
    msg["From"] = sender
    msg["To"] = "files@acme.example"
    msg["Subject"] = subject
    msg["Date"] = "Tue, 03 Nov 2026 10:00:00 +0000"
    msg["Message-ID"] = message_id or f"<{os.urandom(6).hex()}@supplier.example>"
    msg.set_content("Please find the files attached.")
    msg.add_alternative("<p>Please find the files <b>attached</b>.</p>", subtype="html")
    for name, data, kind in attachments:
        maintype, subtype = kind.split("/")
        msg.add_attachment(data, maintype=maintype, subtype=subtype, filename=name)
    return msg


async def make_mailbox(core, mail_server, **changes) -> int:
    account = await make_account(core, "admin")
    values = {
        "org_id": account.organisation.id,
        "name": "invoices",
        "host": "127.0.0.1",
        "port": mail_server.imaps_port,
        "security": "tls",
        "verify_tls": False,
        "username": USER,
        "password_encrypted": core.data_dir.secret_box().encrypt(PASSWORD),
        "folder": "INBOX",
        "source_id": account.source.id,
        "target_folder": "/mail/{date}",
        "keep": "attachments",
        "after": "seen",
        "interval_minutes": 5,
        "created_at": "2026-11-01T00:00:00.000000Z",
    }
    values.update(changes)
    return await core.store.run(mailbox_queries.insert_mailbox, values)


async def run(core, mailbox_id) -> dict:
    org_id = (await make_account(core, "admin")).organisation.id
    run_id = await core.mailboxes.run_now(org_id, mailbox_id)
    await core.mailboxes.wait(mailbox_id)
    rows = await core.store.run(mailbox_queries.runs, org_id, mailbox_id)
    return next(r for r in rows if r["id"] == run_id)


def source_root(core) -> str:
    return os.path.join(core.data_dir.files, "acme")


def files_under(root: str) -> dict[str, bytes]:
    found = {}
    for folder, _dirs, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            found[os.path.relpath(path, root)] = Path(path).read_bytes()
    return found


PDF = b"%PDF-1.7 " + os.urandom(200_000)
CSV = b"date,amount\n2026-11-03,12.50\n"


@pytest_twisted.ensureDeferred
async def test_attachments_land_over_tls_and_the_message_is_marked_seen(core, mail_server):
    inner = message("Forwarded order", [("order.zip", b"PK\x03\x04zip", "application/zip")])
    outer = message("Invoice 42", [("invoice.pdf", PDF, "application/pdf"), ("lines.csv", CSV, "text/csv")])
    outer.add_attachment(inner)
    mail_server.deliver(outer.as_bytes())
    mailbox_id = await make_mailbox(core, mail_server)
    result = await run(core, mailbox_id)
    assert (result["status"], result["messages"], result["error"]) == ("success", 1, "")
    files = files_under(source_root(core))
    assert files["mail/2026-11-03/invoice.pdf"] == PDF
    assert files["mail/2026-11-03/lines.csv"] == CSV
    assert files["mail/2026-11-03/order.zip"] == b"PK\x03\x04zip"
    assert b"Forwarded order" in files["mail/2026-11-03/Forwarded order.eml"]
    assert result["files"] == 4 and result["bytes"] == sum(len(v) for v in files.values())
    assert mail_server.flags() and all("\\Seen" in flags for _, flags in mail_server.flags())
    logs = await core.store.run(queries.recent_logs, None)
    uploads = [r for r in logs if r["action"] == "upload"]
    assert {r["protocol"] for r in uploads} == {"mail"} and len(uploads) == 4
    assert any("mailbox:invoices uploaded /mail/2026-11-03/invoice.pdf" in r["message"] for r in uploads)
    # a second run finds nothing new
    again = await run(core, mailbox_id)
    assert (again["status"], again["messages"], again["files"]) == ("success", 0, 0)


@pytest_twisted.ensureDeferred
async def test_starttls_whole_message_and_move(core, mail_server):
    raw = message("Statement", [("s.pdf", PDF, "application/pdf")]).as_bytes()
    mail_server.deliver(raw)
    mailbox_id = await make_mailbox(
        core,
        mail_server,
        port=mail_server.imap_port,
        security="starttls",
        keep="message",
        after="move",
        move_to="Archive",
        target_folder="/in/{from}",
    )
    result = await run(core, mailbox_id)
    assert result["status"] == "success", result["error"]
    files = files_under(source_root(core))
    assert files == {"in/billing@supplier.example/Statement.eml": files["in/billing@supplier.example/Statement.eml"]}
    assert files["in/billing@supplier.example/Statement.eml"].replace(b"\r\n", b"\n") == raw.replace(b"\r\n", b"\n")
    assert mail_server.flags("INBOX") == []
    assert len(mail_server.flags("Archive")) == 1


@pytest_twisted.ensureDeferred
async def test_a_move_to_a_folder_the_server_lacks_makes_it(core, mail_server):
    for subject in ("One", "Two"):
        mail_server.deliver(message(subject, [(f"{subject}.txt", b"x", "text/plain")]).as_bytes())
    mailbox_id = await make_mailbox(core, mail_server, after="move", move_to="Processed")
    result = await run(core, mailbox_id)
    assert (result["status"], result["messages"]) == ("success", 2), result["error"]
    assert mail_server.flags("INBOX") == []
    assert len(mail_server.flags("Processed")) == 2
    mail_server.deliver(message("Three", [("Three.txt", b"x", "text/plain")]).as_bytes())
    assert (await run(core, mailbox_id))["status"] == "success"  # there now: copied straight in
    assert len(mail_server.flags("Processed")) == 3


@pytest_twisted.ensureDeferred
async def test_delete_after_filing(core, mail_server):
    mail_server.deliver(message("Gone", [("a.txt", b"a", "text/plain")]).as_bytes())
    mailbox_id = await make_mailbox(core, mail_server, after="delete")
    assert (await run(core, mailbox_id))["status"] == "success"
    assert mail_server.flags("INBOX") == []
    assert files_under(source_root(core))["mail/2026-11-03/a.txt"] == b"a"


@pytest_twisted.ensureDeferred
async def test_name_clashes_never_overwrite(core, mail_server):
    for content in (b"first", b"second", b"third"):
        mail_server.deliver(message("Report", [("report.pdf", content, "application/pdf")]).as_bytes())
    mailbox_id = await make_mailbox(core, mail_server)
    assert (await run(core, mailbox_id))["files"] == 3
    files = files_under(os.path.join(source_root(core), "mail", "2026-11-03"))
    assert sorted(files.values()) == [b"first", b"second", b"third"]
    assert sorted(files) == ["report (1).pdf", "report (2).pdf", "report.pdf"]


@pytest_twisted.ensureDeferred
async def test_a_message_is_never_filed_twice(core, mail_server):
    same_id = "<once@supplier.example>"
    mail_server.deliver(message("Copy one", [("x.pdf", b"x", "application/pdf")], message_id=same_id).as_bytes())
    mail_server.deliver(message("Copy two", [("x.pdf", b"x", "application/pdf")], message_id=same_id).as_bytes())
    mailbox_id = await make_mailbox(core, mail_server)
    result = await run(core, mailbox_id)
    assert (result["messages"], result["files"]) == (2, 1)
    # a crash after filing, before marking seen: the next run only finishes the action
    mail_server.deliver(message("Crash", [("y.pdf", b"y", "application/pdf")]).as_bytes())
    uid = max(uid for uid, _ in mail_server.flags())
    conn = mail_server.client()
    conn.select("INBOX")
    uid_validity = int(conn.response("UIDVALIDITY")[1][0])
    conn.logout()
    await core.store.run(mailbox_queries.mark_filed, mailbox_id, [f"uid:{uid_validity}:{uid}"], "2026-11-03T00:00:00Z")
    result = await run(core, mailbox_id)
    assert result["files"] == 0
    assert "y.pdf" not in files_under(source_root(core)).get("mail/2026-11-03", {})
    assert all("\\Seen" in flags for _, flags in mail_server.flags())


@pytest_twisted.ensureDeferred
async def test_hostile_attachment_names_stay_inside_and_readable(core, mail_server):
    raw = (
        b"From: a@b.example\r\nSubject: =?utf-8?Q?../../etc?=\r\nDate: Tue, 03 Nov 2026 10:00:00 +0000\r\n"
        b"Content-Type: multipart/mixed; boundary=XX\r\n\r\n"
        b"--XX\r\nContent-Type: text/plain\r\n\r\nbody\r\n"
        b'--XX\r\nContent-Disposition: attachment; filename="../../../escape.txt"\r\n\r\nup\r\n'
        b'--XX\r\nContent-Disposition: attachment; filename="=?utf-8?Q?evil=0D=0Aname.txt?="\r\n\r\ncrlf\r\n'
        b'--XX\r\nContent-Disposition: attachment; filename="=?iso-8859-1?Q?caf=E9.pdf?="\r\n\r\nlatin\r\n'
        b'--XX\r\nContent-Disposition: attachment; filename="' + b"L" * 400 + b'.txt"\r\n\r\nlong\r\n'
        b'--XX\r\nContent-Disposition: attachment; filename="empty.bin"\r\n\r\n\r\n'
        b"--XX\r\nContent-Disposition: attachment\r\nContent-Transfer-Encoding: base64\r\n\r\n!!!not base64\r\n"
        b"--XX--\r\n"
    )
    mail_server.deliver(raw)
    mailbox_id = await make_mailbox(core, mail_server, target_folder="/mail/{subject}")
    result = await run(core, mailbox_id)
    assert result["status"] == "success", result["error"]
    root = source_root(core)
    files = files_under(root)
    folder = "mail/_.._etc"
    names = {path.split("/", 2)[2] for path in files}
    assert all(path.startswith(folder + "/") for path in files), files.keys()
    assert "café.pdf" in names and "_.._.._escape.txt" in names and "evil__name.txt" in names
    assert "empty.bin" in names and files[f"{folder}/empty.bin"] == b""
    assert any(name.startswith("LLL") and name.endswith(".txt") and len(name.encode()) <= 255 for name in names)
    assert not os.path.exists(os.path.join(core.data_dir.files, "escape.txt"))


@pytest_twisted.ensureDeferred
async def test_a_message_over_the_size_cap_is_left_on_the_server(core, mail_server):
    mail_server.deliver(message("Huge", [("big.bin", os.urandom(3_000_000), "application/octet-stream")]).as_bytes())
    mailbox_id = await make_mailbox(core, mail_server)
    result = await run(core, mailbox_id)
    assert result["status"] == "partial"
    assert "over the 2,000,000-byte limit and was left on the server" in result["error"]
    assert files_under(source_root(core)) == {}
    assert all("\\Seen" not in flags for _, flags in mail_server.flags())


@pytest.mark.parametrize(
    "changes,expected",
    [
        ({"password_encrypted": "wrong"}, "cannot be decrypted"),
        ({"username": "nobody-here"}, "refused the username or password"),
        ({"verify_tls": True}, "is for another name"),
        ({"verify_tls": True, "host": "localhost"}, "could not be verified"),
        ({"folder": "Missing"}, "The folder 'Missing' does not exist"),
        ({"port": 1}, "refused the connection"),
        ({"host": "169.254.169.254"}, "cloud metadata address"),
        ({"host": "no-such-host.invalid"}, "Cannot resolve the host"),
        ({"source_id": None}, "no target source"),
    ],
)
@pytest_twisted.ensureDeferred
async def test_failures_are_recorded_with_a_clear_error(core, mail_server, changes, expected):
    mail_server.deliver(message("Kept", [("k.txt", b"k", "text/plain")]).as_bytes())
    mailbox_id = await make_mailbox(core, mail_server, **changes)
    result = await run(core, mailbox_id)
    assert result["status"] == "failed"
    assert expected in result["error"]
    assert result["finished_at"]
    assert files_under(source_root(core)) == {}
    assert all("\\Seen" not in flags for _, flags in mail_server.flags())


@pytest_twisted.ensureDeferred
async def test_loopback_is_refused_unless_allowed(core, mail_server):
    core.settings.mail.allow_loopback = False
    mailbox_id = await make_mailbox(core, mail_server)
    result = await run(core, mailbox_id)
    assert result["status"] == "failed" and "loopback" in result["error"]


@pytest.fixture
def small_disk(core):
    """The organisation's source folder on a 600 KiB tmpfs: a disk that fills up."""
    import subprocess

    root = source_root(core)
    os.makedirs(root, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=600k", "tmpfs", root], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {mounted.stderr.decode().strip()}")
    yield root
    subprocess.run(["umount", "-l", root], check=True)


@pytest_twisted.ensureDeferred
async def test_a_full_disk_fails_the_run_and_leaves_no_partial_message(core, mail_server, small_disk):
    mail_server.deliver(
        message(
            "Two files",
            [("one.bin", b"1" * 1000, "application/pdf"), ("two.bin", os.urandom(900_000), "application/pdf")],
        ).as_bytes()
    )
    mailbox_id = await make_mailbox(core, mail_server)
    result = await run(core, mailbox_id)
    assert result["status"] == "failed"
    assert "The storage is full: nothing was saved" in result["error"]
    # the first attachment was written, then removed with the rest of the message
    assert files_under(small_disk) == {}
    assert not [n for _, _, names in os.walk(small_disk) for n in names if n.startswith(TEMP_PREFIX)]
    assert all("\\Seen" not in flags for _, flags in mail_server.flags())  # it will be tried again


@pytest_twisted.ensureDeferred
async def test_a_read_only_source_fails_the_run(core, mail_server):
    mail_server.deliver(message("Kept", [("k.txt", b"k", "text/plain")]).as_bytes())
    mailbox_id = await make_mailbox(core, mail_server)
    account = await make_account(core, "admin")
    await core.store.run(lambda db: db["sources"].update(account.source.id, {"read_only": 1}))
    result = await run(core, mailbox_id)
    assert result["status"] == "failed" and "read-only" in result["error"]


@pytest_twisted.ensureDeferred
async def test_runs_never_overlap_and_failures_back_off(core, mail_server):
    mailbox_id = await make_mailbox(core, mail_server, username="nobody-here")
    org_id = (await make_account(core, "admin")).organisation.id
    await core.mailboxes.run_now(org_id, mailbox_id)
    with pytest.raises(Exception, match="being checked right now"):
        await core.mailboxes.run_now(org_id, mailbox_id)
    await core.mailboxes.wait(mailbox_id)
    first_due = core.mailboxes.next_due(mailbox_id) - core.reactor.seconds()
    assert 2 * 300 <= first_due <= 2 * 300 * 1.1 + 1  # one failure: twice the interval
    await core.mailboxes.run_now(org_id, mailbox_id)
    await core.mailboxes.wait(mailbox_id)
    second_due = core.mailboxes.next_due(mailbox_id) - core.reactor.seconds()
    assert second_due > first_due
    rows = await core.store.run(mailbox_queries.runs, org_id, mailbox_id)
    assert [r["status"] for r in rows] == ["failed", "failed"]


@pytest_twisted.ensureDeferred
async def test_an_admins_change_ends_the_backoff_of_a_failing_mailbox(core, mail_server):
    """A fixed password is tried within a minute, not after hours of backoff earned by
    the wrong one; the scheduler's own look at an unchanged mailbox keeps the backoff."""
    mailbox_id = await make_mailbox(core, mail_server, username="nobody-here")
    org_id = (await make_account(core, "admin")).organisation.id
    for _ in range(3):
        await core.mailboxes.run_now(org_id, mailbox_id)
        await core.mailboxes.wait(mailbox_id)
    backed_off = core.mailboxes.next_due(mailbox_id) - core.reactor.seconds()
    assert backed_off >= 8 * 300  # three failures: eight intervals
    await core.mailboxes.tick()  # nothing changed: nothing starts, the backoff holds
    assert core.mailboxes.next_due(mailbox_id) - core.reactor.seconds() > 7 * 300
    # as the admin API does it
    await core.store.run(mailbox_queries.update_mailbox, org_id, mailbox_id, {"username": USER})
    await core.mailboxes.tick()
    await core.mailboxes.wait(mailbox_id)  # in case the minute's draw was zero
    assert core.mailboxes.next_due(mailbox_id) - core.reactor.seconds() <= 300 * 1.1 + 60


@pytest_twisted.ensureDeferred
async def test_a_run_that_ends_before_it_is_under_way_is_not_left_running(core, mail_server, monkeypatch):
    # a run can end before spawn returns: here its poll fails at once, and the database
    # trips after it may be answered in place (threads.py); it must not stay "running"
    from appliance.errors import Unavailable

    async def fails_at_once(mailbox, tally):
        raise Unavailable("The mail server is not there.")

    monkeypatch.setattr(core.mailboxes, "_poll", fails_at_once)
    mailbox_id = await make_mailbox(core, mail_server)
    org_id = (await make_account(core, "admin")).organisation.id
    await core.mailboxes.run_now(org_id, mailbox_id)
    await core.mailboxes.wait(mailbox_id)
    await core.mailboxes.run_now(org_id, mailbox_id)  # not "being checked right now"
    await core.mailboxes.wait(mailbox_id)
    rows = await core.store.run(mailbox_queries.runs, org_id, mailbox_id)
    assert [(r["status"], r["error"]) for r in rows] == [("failed", "The mail server is not there.")] * 2
