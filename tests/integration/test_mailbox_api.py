"""A mailbox configured through the API collects real messages from Dovecot into
a source, visible over SFTP, with an accurate run history and clear errors."""

from __future__ import annotations

import time
from email.message import EmailMessage

import pytest

from ..api_client import signed_in
from ..frontends.sftp_client import sftp
from ..helpers import ADMIN_PASSWORD
from ..mailserver import PASSWORD, USER, start_mail_server


@pytest.fixture(scope="module")
def mail_server():
    server = start_mail_server()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def mail_daemon(daemon_factory):
    return daemon_factory(mail__allow_loopback=True)


def invoice(number: int) -> bytes:
    message = EmailMessage()
    message["From"] = "Billing <billing@supplier.example>"
    message["Subject"] = f"Invoice {number}"
    message["Date"] = "Tue, 03 Nov 2026 10:00:00 +0000"
    message.set_content("Attached.")
    message.add_attachment(f"invoice {number}".encode() * 1000, maintype="application", subtype="pdf",
                           filename=f"invoice-{number}.pdf")  # fmt: skip
    return message.as_bytes()


def wait_for_run(api, mailbox_id: int, run_id: int) -> dict:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        runs = api.get(f"mailboxes/{mailbox_id}/runs/").body["results"]
        run = next((r for r in runs if r["id"] == run_id), None)
        if run and run["status"] != "running":
            return run
        time.sleep(0.1)
    raise TimeoutError("the run did not finish")


def settings(mail_server, **changes) -> dict:
    body = {
        "name": "Supplier invoices",
        "host": "127.0.0.1",
        "port": mail_server.imaps_port,
        "security": "tls",
        "verify_tls": False,
        "username": USER,
        "password": PASSWORD,
        "folder": "INBOX",
        "target_folder": "/invoices/{date}",
        "keep": "attachments",
        "after": "seen",
        "interval_minutes": 60,
    }
    body.update(changes)
    return body


def test_a_mailbox_collects_attachments_visible_over_sftp(mail_daemon, mail_server, tmp_path):
    api = signed_in(mail_daemon, "admin", ADMIN_PASSWORD)
    created = api.post("mailboxes/", settings(mail_server))
    assert created.status == 201, created.body
    mailbox = created.body
    assert "password" not in mailbox and mailbox["has_password"] is True
    assert mail_daemon.query("SELECT password_encrypted FROM mailboxes")[0][0] != PASSWORD  # encrypted at rest
    for number in (1, 2):
        mail_server.deliver(invoice(number))
    started = api.post(f"mailboxes/{mailbox['id']}/run/")
    assert started.status == 202
    run = wait_for_run(api, mailbox["id"], started.body["run"])
    assert (run["status"], run["messages"], run["files"], run["error"]) == ("success", 2, 2, "")
    assert run["bytes"] == len(b"invoice 1" * 1000) + len(b"invoice 2" * 1000) and run["finished_at"]
    # the admin (home /) fetches them over SFTP
    result = sftp(
        mail_daemon, "admin", ADMIN_PASSWORD,
        "get invoices/2026-11-03/invoice-1.pdf\nget invoices/2026-11-03/invoice-2.pdf", tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "invoice-2.pdf").read_bytes() == b"invoice 2" * 1000
    assert all("\\Seen" in flags for _, flags in mail_server.flags())
    assert api.get(f"mailboxes/{mailbox['id']}/").body["last_run"]["status"] == "success"


def test_a_failing_mailbox_records_a_clear_error(mail_daemon, mail_server):
    api = signed_in(mail_daemon, "admin", ADMIN_PASSWORD)
    mailbox = api.post("mailboxes/", settings(mail_server, name="Wrong password", password="not-it")).body
    run_id = api.post(f"mailboxes/{mailbox['id']}/run/").body["run"]
    run = wait_for_run(api, mailbox["id"], run_id)
    assert run["status"] == "failed"
    assert "refused the username or password" in run["error"]


@pytest.mark.parametrize(
    "changes,field",
    [
        ({"host": "169.254.169.254"}, "host"),
        ({"security": "ssl3"}, "security"),
        ({"port": 70000}, "port"),
        ({"after": "move", "move_to": ""}, "move_to"),
        ({"source": 999999}, "source"),
        ({"name": ""}, "name"),
        ({"name": "Invoices \u2066fdp.exe\u2069"}, "name"),  # a direction isolate
    ],
)
def test_bad_settings_get_field_errors(mail_daemon, mail_server, changes, field):
    api = signed_in(mail_daemon, "admin", ADMIN_PASSWORD)
    reply = api.post("mailboxes/", settings(mail_server, **changes))
    assert reply.status == 400 and field in reply.body, reply.body


