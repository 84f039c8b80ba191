"""Defects found walking through the console as a new admin and as a plain user:
saving a local source's form, a screen whose code could not be fetched, a call
that gets no reply, set-up field errors, a failed folder listing, the dashboard
on a phone."""

from __future__ import annotations

import json

from playwright.sync_api import expect

from ..api_client import signed_in
from ..helpers import ADMIN_PASSWORD
from .helpers_console import menu, sign_in


def stored_path(console, name: str) -> str:
    return json.loads(console.query("SELECT config FROM sources WHERE name = ?", name)[0][0])["path"]


def test_saving_a_local_sources_form_keeps_its_folder(page, console):
    (console.data_dir / "files" / "acme" / "outbox").mkdir(parents=True)
    api = signed_in(console, "admin", ADMIN_PASSWORD)
    outbox = api.post("sources/", {"name": "Outbox", "type": "local", "config": {"path": "outbox"}}).body
    assert stored_path(console, "Outbox") == "files/acme/outbox"
    sign_in(page, console, "admin", ADMIN_PASSWORD)
    page.goto(f"{console.url}/admin/sources/{outbox['id']}")
    folder = page.get_by_label("Folder")
    expect(folder).to_have_value("outbox")  # as the admin typed it, not the data dir's files/acme/outbox
    page.get_by_label("Read-only", exact=False).check()
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.get_by_test_id("last-error")).to_have_count(0)
    # saved twice over: the folder stays where it was (it moved into files/acme/files/acme/outbox)
    page.get_by_role("button", name="Save", exact=True).click()
    page.reload()
    expect(folder).to_have_value("outbox")
    assert stored_path(console, "Outbox") == "files/acme/outbox"
    assert tuple(console.query("SELECT read_only, status FROM sources WHERE name = 'Outbox'")[0]) == (1, "ok")
    default = console.query("SELECT id FROM sources WHERE name = 'Default'")[0][0]
    page.goto(f"{console.url}/admin/sources/{default}")
    expect(folder).to_have_value(".")  # the organisation's folder itself
    page.get_by_role("button", name="Save", exact=True).click()
    menu(page, "Sources")
    expect(page.get_by_role("row").filter(has_text="Default")).to_contain_text("The organisation's folder")
    assert stored_path(console, "Default") == "files/acme"


def test_a_screen_that_could_not_be_fetched_offers_a_reload(page, console):
    sign_in(page, console, "admin", ADMIN_PASSWORD)
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()
    page.route("**/*.js", lambda route: route.abort("connectionrefused"))  # the appliance went away
    menu(page, "Sources")
    expect(page.get_by_role("heading", name="Something went wrong")).to_be_visible()
    expect(page.get_by_text("could not be loaded from the appliance")).to_be_visible()
    page.unroute("**/*.js")  # it is back: the router keeps the failure, a reload recovers
    menu(page, "Profiles")
    expect(page.get_by_role("heading", name="Profiles")).to_be_visible()
    menu(page, "Sources")
    page.get_by_role("button", name="Reload the page").click()
    expect(page.get_by_role("heading", name="Sources")).to_be_visible()


def test_a_call_without_a_reply_says_the_appliance_could_not_be_reached(page, console):
    console.add_profile("walter")
    sign_in(page, console, "walter", "user-password-1")
    page.route("**/api/portal/files/mkdir/", lambda route: route.abort("connectionrefused"))
    page.get_by_role("button", name="New folder").click()
    dialog = page.get_by_role("dialog", name="New folder")
    dialog.get_by_label("Name of the new folder").fill("offline")
    dialog.get_by_role("button", name="Create").click()
    expect(
        dialog.get_by_text("The appliance could not be reached. Check the connection and try again.")
    ).to_be_visible()
    expect(page.get_by_text("Failed to fetch")).to_have_count(0)


def test_a_new_folder_with_a_taken_name_is_refused_not_reported_created(page, console):
    console.add_profile("walter")
    sign_in(page, console, "walter", "user-password-1")
    for attempt in range(2):
        page.get_by_role("button", name="New folder").click()
        dialog = page.get_by_role("dialog", name="New folder")
        dialog.get_by_label("Name of the new folder").fill("reports")
        dialog.get_by_role("button", name="Create").click()
        if attempt == 0:
            expect(page.get_by_text("Created reports")).to_be_visible()
            expect(dialog).to_have_count(0)
    expect(dialog.get_by_text("A file or folder named /reports already exists.")).to_be_visible()
    expect(page.get_by_role("row").filter(has_text="reports")).to_have_count(1)


def test_a_failed_listing_does_not_call_the_folder_empty(page, console):
    console.add_profile("walter")
    sign_in(page, console, "walter", "user-password-1")
    page.goto(console.url + "/fileviewer?path=/nowhere")
    expect(page.get_by_role("alert")).to_contain_text("No such file or folder")
    expect(page.get_by_text("This folder is empty.")).to_have_count(0)


def test_the_set_up_names_the_organisation_field_and_the_limit(page, uninitialised_console):
    page.goto(uninitialised_console.url + "/")
    organisation = page.get_by_label("Organisation")
    organisation.fill("O" * 201)
    page.get_by_label("Username").fill("chief")
    page.get_by_label("Email").fill("chief@example.com")
    page.get_by_label("Password").fill("chief-password-1")
    page.get_by_role("button", name="Create").click()
    expect(organisation).to_have_attribute("aria-invalid", "true")
    error = page.locator(f"[id='{organisation.get_attribute('aria-describedby')}']")
    expect(error).to_have_text("Use at most 200 characters.")
    expect(page.get_by_text("organisation name:")).to_have_count(0)
    organisation.fill("   ")
    page.get_by_role("button", name="Create").click()
    expect(error).to_have_text("Enter a name.")
    organisation.fill("Acme Files")
    page.get_by_role("button", name="Create").click()
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()


def test_the_dashboard_fits_a_phone(page, console):
    (console.source_root() / "report.pdf").write_bytes(b"%PDF")
    assert signed_in(console, "admin", ADMIN_PASSWORD).get("files/download/?path=/report.pdf").status == 200
    sign_in(page, console, "admin", ADMIN_PASSWORD)  # the admin is a top user now: a table of three columns
    page.set_viewport_size({"width": 375, "height": 740})
    expect(page.get_by_role("heading", name="Top users")).to_be_visible()
    page.wait_for_timeout(250)  # the chart redraws 150 ms after a resize
    assert page.evaluate("document.documentElement.scrollWidth") <= 375


def test_the_operators_new_organisation_form_gets_its_name_error_under_name(console):
    operator = signed_in(console, "admin", ADMIN_PASSWORD)  # set-up's admin is the operator
    admin = {"username": "boss", "email": "boss@example.com"}
    blank = operator.post("god/organisations/", {"name": " ", "admin": admin})
    assert blank.status == 400 and blank.body == {"name": ["Enter a name."]}
