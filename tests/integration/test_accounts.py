"""Password resets and invitations by mail, through a real SMTP listener."""

from __future__ import annotations

import re
import urllib.parse

import pytest

from ..api_client import Api, signed_in
from ..helpers import ADMIN_PASSWORD, free_port, wait_for

RESET_SENT = "Password reset link has been sent to your email."


def link_in(message) -> str:
    text = message.get_body(("plain",)).get_content()
    return re.search(r"https?://\S+", text).group(0)


def accept_invitation(daemon, link: str, password: str):
    """Choose a password from an invitation link, as its page does: the API's answer."""
    params = urllib.parse.parse_qs(urllib.parse.urlparse(link).query)
    return Api(daemon).post(
        "password/reset/confirm/",
        {"uid": params["uid"][0], "token": params["token"][0], "new_password1": password, "new_password2": password},
    )


def test_a_reset_link_sets_a_new_password_once(mail_daemon, smtp):
    mail_daemon.add_profile("forgetful")
    api = Api(mail_daemon)
    known = api.post("password/reset/", {"email": "forgetful@example.com"})
    unknown = api.post("password/reset/", {"email": "nobody@example.com"})
    assert known.status == unknown.status == 200
    assert known.body == unknown.body == {"detail": RESET_SENT}  # no account enumeration
    message = smtp.wait_for("forgetful@example.com")
    assert message["From"] == "portal@acme.example" and message["Subject"] == "Reset your password"
    assert message.get_body(("html",)) is not None
    link = link_in(message)
    uid, token = re.search(r"/auth/([^/]+)/([^/\s]+)$", link).groups()
    assert link.startswith("http://127.0.0.1:")
    differ = api.post("password/reset/confirm/", {"uid": uid, "token": token, "new_password1": "brand-new-pass-1",
                                                  "new_password2": "something-else"})  # fmt: skip
    assert differ.status == 400 and "new_password2" in differ.body
    done = api.post("password/reset/confirm/", {"uid": uid, "token": token, "new_password1": "brand-new-pass-1",
                                                "new_password2": "brand-new-pass-1"})  # fmt: skip
    assert done.status == 200
    assert Api(mail_daemon).login("forgetful", "brand-new-pass-1").status == 200
    again = api.post("password/reset/confirm/", {"uid": uid, "token": token, "new_password1": "another-pass-12",
                                                 "new_password2": "another-pass-12"})  # fmt: skip
    assert again.status == 400 and "token" in again.body  # single use
    tampered = api.post("password/reset/confirm/", {"uid": uid, "token": token[:-1] + "0", "new_password1": "x" * 12,
                                                    "new_password2": "x" * 12})  # fmt: skip
    assert tampered.status == 400


def test_a_stored_address_with_crlf_never_reaches_the_smtp_dialogue(mail_daemon, smtp):
    """A profile saved before such addresses were refused (planted here): an invitation
    to it is no 500, and nothing is sent, neither to it nor to the injected recipient;
    the log says why. (password/reset/ cannot even name such an address: its email
    field is refused as not an address, test_http_types.)"""
    planted = "victim@example.com\r\nRCPT TO:<evil@evil.example>\r\nBcc: evil@evil.example"
    mail_daemon.add_profile("planted-mail")
    mail_daemon.execute("UPDATE profiles SET email=? WHERE username=?", planted, "planted-mail")
    admin = signed_in(mail_daemon, "admin", ADMIN_PASSWORD)
    planted_id = mail_daemon.query("SELECT id FROM profiles WHERE username = 'planted-mail'")[0][0]
    assert admin.post(f"profiles/{planted_id}/invite/", {}).status < 500
    wait_for(lambda: "not sent: its address holds a control character" in mail_daemon.output())
    mail_daemon.add_profile("after-planted")  # a mail queued after it is delivered: the listener saw all before
    assert Api(mail_daemon).post("password/reset/", {"email": "after-planted@example.com"}).status == 200
    smtp.wait_for("after-planted@example.com")
    assert not [m for m in smtp.messages if {"evil@evil.example", "victim@example.com"} & set(m[1])], smtp.messages
    assert not [m for m in smtp.messages if "evil" in str(m[2].get("Bcc", ""))]


