"""What the console's browser tests share: signing in and out through the screens."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from ..api_client import signed_in
from ..helpers import ADMIN_PASSWORD


def sign_in(page, console, username: str, password: str) -> None:
    """Sign in through the form and wait until the console has landed past it."""
    page.goto(console.url + "/auth/login")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    expect(page).not_to_have_url(re.compile(r"/auth/login"))


def sign_out(page) -> None:
    page.locator(".user-menu > button").click()
    page.get_by_role("menuitem", name="Logout").click()
    expect(page).to_have_url(re.compile(r"/auth/login$"))


def menu(page, item: str) -> None:
    """Follow a side-menu link."""
    page.get_by_role("navigation", name="Main").get_by_role("link", name=item, exact=True).click()


def wait_until(page, expression: str, timeout: float = 10.0) -> None:
    """Wait until `expression` is true in the page. Playwright's wait_for_function
    polls with eval inside the page, which the console's CSP refuses (no
    'unsafe-eval') whenever the first check is false: poll from here instead."""
    waited = 0.0
    while not page.evaluate(expression):
        if waited >= timeout:
            raise AssertionError(f"still false after {timeout} s: {expression}")
        page.wait_for_timeout(50)
        waited += 0.05


def arrange(console) -> dict:
    """Rows for every screen to show something."""
    console.execute(
        "UPDATE organisations SET status = 'trial', trial_ends_at = '2099-01-01T00:00:00Z', "
        "user_terms = 'Be kind to the files.' WHERE id = ?",
        console.default_org(),
    )  # fmt: skip
    walter = console.add_profile("walter")
    home = console.home("walter")
    (home / "reports").mkdir(parents=True)
    (home / "reports" / "q1.pdf").write_bytes(b"x" * 123_456)
    (home / "notes.txt").write_text("hello")
    # a transfer: the dashboard draws its chart (with none it says there are none yet)
    assert signed_in(console, "walter", "user-password-1").get("files/download/?path=/notes.txt").status == 200
    api = signed_in(console, "admin", ADMIN_PASSWORD)
    source = api.get("sources/").body["results"][0]["id"]
    token = api.post("tokens/", {"name": "nightly sync", "scopes": ["files"]}).body["id"]
    console.execute(
        "INSERT INTO mailboxes (org_id, name, host, port, username, source_id, created_at) "
        "VALUES (?, 'Invoices', 'imap.example.com', 993, 'invoices', ?, '2026-01-01T00:00:00Z')",
        console.default_org(), source,
    )  # fmt: skip
    mailbox = console.query("SELECT id FROM mailboxes WHERE name = 'Invoices'")[0][0]
    other = console.add_organisation("Globex", status="trial", trial_ends_at="2099-01-01T00:00:00Z")
    return {"profile": walter, "source": source, "token": token, "mailbox": mailbox, "org": other}
