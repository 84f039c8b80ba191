"""The console tells people what is going on: why a sign-in was refused, an
expired trial in the operator's list, the state of outbound mail (with a real SMTP
listener, and with a port where nothing listens) and an invitation that could not
be mailed, whose link the admin copies."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from playwright.sync_api import expect

from ..api_client import Api
from ..helpers import ADMIN_PASSWORD, daemon_with, free_port, now_iso
from ..smtpserver import SmtpServer
from .conftest import screenshot
from .helpers_console import menu, sign_in

PASSWORD = "user-password-1"
WRONG = "These credentials do not match our records."


def _try_login(page, console, username: str, password: str) -> None:
    page.goto(console.url + "/auth/login")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()


def _ban(console, username: str) -> None:
    """Wrong passwords for `username` from 127.0.0.1 until the appliance bans that name
    there: ten at once (their growing delays overlap), then one at a time."""

    def banned() -> bool:
        return Api(console).login(username, PASSWORD).body.get("code") == "banned"

    with ThreadPoolExecutor(10) as pool:
        list(pool.map(lambda _: Api(console).login(username, "wrong-password"), range(10)))
    for _ in range(3):
        if banned():
            return
        Api(console).login(username, "wrong-password")
    assert banned()


def test_the_login_page_says_why_a_sign_in_was_refused(page, console):
    _try_login(page, console, "admin", "wrong-password")
    expect(page.get_by_role("alert")).to_have_text(WRONG)
    _try_login(page, console, "nobody-at-all", "wrong-password")  # the same words: no account enumeration
    expect(page.get_by_role("alert")).to_have_text(WRONG)

    # a trial that ran out is payment missing, not a wrong password
    lapsed = console.add_organisation("Lapsed Trial", status="trial", trial_ends_at=now_iso(-timedelta(days=1)))
    console.add_profile("lapsed", org_id=lapsed, is_admin=True)
    _try_login(page, console, "lapsed", PASSWORD)
    expect(page).to_have_url(re.compile(r"/auth/billing$"))
    expect(page.get_by_role("heading", name="Payment missing")).to_be_visible()
    expect(page.get_by_text("whose free trial has ended")).to_be_visible()
    screenshot(page, "login-refused-billing")

    gone = console.add_organisation("Gone Corp", status="deleted")
    console.add_profile("gone", org_id=gone)
    _try_login(page, console, "gone", PASSWORD)
    expect(page.get_by_role("alert")).to_contain_text("Your organisation has been deleted")

    console.add_profile("switched-off", active=False)
    _try_login(page, console, "switched-off", PASSWORD)
    expect(page.get_by_role("alert")).to_have_text("This account is disabled. Ask your administrator to enable it.")

    console.add_profile("guessed")
    _ban(console, "guessed")
    _try_login(page, console, "guessed", PASSWORD)  # even the right password, while the ban lasts
    alert = page.get_by_role("alert")
    expect(alert).to_contain_text("Too many failed sign-ins for this account from 127.0.0.1: try again in")
    expect(alert).to_contain_text("You can sign in again at")
    screenshot(page, "login-refused-ban")
    expect(page).to_have_url(re.compile(r"/auth/login$"))


def test_the_operator_sees_an_expired_trial_as_expired(page, console):
    console.add_organisation("Expired Co", status="trial", trial_ends_at=now_iso(-timedelta(days=3)))
    console.add_organisation("Trying Co", status="trial", trial_ends_at=now_iso(timedelta(days=5, hours=1)))
    sign_in(page, console, "admin", ADMIN_PASSWORD)
    menu(page, "Organisations")
    listed = page.get_by_role("region", name="Organisations")  # not the Local folders' rows
    expired = listed.get_by_role("row", name=re.compile("Expired Co"))
    expect(expired.get_by_role("cell", name="Trial expired", exact=True)).to_be_visible()
    expect(expired.get_by_role("cell", name=re.compile(r"^Ended \S"))).to_be_visible()
    expect(expired).not_to_contain_text("days left")
    trying = listed.get_by_role("row", name=re.compile("Trying Co"))
    expect(trying.get_by_role("cell", name="Trial", exact=True)).to_be_visible()
    expect(trying.get_by_role("cell", name=re.compile(r"^6 days left \(ends "))).to_be_visible()
    screenshot(page, "operator-expired-trial")


def _mail_console(tmp_path, port: int):
    daemon = daemon_with(tmp_path, smtp__host="127.0.0.1", smtp__port=port)
    daemon.url = f"http://127.0.0.1:{daemon.http_port}"
    return daemon


@pytest.fixture
def smtp():
    server = SmtpServer()
    yield server
    server.stop()


@pytest.fixture
def mailing_console(tmp_path, console_built, smtp):
    """A console whose [smtp] is a real SMTP listener."""
    daemon = _mail_console(tmp_path, smtp.port)
    yield daemon
    daemon.stop()


@pytest.fixture
def unmailed_console(tmp_path, console_built):
    """A console whose [smtp] points at a port where nothing listens."""
    daemon = _mail_console(tmp_path, free_port())
    yield daemon
    daemon.stop()


def test_the_operator_sees_mail_working_after_a_test_mail(page, mailing_console, smtp):
    sign_in(page, mailing_console, "admin", ADMIN_PASSWORD)
    menu(page, "Organisations")
    mail = page.get_by_test_id("mail-state")
    expect(mail.get_by_role("heading", name="Outbound mail")).to_be_visible()
    expect(mail).to_contain_text("Not tried yet")
    expect(mail).to_contain_text(f"127.0.0.1:{smtp.port}")
    mail.get_by_role("button", name="Send a test mail").click()
    expect(page.get_by_test_id("notification").filter(has_text="Test mail sent to admin@example.com")).to_be_visible()
    assert smtp.wait_for("admin@example.com")["Subject"] == "Test mail from the file transfer appliance"
    expect(mail).to_contain_text("Working")
    expect(mail).to_contain_text(re.compile(r"Last delivered.+to admin@example\.com"))
    screenshot(page, "operator-mail-working")


def test_the_operator_sees_mail_failing_and_why(page, unmailed_console):
    sign_in(page, unmailed_console, "admin", ADMIN_PASSWORD)
    menu(page, "Organisations")
    mail = page.get_by_test_id("mail-state")
    mail.get_by_label("Test mail to").fill("ops@example.com")
    mail.get_by_role("button", name="Send a test mail").click()
    expect(
        page.get_by_test_id("notification").filter(has_text="The test mail to ops@example.com failed")
    ).to_be_visible()
    expect(mail).to_contain_text("Failing")
    expect(mail).to_contain_text(re.compile(r"Last error.+to ops@example\.com: \S"))
    screenshot(page, "operator-mail-failing")


def test_an_invitation_that_was_not_mailed_offers_its_link_to_copy(page, unmailed_console, browser):
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=unmailed_console.url)
    sign_in(page, unmailed_console, "admin", ADMIN_PASSWORD)
    page.goto(unmailed_console.url + "/admin/profiles/create")
    page.get_by_label("Username", exact=True).fill("invitee")
    page.get_by_label("Email", exact=True).fill("invitee@example.com")
    page.get_by_role("button", name="Create").click()  # no password: an invitation
    dialog = page.get_by_role("dialog", name="The invitation was not mailed")
    expect(dialog).to_contain_text("could not be mailed to invitee@example.com")
    link = dialog.get_by_label("Invitation link").input_value()
    assert "/auth/register?" in link and "token=" in link, link
    screenshot(page, "profile-invitation-not-mailed")
    dialog.get_by_role("button", name="Copy link").click()
    expect(page.get_by_test_id("notification").filter(has_text="Copied to the clipboard")).to_be_visible()
    assert page.evaluate("navigator.clipboard.readText()") == link
    dialog.get_by_role("button", name="Close").click()
    expect(dialog).to_be_hidden()
    expect(page.get_by_role("heading", name="invitee")).to_be_visible()

    # the link, handed over, lets the person choose a password
    invitee = browser.new_page()
    try:
        invitee.goto(link)
        invitee.get_by_label("New password").fill("chosen-password-1")
        invitee.get_by_label("Repeat the password").fill("chosen-password-1")
        invitee.get_by_role("button", name="Set password").click()
        expect(invitee.get_by_text("Your password is set.")).to_be_visible()
    finally:
        invitee.close()
    assert Api(unmailed_console).login("invitee", "chosen-password-1").status == 200
