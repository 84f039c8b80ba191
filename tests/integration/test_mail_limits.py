"""Mail floods (issue 21, item 6): password resets, invitations and share-link mails
are rate-limited; past a limit the answer is 429 with Retry-After, and the real SMTP
listener proves how many mails went out. password/reset/ answers 429 only by the
client's address, the same for an account that exists and one that does not."""

from __future__ import annotations

import http.client
import json

import pytest

from ..api_client import Api, signed_in
from ..helpers import ADMIN_PASSWORD, wait_for

RESET_SENT = {"detail": "Password reset link has been sent to your email."}
PASSWORD = "user-password-1"
RESETS_PER_CLIENT, RESETS_PER_EMAIL = 10, 3
INVITES_PER_PROFILE, INVITES_PER_ADMIN, INVITES_PER_EMAIL = 3, 50, 10
SHARE_MAILS_PER_RECIPIENT = 10


@pytest.fixture(scope="module")
def daemon(mail_daemon):
    """The module's daemon mails through the test SMTP listener (tests/conftest.py)."""
    return mail_daemon


def mails_to(smtp, address: str) -> int:
    return sum(1 for _sender, recipients, _message in list(smtp.messages) if address in recipients)


def settled(smtp, daemon, address: str, expected: int, sentinel: str) -> None:
    """Wait for `expected` mails to `address`, then for one mail sent after all of them
    (an invitation to `sentinel`), so a surplus mail would have arrived too."""
    wait_for(lambda: mails_to(smtp, address) >= expected)
    daemon.add_profile(sentinel)
    sentinel_id = daemon.query("SELECT id FROM profiles WHERE username=?", sentinel)[0]["id"]
    assert signed_in(daemon, "admin", ADMIN_PASSWORD).post(f"profiles/{sentinel_id}/invite/").status == 202
    smtp.wait_for(f"{sentinel}@example.com")
    assert mails_to(smtp, address) == expected


def too_many(reply) -> bool:
    retry = reply.headers.get("retry-after", "")
    return reply.status == 429 and retry.isdigit() and 0 < int(retry) <= 3600 and "Try again in" in reply.body["detail"]


def reset_from(daemon, source: str, email: str) -> tuple[int, dict]:
    """POST password/reset/ from another loopback address (a second client)."""
    connection = http.client.HTTPConnection("127.0.0.1", daemon.http_port, timeout=30, source_address=(source, 0))
    try:
        connection.request("POST", "/api/portal/password/reset/", json.dumps({"email": email}),
                           {"Content-Type": "application/json"})  # fmt: skip
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def test_password_resets_are_limited_per_client_and_per_address_without_telling_who_exists(daemon, smtp):
    daemon.add_profile("flooded")
    api = Api(daemon)
    for _ in range(5):  # the address gets 3 mails; the answer never changes
        reply = api.post("password/reset/", {"email": "flooded@example.com"})
        assert (reply.status, reply.body) == (200, RESET_SENT)
    for n in range(RESETS_PER_CLIENT - 5):
        reply = api.post("password/reset/", {"email": f"nobody{n}@example.com"})
        assert (reply.status, reply.body) == (200, RESET_SENT)
    known = api.post("password/reset/", {"email": "flooded@example.com"})
    unknown = api.post("password/reset/", {"email": "nobody-else@example.com"})
    assert too_many(known) and too_many(unknown)
    assert known.body == unknown.body  # the same answer whether the account exists or not
    # another client is not held back by this one
    assert reset_from(daemon, "127.0.0.2", "someone-else@example.com") == (200, RESET_SENT)
    settled(smtp, daemon, "flooded@example.com", RESETS_PER_EMAIL, "sentinel-reset")


def test_invitations_are_limited_per_profile(daemon, smtp):
    admin = signed_in(daemon, "admin", ADMIN_PASSWORD)
    created = admin.post("profiles/", {"username": "invitee", "email": "invitee@example.com"})
    assert created.status == 201  # invitation 1
    for _ in range(INVITES_PER_PROFILE - 1):
        assert admin.post(f"profiles/{created.body['id']}/invite/").status == 202
    refused = admin.post(f"profiles/{created.body['id']}/invite/")
    assert too_many(refused), refused.body
    settled(smtp, daemon, "invitee@example.com", INVITES_PER_PROFILE, "sentinel-invite")


def test_invitations_are_limited_per_address_and_per_admin_before_the_profile_is_made(daemon, smtp):
    daemon.add_profile("bulk", is_admin=True)
    bulk = signed_in(daemon, "bulk", PASSWORD)
    # many profiles with one victim's address
    for n in range(INVITES_PER_EMAIL):
        assert bulk.post("profiles/", {"username": f"victim{n}", "email": "victim@example.com"}).status == 201
    refused = bulk.post("profiles/", {"username": "victim-again", "email": "victim@example.com"})
    assert too_many(refused), refused.body
    assert not daemon.query("SELECT 1 FROM profiles WHERE username='victim-again'")
    # many addresses from one admin
    for n in range(INVITES_PER_ADMIN - INVITES_PER_EMAIL):
        created = bulk.post("profiles/", {"username": f"bulk{n}", "email": f"bulk{n}@example.com"})
        assert created.status == 201, created.body
    refused = bulk.post("profiles/", {"username": "one-too-many", "email": "one-too-many@example.com"})
    assert too_many(refused), refused.body
    assert not daemon.query("SELECT 1 FROM profiles WHERE username='one-too-many'")
    # a profile with a password sends no mail: still allowed
    with_password = {"username": "with-password", "email": "victim@example.com", "password": PASSWORD}
    assert bulk.post("profiles/", with_password).status == 201
    settled(smtp, daemon, "victim@example.com", INVITES_PER_EMAIL, "sentinel-bulk")


