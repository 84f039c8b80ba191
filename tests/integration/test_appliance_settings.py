"""The public host name and outbound mail set in the console (#41 item 5): the operator
changes them through god/settings/ on a running daemon and the next mail and the next
link use them, without a restart; a key the config sets stays the config's (and the
console is told so); the SMTP password is sealed and never told. Mail arrives at the
real SMTP listener of tests/smtpserver.py."""

from __future__ import annotations

import json
import re

import pytest
from cryptography.fernet import Fernet

from ..api_client import signed_in
from ..helpers import ADMIN_PASSWORD, daemon_with

PASSWORD = "sm7p-Secret-of-the-relay"


@pytest.fixture(scope="module")
def unset_daemon(tmp_path_factory):
    """A daemon whose config sets neither the public host name nor [smtp] (as a fresh install's)."""
    daemon = daemon_with(tmp_path_factory, start=False)
    for name in [name for name in daemon.env if name.startswith(("APPLIANCE_SERVER_PUBLIC", "APPLIANCE_SMTP_"))]:
        del daemon.env[name]
    daemon.start()
    yield daemon
    daemon.stop()


def link_in(message) -> str:
    return re.search(r"https?://\S+", message.get_body(("plain",)).get_content()).group(0)


def test_the_operator_sets_outbound_mail_and_the_next_mails_go_there_without_a_restart(unset_daemon, smtp):
    operator = signed_in(unset_daemon, "admin", ADMIN_PASSWORD)
    before = operator.get("god/settings/").body
    assert before["smtp"]["host"] == {"value": "localhost", "source": "default", "editable": True, "set_by": None}
    assert {w["setting"] for w in before["warnings"]} == {"server.public_hostname", "smtp.host"}

    changed = operator.patch(
        "god/settings/", {"smtp": {"host": "127.0.0.1", "port": smtp.port, "sender": "console@acme.example"}}
    )
    assert changed.status == 200, changed.body
    assert changed.body["smtp"]["port"] == {"value": smtp.port, "source": "console", "editable": True, "set_by": None}
    assert {w["setting"] for w in changed.body["warnings"]} == {"server.public_hostname"}
    assert operator.get("god/mail/").body["sender"] == "console@acme.example"

    tested = operator.post("god/mail/test/", {"to": "console-test@example.com"})
    assert tested.status == 200 and tested.body["sent"] is True, tested.body
    message = smtp.wait_for("console-test@example.com")
    assert message["From"] == "console@acme.example"
    invited = operator.post("profiles/", {"username": "console-invitee", "email": "console-invitee@example.com"})
    assert invited.status == 201 and invited.body["invitation"]["mailed"] is True, invited.body
    invitation = smtp.wait_for("console-invitee@example.com")
    assert invitation["From"] == "console@acme.example" and "/auth/register?" in link_in(invitation)
    envelope = [sender for sender, to, _ in smtp.messages if "console-invitee@example.com" in to]
    assert envelope == ["console@acme.example"]

    logs = operator.get("logs/?action=settings").body["results"]
    assert any(f"mail server port {smtp.port}" in row["message"] for row in logs), logs


def test_the_public_host_name_set_in_the_console_is_in_invitations_share_links_and_the_connect_dialog(
    unset_daemon, smtp
):
    operator = signed_in(unset_daemon, "admin", ADMIN_PASSWORD)
    assert operator.get("dashboard/information/").body["hostname"] == "localhost"
    changed = operator.patch(
        "god/settings/",
        {"server": {"public_hostname": "files.example.com"}, "smtp": {"host": "127.0.0.1", "port": smtp.port}},
    )
    assert changed.status == 200, changed.body
    assert changed.body["server"]["public_hostname"]["value"] == "files.example.com"
    assert changed.body["warnings"] == []

    operator.post("profiles/", {"username": "linked-invitee", "email": "linked-invitee@example.com"})
    link = link_in(smtp.wait_for("linked-invitee@example.com"))
    assert link.startswith(f"http://files.example.com:{unset_daemon.http_port}/auth/register?"), link
    assert operator.get("dashboard/information/").body["hostname"] == "files.example.com"

    (unset_daemon.home("admin")).mkdir(parents=True, exist_ok=True)
    (unset_daemon.home("admin") / "plan.txt").write_text("the plan")
    share = operator.post("shares/", {"path": "/plan.txt"})
    assert share.status == 201, share.body
    assert (
        share.body["url"]
        == f"http://files.example.com:{unset_daemon.http_port}/auth/shared?token={share.body['token']}"
    )

    with_port = operator.patch("god/settings/", {"server": {"public_hostname": "files.example.com:8443"}})
    assert with_port.status == 200, with_port.body
    share = operator.post("shares/", {"path": "/plan.txt"})
    assert share.body["url"].startswith("http://files.example.com:8443/auth/shared?token="), share.body
    assert operator.get("dashboard/information/").body["hostname"] == "files.example.com"  # SFTP's host: no port
    behind_a_proxy = operator.patch("god/settings/", {"server": {"public_hostname": "files.example.com:443"}})
    assert behind_a_proxy.status == 200, behind_a_proxy.body
    share = operator.post("shares/", {"path": "/plan.txt"})
    assert share.body["url"].startswith("https://files.example.com/auth/shared?token="), share.body

    back = operator.patch("god/settings/", {"server": {"public_hostname": None}})
    assert back.body["server"]["public_hostname"] == {
        "value": "localhost", "source": "default", "editable": True, "set_by": None
    }  # fmt: skip
    assert [w["setting"] for w in back.body["warnings"]] == ["server.public_hostname"]


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"server": {"public_hostname": "https://files.example.com"}}, "server.public_hostname", "Leave out https://"),
        ({"server": {"public_hostname": "files.example.com/portal"}}, "server.public_hostname", "Leave out the path"),
        ({"server": {"public_hostname": "files.example.com\r\nX: y"}}, "server.public_hostname", "control character"),
        ({"server": {"public_hostname": "files.example.com:99999"}}, "server.public_hostname", "port from 1"),
        ({"server": {"public_hostname": ""}}, "server.public_hostname", "Enter the host name"),
        ({"smtp": {"port": 0}}, "smtp.port", ""),
        ({"smtp": {"host": "smtp.example.com:587"}}, "smtp.host", "port in its own field"),
        ({"smtp": {"host": "169.254.169.254"}}, "smtp.host", "Not allowed"),
        ({"smtp": {"sender": "not an address"}}, "smtp.sender", "like portal@example.com"),
        ({"smtp": {"username": "portal\nRCPT TO:<x@y>"}}, "smtp.username", "control character"),
    ],
)
def test_wrong_values_are_refused_naming_the_field(unset_daemon, body, field, words):
    operator = signed_in(unset_daemon, "admin", ADMIN_PASSWORD)
    refused = operator.patch("god/settings/", body)
    assert refused.status == 400 and words in " ".join(refused.body[field]), refused.body


