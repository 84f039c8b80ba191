"""What the console's browser tests share: signing in and out through the screens."""

from __future__ import annotations

import re

from playwright.sync_api import expect


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