def test_an_invitation_lets_a_new_person_choose_a_password(mail_daemon, smtp):
    admin = signed_in(mail_daemon, "admin", ADMIN_PASSWORD)
    created = admin.post("profiles/", {"username": "invitee", "email": "invitee@example.com"})
    assert created.status == 201 and created.body["has_password"] is False
    assert created.body["invitation"] == {"mailed": True, "detail": "An invitation was sent to invitee@example.com."}
    assert Api(mail_daemon).login("invitee", "").status in (400, 401)
    message = smtp.wait_for("invitee@example.com")
    link = link_in(message)
    assert "/auth/register?" in link
    done = accept_invitation(mail_daemon, link, "chosen-password")
    assert done.status == 200
    assert Api(mail_daemon).login("invitee", "chosen-password").status == 200


def test_a_signed_in_user_changes_their_password_and_other_sessions_end(mail_daemon):
    import time

    mail_daemon.add_profile("changing")
    elsewhere = signed_in(mail_daemon, "changing", "user-password-1")
    here = signed_in(mail_daemon, "changing", "user-password-1")
    wrong = here.post("password/change/", {"old_password": "nope-nope", "new_password1": "next-password-1",
                                           "new_password2": "next-password-1"})  # fmt: skip
    assert wrong.status == 400 and "old_password" in wrong.body
    time.sleep(1.1)  # tokens carry whole seconds: the change must come after the other session's token
    done = here.post("password/change/", {"old_password": "user-password-1", "new_password1": "next-password-1",
                                          "new_password2": "next-password-1"})  # fmt: skip
    assert done.status == 200 and done.body["access"]
    assert Api(mail_daemon, done.body["access"]).get("organisation/").status == 200
    assert elsewhere.get("organisation/").status == 401
    assert Api(mail_daemon).login("changing", "next-password-1").status == 200


def test_the_operator_sees_the_mail_state_and_a_test_mail_arrives(mail_daemon, smtp):
    operator = signed_in(mail_daemon, "admin", ADMIN_PASSWORD)
    mail_daemon.add_profile("plain-admin", is_admin=True)
    plain_admin = signed_in(mail_daemon, "plain-admin", "user-password-1")
    assert plain_admin.get("god/mail/").status == 403 and plain_admin.post("god/mail/test/", {}).status == 403
    state = operator.get("god/mail/").body
    assert (state["host"], state["port"], state["sender"]) == ("127.0.0.1", smtp.port, "portal@acme.example")
    assert "password" not in state
    tested = operator.post("god/mail/test/", {"to": "postmaster@example.com"})
    assert tested.status == 200 and tested.body["sent"] is True and tested.body["error"] is None, tested.body
    assert smtp.wait_for("postmaster@example.com")["Subject"] == "Test mail from the file transfer appliance"
    state = operator.get("god/mail/").body
    assert state["last_success_to"] == "postmaster@example.com" and state["last_success_at"], state
    bad = operator.post("god/mail/test/", {"to": "not an address"})
    assert bad.status == 400 and "to" in bad.body, bad.body


@pytest.fixture(scope="module")
def unmailed_daemon(daemon_factory):
    """A daemon whose [smtp] points at a port where nothing listens (as the default localhost:25 often does)."""
    return daemon_factory(smtp__host="127.0.0.1", smtp__port=free_port())


def test_an_invitation_that_could_not_be_mailed_gives_its_admin_the_link(unmailed_daemon):
    daemon = unmailed_daemon
    operator = signed_in(daemon, "admin", ADMIN_PASSWORD)
    created = operator.post("profiles/", {"username": "unmailed", "email": "unmailed@example.com"})
    assert created.status == 201, created.body
    invitation = created.body["invitation"]
    assert invitation["mailed"] is False and invitation["error"], invitation
    assert "could not be mailed to unmailed@example.com" in invitation["detail"]
    done = accept_invitation(daemon, invitation["link"], "chosen-password")
    assert done.status == 200 and Api(daemon).login("unmailed", "chosen-password").status == 200
    assert any("could not be mailed to unmailed@example.com" in row["message"] for row in daemon.logs("profile"))

    # the invite button says so too; a profile with more power than the admin gets no link
    daemon.add_profile("second-admin", is_admin=True)
    second = signed_in(daemon, "second-admin", "user-password-1")
    again = second.post(f"profiles/{created.body['id']}/invite/")
    assert again.status == 202 and again.body["mailed"] is False and "/auth/register?" in again.body["link"]
    operator_id = daemon.query("SELECT id FROM profiles WHERE username = 'admin'")[0]["id"]
    refused = second.post(f"profiles/{operator_id}/invite/")
    assert refused.status == 403 and "link" not in refused.body, refused.body

    # the operator sees the failure, and a test mail fails with the reason
    state = operator.get("god/mail/").body
    assert state["last_error_to"] == "unmailed@example.com" and state["last_error"] and state["last_success_at"] is None
    tested = operator.post("god/mail/test/", {})
    assert tested.status == 200 and tested.body["sent"] is False and tested.body["to"] == "admin@example.com"
    assert tested.body["error"] and tested.body["mail"]["last_error_to"] == "admin@example.com", tested.body


