"""A new admin's first hour in the console (#41): an organisation made without its
admin's password hands the operator the invitation's link when mail fails; every
sign-in password field says the rule; an ended trial is told as ended; only a
profile without a password is offered an invitation; the branding colour reaches
the header and the buttons; a day-one dashboard says it has no transfers yet, then
shows them by the day in readable labels. One daemon for the module, whose mail
server is a port where nothing listens."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import expect

from ..api_client import MULTIPART, Api, multipart, signed_in
from ..helpers import ADMIN_PASSWORD, daemon_with, free_port, now_iso
from .conftest import screenshot
from .helpers_console import menu, sign_in

RULE = "At least 12 characters; not a common password."


@pytest.fixture(scope="module")
def console(tmp_path_factory, console_built):
    daemon = daemon_with(tmp_path_factory, smtp__host="127.0.0.1", smtp__port=free_port())
    daemon.url = f"http://127.0.0.1:{daemon.http_port}"
    yield daemon
    daemon.stop()


def notification(page, text):
    return page.get_by_test_id("notification").filter(has_text=text)


def test_an_organisation_made_without_a_password_hands_over_its_admins_invitation(page, console, browser):
    sign_in(page, console, "admin", ADMIN_PASSWORD)
    menu(page, "Organisations")
    page.get_by_role("button", name="Create", exact=True).click()
    form = page.get_by_role("dialog", name="Create an organisation")
    form.get_by_label("Name", exact=True).fill("Initech")
    form.get_by_label("First admin's username").fill("bill")
    form.get_by_label("First admin's email").fill("bill@example.com")
    expect(form.get_by_text(RULE)).to_be_visible()
    form.get_by_role("button", name="Create").click()  # no password: an invitation, which cannot be mailed

    dialog = page.get_by_role("dialog", name="The invitation was not mailed")
    expect(dialog).to_contain_text("could not be mailed to bill@example.com")
    expect(notification(page, "Created Initech, but the invitation was not mailed: copy its link.")).to_be_visible()
    link = dialog.get_by_label("Invitation link").input_value()
    assert "/auth/register?" in link and "token=" in link, link
    screenshot(page, "organisation-invitation-not-mailed")
    dialog.get_by_role("button", name="Close").click()
    expect(dialog).to_have_count(0)
    expect(page.get_by_role("cell", name="Initech", exact=True)).to_be_visible()

    # the link, handed over, lets the first admin choose a password (the rule said there too)
    invitee = browser.new_page()
    try:
        invitee.goto(link)
        expect(invitee.get_by_text(RULE)).to_be_visible()
        invitee.get_by_label("New password").fill("initech-first-admin-1")
        invitee.get_by_label("Repeat the password").fill("initech-first-admin-1")
        invitee.get_by_role("button", name="Set password").click()
        expect(invitee.get_by_text("Your password is set.")).to_be_visible()
    finally:
        invitee.close()
    assert Api(console).login("bill", "initech-first-admin-1").status == 200


def test_an_ended_trial_is_told_as_ended(page, console):
    console.add_organisation("Lapsing", status="trial", trial_ends_at=now_iso(timedelta(days=5)))
    sign_in(page, console, "admin", ADMIN_PASSWORD)
    menu(page, "Organisations")
    row = page.get_by_role("row", name=re.compile("Lapsing"))
    row.get_by_role("button", name="Change status").click()
    dialog = page.get_by_role("dialog", name="Change Lapsing")
    dialog.get_by_label("Trial ends").fill("2020-01-02T10:00")
    dialog.get_by_role("button", name="Save").click()
    told = notification(page, "Lapsing")
    expect(told).to_have_text(re.compile(r"Lapsing's trial ended .+: payment missing"))
    expect(told).not_to_contain_text("now trial")
    expect(row.get_by_role("cell", name="Trial expired", exact=True)).to_be_visible()


def test_only_a_profile_without_a_password_is_offered_an_invitation(page, console):
    api = signed_in(console, "admin", ADMIN_PASSWORD)
    invited = api.post("profiles/", {"username": "nopass", "email": "nopass@example.com"}).body["id"]
    chosen = console.add_profile("haspass")
    sign_in(page, console, "admin", ADMIN_PASSWORD)
    page.goto(f"{console.url}/admin/profiles/{chosen}")
    expect(page.get_by_role("heading", name="haspass")).to_be_visible()
    expect(page.get_by_text(RULE)).to_be_visible()  # under New password
    expect(page.get_by_role("button", name="Delete")).to_be_visible()
    expect(page.get_by_role("button", name="Send invitation")).to_have_count(0)
    page.goto(f"{console.url}/admin/profiles/{invited}")
    expect(page.get_by_role("heading", name="nopass")).to_be_visible()
    expect(page.get_by_role("button", name="Send invitation")).to_be_visible()
    # the list's rows too
    menu(page, "Profiles")
    expect(page.get_by_role("button", name="Send an invitation to nopass")).to_be_visible()
    expect(page.get_by_role("link", name="Edit haspass")).to_be_visible()
    expect(page.get_by_role("button", name="Send an invitation to haspass")).to_have_count(0)
    page.get_by_role("link", name="Create").click()
    expect(page.get_by_role("heading", name="Create a profile")).to_be_visible()
    expect(page.get_by_text(RULE)).to_be_visible()


def test_the_branding_colour_reaches_the_header_and_primary_buttons(page, console):
    org = console.default_org()
    sign_in(page, console, "admin", ADMIN_PASSWORD)
    header = page.get_by_role("banner")
    create = page.get_by_role("link", name="Create")
    try:
        for colour, rgb, text in (
            ("#8FE3D6", "rgb(143, 227, 214)", "rgb(25, 25, 25)"),  # light: dark text
            ("#0B2545", "rgb(11, 37, 69)", "rgb(255, 255, 255)"),  # dark: white text
        ):
            console.execute("UPDATE organisations SET branding = 1, branding_colour = ? WHERE id = ?", colour, org)
            page.goto(console.url + "/admin/profiles")
            expect(page.get_by_test_id("side-menu")).to_have_css("background-color", rgb)
            expect(header).to_have_css("background-color", rgb)
            expect(header.locator(".product")).to_have_css("color", text)
            expect(create).to_have_css("background-color", rgb)
            expect(create).to_have_css("color", text)
            screenshot(page, f"branding-header-buttons-{colour[1:]}")
        # branding off: the defaults again
        console.execute("UPDATE organisations SET branding = 0 WHERE id = ?", org)
        page.goto(console.url + "/admin/profiles")
        expect(create).to_have_css("background-color", "rgb(61, 55, 255)")  # #3D37FF
        expect(header).to_have_css("background-color", "rgb(255, 255, 255)")
    finally:
        console.execute("UPDATE organisations SET branding = 0, branding_colour = NULL WHERE id = ?", org)


def test_a_day_one_dashboard_has_no_bare_axes_and_shows_the_day(page, console):
    fresh = console.add_organisation("Dayone")
    console.add_profile("dayone-admin", org_id=fresh, is_admin=True)
    sign_in(page, console, "dayone-admin", "user-password-1")
    card = page.locator("section.card").filter(has=page.get_by_role("heading", name="File transfers"))
    expect(card.get_by_text("No transfers yet", exact=True)).to_be_visible()
    expect(card.locator("svg")).to_have_count(0)
    screenshot(page, "dashboard-no-transfers")

    api = signed_in(console, "dayone-admin", "user-password-1")
    assert api.post("files/upload/?path=/", raw=multipart("first.txt", b"day one"), headers=MULTIPART).status < 300
    page.reload()
    chart = page.get_by_test_id("transfers-chart")
    expect(chart.locator("svg").first).to_be_visible()
    bars = card.locator("table tbody tr")  # the chart's numbers, for screen readers
    expect(bars).to_have_count(12)
    card.get_by_role("button", name="Days").click()
    expect(page).to_have_url(re.compile(r"/\?period=day$"))
    expect(card.get_by_role("button", name="Days")).to_have_attribute("aria-pressed", "true")
    expect(bars).to_have_count(30)
    today = datetime.now(UTC)
    # today's bar, at the right, holds the upload: web 1
    expect(bars.last.locator("th")).to_have_text(f"{today.day} {today:%b}")
    expect(bars.last.locator("td").nth(2)).to_have_text("1")
    # labels anyone can read: 12 px at least, the axes' and the legend's
    sizes = chart.locator("svg text tspan").evaluate_all(
        "spans => spans.filter((s) => s.textContent.trim()).map((s) => parseFloat(getComputedStyle(s).fontSize))"
    )
    assert sizes and min(sizes) >= 12, sizes
    screenshot(page, "dashboard-by-day")
    card.get_by_role("button", name="Weeks").click()
    expect(page).to_have_url(re.compile(r"/\?period=week$"))
    monday = today - timedelta(days=today.weekday())
    expect(bars).to_have_count(12)
    expect(bars.last.locator("th")).to_have_text(f"{monday.day} {monday:%b}")