def test_a_key_the_config_sets_is_the_configs_and_the_console_is_told(mail_daemon):
    operator = signed_in(mail_daemon, "admin", ADMIN_PASSWORD)
    settings = operator.get("god/settings/").body
    assert settings["smtp"]["host"] == {
        "value": "127.0.0.1", "source": "config", "editable": False, "set_by": "environment variable APPLIANCE_SMTP_HOST"
    }  # fmt: skip
    assert settings["smtp"]["username"]["source"] == "default" and settings["smtp"]["username"]["editable"] is True
    assert "smtp.host" not in {w["setting"] for w in settings["warnings"]}
    refused = operator.patch("god/settings/", {"smtp": {"host": "smtp.example.com"}})
    assert refused.status == 400
    assert refused.body["smtp.host"] == [
        "The config file sets [smtp] host (environment variable APPLIANCE_SMTP_HOST): change it there."
    ]
    assert operator.get("god/mail/").body["host"] == "127.0.0.1"


def test_only_the_operator_sees_and_changes_the_settings(unset_daemon):
    unset_daemon.add_profile("settings-admin", is_admin=True)
    unset_daemon.add_profile("settings-user")
    for username in ("settings-admin", "settings-user"):
        other = signed_in(unset_daemon, username, "user-password-1")
        assert other.get("god/settings/").status == 403
        assert other.patch("god/settings/", {"server": {"public_hostname": "evil.example"}}).status == 403
    operator = signed_in(unset_daemon, "admin", ADMIN_PASSWORD)
    assert operator.get("god/settings/").body["server"]["public_hostname"]["value"] != "evil.example"


def test_the_smtp_password_is_sealed_and_never_told(unset_daemon):
    operator = signed_in(unset_daemon, "admin", ADMIN_PASSWORD)
    changed = operator.patch("god/settings/", {"smtp": {"username": "portal", "password": PASSWORD}})
    assert changed.status == 200, changed.body
    assert changed.body["smtp"]["password"] == {"set": True, "source": "console", "editable": True, "set_by": None}
    kept = operator.patch("god/settings/", {"smtp": {"password": ""}})  # the form's "leave empty to keep"
    assert kept.body["smtp"]["password"]["set"] is True
    for reply in (changed, kept, operator.get("god/settings/"), operator.get("god/mail/"), operator.get("logs/")):
        assert PASSWORD.encode() not in reply.raw
    assert any("mail server password changed" in row["message"] for row in operator.get("logs/").body["results"])
    stored = unset_daemon.query("SELECT value FROM appliance_settings WHERE key = 'smtp.password'")[0][0]
    key = (unset_daemon.data_dir / "secrets.key").read_bytes().strip()
    assert Fernet(key).decrypt(json.loads(stored).encode()).decode() == PASSWORD
    for path in unset_daemon.data_dir.glob("appliance.db*"):  # the database and its write-ahead log
        assert PASSWORD.encode() not in path.read_bytes(), path
    assert PASSWORD not in unset_daemon.output()
    cleared = operator.patch("god/settings/", {"smtp": {"username": None, "password": None}})
    assert cleared.body["smtp"]["password"] == {"set": False, "source": "default", "editable": True, "set_by": None}
