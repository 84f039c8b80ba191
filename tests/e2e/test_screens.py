"""Every main screen in Chromium at 1280 px and at 800 px (the side menu a drawer),
saved under test-artifacts/screenshots/ to look at; each must show its content."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from ..helpers import ADMIN_PASSWORD
from .conftest import NARROW, WIDE, screenshot, screenshots
from .helpers_console import arrange, sign_in, sign_out, wait_until


def test_every_main_screen_at_1280_and_800_px(page, console):
    ids = arrange(console)
    problems = []  # CSP violations and uncaught errors anywhere on the tour
    page.on("console", lambda m: problems.append(m.text) if "Content Security Policy" in m.text else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    sign_in(page, console, "admin", ADMIN_PASSWORD)
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()
    heading = lambda name: page.get_by_role("heading", name=name, exact=True)  # noqa: E731
    screens = [
        ("dashboard", "/", heading("Overview")),
        ("sources", "/admin/sources", page.get_by_role("cell", name="Default")),
        ("source-create", "/admin/sources/create", heading("Create a source")),
        ("source-detail", f"/admin/sources/{ids['source']}", heading("Default")),
        ("profiles", "/admin/profiles", page.get_by_role("cell", name="walter", exact=True)),
        ("profile-create", "/admin/profiles/create", heading("Create a profile")),
        ("profile-detail", f"/admin/profiles/{ids['profile']}", heading("walter")),
        ("tokens", "/admin/tokens", page.get_by_role("cell", name="nightly sync")),
        ("token-create", "/admin/tokens/create", heading("Create an API token")),
        ("token-detail", f"/admin/tokens/{ids['token']}", heading("nightly sync")),
        ("mailboxes", "/admin/mailboxes", page.get_by_role("cell", name="Invoices")),
        ("mailbox-create", "/admin/mailboxes/create", heading("Create a mailbox")),
        ("mailbox-detail", f"/admin/mailboxes/{ids['mailbox']}", heading("Invoices")),
        ("mailbox-runs", f"/admin/mailboxes/{ids['mailbox']}/runs", page.get_by_text("No runs yet.")),
        ("organisation", "/admin/organisation", heading("Organisation settings")),
        ("logs", "/admin/logs", page.get_by_role("cell", name=re.compile("signed in")).first),
        ("god", "/admin/god", page.get_by_role("cell", name="Globex", exact=True)),
        ("god-logs", f"/admin/god/{ids['org']}/logs", heading("Logs of Globex")),
        ("user-terms", "/user-terms", page.get_by_text("Be kind to the files.")),
        ("not-found", "/no/such/screen", heading("Page not found")),
        ("error", "/error", heading("Something went wrong")),
    ]
    for name, path, ready in screens:
        page.goto(console.url + path)
        expect(ready).to_be_visible()
        expect(page).to_have_title(re.compile("File transfer portal$"))
        screenshots(page, name)
    page.goto(console.url + "/")
    expect(page.get_by_test_id("transfers-chart").locator("svg").first).to_be_visible()

    # the drawer: closed below 1024 px, opened by the menu toggle, closed by navigating
    page.set_viewport_size(NARROW)
    side = page.get_by_test_id("side-menu")
    expect(side).not_to_be_in_viewport()
    page.get_by_role("button", name="Toggle menu").click()
    expect(side).to_be_in_viewport()
    screenshot(page, "drawer-open-800")
    side.get_by_role("link", name="Logs").click()
    expect(page).to_have_url(re.compile(r"/admin/logs$"))
    expect(side).not_to_be_in_viewport()
    page.set_viewport_size(WIDE)

    page.get_by_role("button", name="How do I connect?").click()
    expect(page.get_by_role("dialog", name="How do I connect?")).to_be_visible()
    screenshots(page, "connect-dialog")
    page.keyboard.press("Escape")
    page.locator(".user-menu > button").click()
    menu = page.get_by_role("menu")
    for item in ("Logout", "Documentation", "Organisation settings", "User terms"):
        expect(menu.get_by_role("menuitem", name=item)).to_be_visible()
    screenshot(page, "user-menu")
    page.keyboard.press("Escape")

    sign_out(page)
    sign_in(page, console, "walter", "user-password-1")
    expect(page.get_by_role("cell", name="notes.txt", exact=True)).to_be_visible()
    screenshots(page, "fileviewer")
    page.get_by_role("button", name="reports", exact=True).click()
    expect(page).to_have_url(re.compile(r"/fileviewer\?path=%2Freports$"))
    expect(page.get_by_role("cell", name="123.5 KB")).to_be_visible()
    screenshots(page, "fileviewer-folder")
    sign_out(page)

    auth_screens = [
        ("login", "/auth/login", heading("Sign in")),
        ("forgot-password", "/auth/forgot-password", heading("Forgot password")),
        ("register", "/auth/register?uid=x&token=y", heading("Welcome: choose your password")),
        ("reset-confirm", "/auth/MQ/abc-123", heading("Choose a new password")),
        ("billing", "/auth/billing", heading("Payment missing")),
        ("shared-without-token", "/auth/shared", heading("Shared files")),
    ]
    for name, path, ready in auth_screens:
        page.goto(console.url + path)
        expect(ready).to_be_visible()
        screenshots(page, name)
    assert problems == []


def test_scroll_resets_on_navigation(page, console):
    for n in range(120):
        console.add_profile(f"user{n:03}")
    sign_in(page, console, "admin", ADMIN_PASSWORD)
    page.goto(console.url + "/admin/profiles")
    expect(page.get_by_role("cell", name="user000", exact=True)).to_be_visible()
    page.mouse.wheel(0, 3000)
    wait_until(page, "window.scrollY > 0")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Logs").click()
    expect(page.get_by_role("heading", name="Logs", exact=True)).to_be_visible()
    assert page.evaluate("window.scrollY") == 0