def test_test_mails_are_limited(unmailed_daemon):
    operator = signed_in(unmailed_daemon, "admin", ADMIN_PASSWORD)
    sent = [operator.post("god/mail/test/", {"to": "limit@example.com"}).status for _ in range(11)]
    assert 429 in sent and sent.index(429) <= 10, sent
    limited = operator.post("god/mail/test/", {"to": "limit@example.com"})
    assert limited.status == 429 and int(limited.headers["retry-after"]) > 0


def org_with_invited_admin(operator, name: str, username: str):
    return operator.post(
        "god/organisations/",
        {"name": name, "admin": {"username": username, "email": f"{username}@example.com", "password": None}},
    )


def test_a_new_organisations_first_admin_is_invited_by_mail(mail_daemon, smtp):
    operator = signed_in(mail_daemon, "admin", ADMIN_PASSWORD)
    created = org_with_invited_admin(operator, "Invited Org", "firstboss")
    assert created.status == 201, created.body
    assert created.body["invitation"] == {"mailed": True, "detail": "An invitation was sent to firstboss@example.com."}
    done = accept_invitation(mail_daemon, link_in(smtp.wait_for("firstboss@example.com")), "first-boss-pass-1")
    assert done.status == 200, done.body
    boss = signed_in(mail_daemon, "firstboss", "first-boss-pass-1")
    assert boss.get("organisation/").body[0]["name"] == "Invited Org"
    told = [r["message"] for r in operator.get(f"god/organisations/{created.body['id']}/logs/").body["results"]]
    assert any("invited firstboss, the first admin, by mail" in m for m in told), told


def test_a_new_organisations_admin_whose_mail_failed_gets_the_link_through_the_operator(unmailed_daemon):
    operator = signed_in(unmailed_daemon, "admin", ADMIN_PASSWORD)
    created = org_with_invited_admin(operator, "Unmailed Org", "lostboss")
    assert created.status == 201, created.body
    invitation = created.body["invitation"]
    assert invitation["mailed"] is False and "could not be mailed to lostboss@example.com" in invitation["detail"]
    done = accept_invitation(unmailed_daemon, invitation["link"], "lost-boss-pass-1")
    assert done.status == 200 and Api(unmailed_daemon).login("lostboss", "lost-boss-pass-1").status == 200


def test_a_share_link_mail_says_whether_it_was_sent(mail_daemon, smtp, unmailed_daemon):
    """A link mailed to recipients answers, per recipient, whether the mail server took it;
    one that failed is told (with the link to hand over) and audited as failed, not as mailed."""
    for daemon, mailed in ((mail_daemon, True), (unmailed_daemon, False)):
        daemon.add_profile("sharer")
        daemon.home("sharer").mkdir(parents=True, exist_ok=True)
        (daemon.home("sharer") / "report.txt").write_text("the report")
        sharer = signed_in(daemon, "sharer", "user-password-1")
        made = sharer.post("shares/", {"path": "/report.txt", "recipients": ["reader@example.com"]})
        assert made.status == 201, made.body
        [answer] = made.body["mail"]
        assert answer["to"] == "reader@example.com" and answer["sent"] is mailed, answer
        assert (answer["error"] is None) is mailed and made.body["url"], made.body
        told = [row["message"] for row in daemon.logs("share")]
        if mailed:
            assert link_in(smtp.wait_for("reader@example.com")) == made.body["url"]
            assert any("mailed the link of share" in m for m in told) and not any("could not" in m for m in told)
        else:
            assert any("could not be mailed to reader@example.com" in m for m in told), told
            assert not any("sharer mailed the link" in m for m in told), told