def test_share_link_mails_are_limited_per_recipient(daemon, smtp):
    daemon.add_profile("sharer")
    home = daemon.home("sharer")
    home.mkdir(parents=True, exist_ok=True)
    (home / "report.txt").write_text("figures")
    sharer = signed_in(daemon, "sharer", PASSWORD)
    for _ in range(SHARE_MAILS_PER_RECIPIENT):
        assert sharer.post("shares/", {"path": "/report.txt", "recipients": ["reader@example.net"]}).status == 201
    refused = sharer.post("shares/", {"path": "/report.txt", "recipients": ["other@example.net", "reader@example.net"]})
    assert too_many(refused) and "reader@example.net" in refused.body["detail"]
    shares = daemon.query(
        "SELECT COUNT(*) FROM shares s JOIN profiles p ON p.id = s.profile_id WHERE username='sharer'"
    )
    assert shares[0][0] == SHARE_MAILS_PER_RECIPIENT  # the refused link was not made
    assert sharer.post("shares/", {"path": "/report.txt", "recipients": ["other@example.net"]}).status == 201
    settled(smtp, daemon, "reader@example.net", SHARE_MAILS_PER_RECIPIENT, "sentinel-share")
    assert mails_to(smtp, "other@example.net") == 1


def sharer_with_a_file(daemon, username: str):
    daemon.add_profile(username)
    home = daemon.home(username)
    home.mkdir(parents=True, exist_ok=True)
    (home / "report.txt").write_text("figures")
    return signed_in(daemon, username, PASSWORD)


def test_one_inbox_is_counted_once_whatever_its_case_tag_or_dots(daemon, smtp):
    """Issue 40, item 3: victim+1@, Victim@ and (where the provider ignores them) dots
    reach one inbox: together they get what one address may."""
    sharer = sharer_with_a_file(daemon, "tagger")
    spellings = ["inbox@example.org", "Inbox@example.org", "inbox+1@example.org", "INBOX+news@Example.ORG",
                 "inbox+2@example.org", "inbox+3@EXAMPLE.org", "inbox+a.b@example.org", "inbox+@example.org",
                 "Inbox+x@example.org", "inbox+y@example.org"]  # fmt: skip
    assert len(spellings) == SHARE_MAILS_PER_RECIPIENT
    for address in spellings:
        assert sharer.post("shares/", {"path": "/report.txt", "recipients": [address]}).status == 201
    refused = sharer.post("shares/", {"path": "/report.txt", "recipients": ["inbox+fresh@example.org"]})
    assert too_many(refused) and "inbox+fresh@example.org" in refused.body["detail"], refused.body
    # dots are one inbox at the providers that ignore them (and googlemail.com is gmail.com)
    dotted = sharer_with_a_file(daemon, "dotter")
    for n in range(SHARE_MAILS_PER_RECIPIENT):
        address = ["j.doe@gmail.com", "jdoe@googlemail.com", "J.D.O.E+x@gmail.com"][n % 3]
        assert dotted.post("shares/", {"path": "/report.txt", "recipients": [address]}).status == 201
    assert too_many(dotted.post("shares/", {"path": "/report.txt", "recipients": ["jd.oe@gmail.com"]}))
    # elsewhere a dot is part of the name: another inbox
    assert dotted.post("shares/", {"path": "/report.txt", "recipients": ["i.nbox@example.org"]}).status == 201
    to_inbox = lambda: sum(1 for _s, to, _m in list(smtp.messages) for r in to if r.lower().startswith("inbox"))  # noqa: E731
    wait_for(lambda: to_inbox() >= 10)
    settled(smtp, daemon, "i.nbox@example.org", 1, "sentinel-tags")
    assert to_inbox() == 10


def test_one_recipient_domain_gets_at_most_its_share_of_mail(daemon, smtp):
    """Many addresses of one domain are one mail server (a catch-all: one inbox)."""
    sharer = sharer_with_a_file(daemon, "domainer")
    many = [f"user{n}@flood.example" for n in range(50)]
    assert sharer.post("shares/", {"path": "/report.txt", "recipients": many}).status == 201
    refused = sharer.post("shares/", {"path": "/report.txt", "recipients": ["someone-new@flood.example"]})
    assert too_many(refused) and "someone-new@flood.example" in refused.body["detail"], refused.body
    # another domain is not held back
    assert sharer.post("shares/", {"path": "/report.txt", "recipients": ["reader@other.example"]}).status == 201
    flooded = lambda: sum(1 for _s, to, _m in list(smtp.messages) for r in to if r.endswith("@flood.example"))  # noqa: E731
    wait_for(lambda: flooded() >= 50)
    settled(smtp, daemon, "reader@other.example", 1, "sentinel-domain")
    assert flooded() == 50
