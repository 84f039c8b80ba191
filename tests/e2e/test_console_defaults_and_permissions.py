"""Console walkthrough defects, in Chromium: the organisation's default source is marked,
can be moved to another source and is not deleted; the file viewer disables what the
signed-in user may not do, saying why; the logs' Action filter offers every action."""

from __future__ import annotations

import json
import re

from playwright.sync_api import expect

from ..helpers import ADMIN_PASSWORD, now_iso
from .conftest import screenshot
from .helpers_console import menu, sign_in


def test_the_default_source_is_marked_moved_and_not_deleted(page, console):
    subdomain = console.query("SELECT subdomain FROM organisations WHERE id = ?", console.default_org())[0][0]
    (console.data_dir / "files" / subdomain / "second").mkdir()
    console.execute(
        "INSERT INTO sources (org_id, name, type, config, created_at) VALUES (?, 'Second', 'local', ?, ?)",
        console.default_org(),
        json.dumps({"path": f"files/{subdomain}/second"}),
        now_iso(),
    )
    sign_in(page, console, "admin", ADMIN_PASSWORD)
    menu(page, "Sources")
    default_row = page.get_by_role("row").filter(has=page.get_by_role("link", name="Default", exact=True))
    expect(default_row.get_by_test_id("default-badge")).to_be_visible()
    expect(page.get_by_role("row").filter(has_text="Second").get_by_test_id("default-badge")).to_have_count(0)

    page.get_by_role("link", name="Default", exact=True).click()
    expect(page.get_by_test_id("default-source")).to_be_visible()
    expect(page.get_by_role("button", name="Make default")).to_have_count(0)
    page.get_by_role("button", name="Delete").click()
    page.get_by_role("dialog", name="Delete the source").get_by_role("button", name="Delete").click()
    expect(page.get_by_test_id("notification")).to_contain_text(
        "This is the organisation's default source: new profiles get it. Make another source the default first."
    )
    screenshot(page, "source-default-delete-refused")
    expect(page).to_have_url(re.compile(r"/admin/sources/\d+$"))

    page.goto(console.url + "/admin/sources")
    page.get_by_role("link", name="Second", exact=True).click()
    page.get_by_role("button", name="Make default").click()
    expect(page.get_by_test_id("default-source")).to_be_visible()
    expect(page.get_by_role("button", name="Make default")).to_have_count(0)
    second_id = console.query("SELECT id FROM sources WHERE name = 'Second'")[0][0]
    assert console.query("SELECT default_source_id FROM organisations WHERE id = ?", console.default_org())[0][0] == (
        second_id
    )
    page.get_by_role("link", name="Sources").first.click()
    expect(page.get_by_role("row").filter(has_text="Second").get_by_test_id("default-badge")).to_be_visible()


def test_the_file_viewer_disables_what_the_user_may_not_do(page, console):
    console.add_profile("reader", permissions=["list", "download"], protocols=["web"])
    (console.home("reader")).mkdir(parents=True, exist_ok=True)
    (console.home("reader") / "report.txt").write_text("numbers")
    sign_in(page, console, "reader", "user-password-1")
    expect(page).to_have_url(re.compile(r"/fileviewer"))
    rename = page.get_by_role("button", name="Rename report.txt")
    expect(rename).to_be_disabled()
    expect(rename).to_have_attribute("title", re.compile("You may not rename"))
    expect(page.get_by_role("button", name="Delete report.txt")).to_be_disabled()
    expect(page.get_by_role("button", name="New folder")).to_be_disabled()
    expect(page.get_by_label("Upload files")).to_be_disabled()
    expect(page.get_by_role("button", name="Download report.txt")).to_be_enabled()
    expect(page.get_by_role("button", name="Share report.txt")).to_be_enabled()
    screenshot(page, "fileviewer-read-only-user")


def test_the_logs_action_filter_offers_organisation_created(page, console):
    sign_in(page, console, "admin", ADMIN_PASSWORD)
    menu(page, "Logs")
    action = page.locator("label", has=page.locator("span", has_text=re.compile("^Action$"))).locator(
        "select"
    )  # the filter, not the rows' "Actions for log entry" menus
    expect(action.locator("option", has_text=re.compile("^organisation_created$"))).to_have_count(1)
    expect(action.locator("option", has_text=re.compile("^login$"))).to_have_count(1)
    action.select_option("organisation_created")
    expect(page.get_by_role("cell", name=re.compile("created with admin"))).not_to_have_count(0)