def test_a_mailbox_whose_host_does_not_resolve_yet_is_saved_with_a_warning(mail_daemon, mail_server):
    """A mailbox is often made before its server's name is in the DNS: saved, with a
    warning, disabled or not; its runs and tests say the host does not resolve."""
    api = signed_in(mail_daemon, "admin", ADMIN_PASSWORD)
    for enabled in (False, True):
        reply = api.post("mailboxes/", settings(mail_server, name=f"Future {enabled}", host="imap.not-yet.invalid",
                                                enabled=enabled))  # fmt: skip
        assert reply.status == 201, reply.body
        assert "Cannot resolve the host imap.not-yet.invalid" in reply.body["warning"], reply.body
        assert "The mailbox is saved" in reply.body["warning"]
    run_id = api.post(f"mailboxes/{reply.body['id']}/run/").body["run"]
    run = wait_for_run(api, reply.body["id"], run_id)
    assert run["status"] == "failed" and "Cannot resolve the host" in run["error"], run
    fixed = api.patch(f"mailboxes/{reply.body['id']}/", {"host": "127.0.0.1"})
    assert fixed.status == 200 and "warning" not in fixed.body, fixed.body


INJECTED = "Injected"  # the folder the injected command would make
INJECTION = f"not-it\r\nA1 LOGIN {USER} {PASSWORD}\r\nA2 CREATE {INJECTED}\r\nA3 LOGOUT"


@pytest.mark.parametrize("field", ["password", "username", "folder", "host", "move_to"])
def test_control_characters_in_what_reaches_the_mail_server_are_refused(mail_daemon, mail_server, field):
    api = signed_in(mail_daemon, "admin", ADMIN_PASSWORD)
    changes = {field: f"x\r\nA2 CREATE {INJECTED}"}
    if field == "move_to":
        changes["after"] = "move"
    reply = api.post("mailboxes/", settings(mail_server, name=f"Injected {field}", **changes))
    assert reply.status == 400, reply.body
    assert "control character" in reply.body[field][0] and "line break" in reply.body[field][0]
    assert api.get("mailboxes/").body["count"] == 0 or all(
        m["name"] != f"Injected {field}" for m in api.get("mailboxes/").body["results"]
    )


def test_a_stored_password_with_crlf_reaches_dovecot_as_one_argument(mail_daemon, mail_server):
    """A row saved before such passwords were refused (planted here): the password goes to
    Dovecot as one IMAP string, so Dovecot sees one failed LOGIN and runs nothing else."""
    api = signed_in(mail_daemon, "admin", ADMIN_PASSWORD)
    mailbox = api.post("mailboxes/", settings(mail_server, name="Planted password")).body
    mail_daemon.execute(
        "UPDATE mailboxes SET password_encrypted=? WHERE id=?", mail_daemon.seal(INJECTION), mailbox["id"]
    )
    run = wait_for_run(api, mailbox["id"], api.post(f"mailboxes/{mailbox['id']}/run/").body["run"])
    assert run["status"] == "failed" and "refused the username or password" in run["error"], run
    conn = mail_server.client()
    try:
        _, folders = conn.list()
    finally:
        conn.logout()
    assert not any(INJECTED.encode() in line for line in folders), folders
    assert not (mail_server.maildir / f".{INJECTED}").exists()


def test_mailboxes_are_for_admins_of_their_own_organisation(mail_daemon, mail_server):
    admin = signed_in(mail_daemon, "admin", ADMIN_PASSWORD)
    mailbox = admin.post("mailboxes/", settings(mail_server, name="Private")).body
    mail_daemon.add_profile("plainuser")
    user = signed_in(mail_daemon, "plainuser", "user-password-1")
    assert user.get("mailboxes/").status == 403
    assert user.post(f"mailboxes/{mailbox['id']}/run/").status == 403
    other = mail_daemon.add_organisation("Other Org")
    mail_daemon.add_profile("otheradmin", org_id=other, is_admin=True)
    stranger = signed_in(mail_daemon, "otheradmin", "user-password-1")
    assert stranger.get(f"mailboxes/{mailbox['id']}/").status == 404
    assert stranger.post(f"mailboxes/{mailbox['id']}/run/").status == 404
    assert stranger.delete(f"mailboxes/{mailbox['id']}/").status == 404
    assert stranger.get("mailboxes/").body["count"] == 0
    assert admin.get(f"mailboxes/{mailbox['id']}/").status == 200
