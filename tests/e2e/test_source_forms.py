"""The source form in Chromium: the type choice shows that type's fields, the
server's config errors land under the field they name, and the source's page
checks the connection."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from ..helpers import ADMIN_PASSWORD
from .conftest import screenshot
from .helpers_console import menu, sign_in


def field_labels(page) -> list[str]:
    return [t.strip() for t in page.locator(".source-config label").all_inner_texts()]


def test_the_new_source_form_shows_the_chosen_types_fields(page, console):
    sign_in(page, console, "admin", ADMIN_PASSWORD)
    menu(page, "Sources")
    page.get_by_role("link", name="Create").click()
    expect(page.get_by_role("heading", name="Create a source")).to_be_visible()
    assert field_labels(page) == ["Folder"]

    page.get_by_label("Type").select_option(label="Remote SFTP server")
    expect(page.get_by_label("Host", exact=True)).to_be_visible()
    assert field_labels(page) == [
        "Host",
        "Port",
        "Username",
        "Password",
        "Private key",
        "Remote folder",
        "Host key fingerprint",
    ]
    expect(page.get_by_label("Port")).to_have_value("22")
    expect(page.get_by_text(re.compile("pinned on first connect"))).to_be_visible()

    page.get_by_label("Type").select_option(label="S3-compatible bucket")
    expect(page.get_by_label("Bucket")).to_be_visible()
    assert "Host" not in field_labels(page)
    verify = page.get_by_label("Verify the server's TLS certificate")
    expect(verify).to_be_checked()
    expect(page.get_by_role("note")).to_have_count(0)
    verify.uncheck()
    expect(page.get_by_role("note")).to_contain_text("can read the keys")
    screenshot(page, "source-create-s3")

    # the server refuses a malformed fingerprint before connecting: the message sits under that field
    page.get_by_label("Type").select_option(label="Remote SFTP server")
    page.get_by_label("Name", exact=True).fill("Partner")
    page.get_by_label("Host", exact=True).fill("127.0.0.1")
    page.get_by_label("Username").fill("robot")
    page.get_by_label("Password").fill("not-used")
    page.get_by_label("Host key fingerprint").fill("SHA256:short")
    page.get_by_role("button", name="Create").click()
    fingerprint = page.get_by_label("Host key fingerprint")
    expect(fingerprint).to_have_attribute("aria-invalid", "true")
    described = fingerprint.get_attribute("aria-describedby").split()
    assert any("SHA256 fingerprint" in page.locator(f"[id='{d}']").inner_text() for d in described)
    expect(page.get_by_label("Host", exact=True)).not_to_have_attribute("aria-invalid", "true")
    screenshot(page, "source-create-sftp-error")
    assert not console.query("SELECT id FROM sources WHERE name = 'Partner'")


def test_a_sources_page_checks_its_connection(page, console):
    from ..api_client import signed_in

    folder = console.data_dir / "files" / "acme" / "outbox"
    folder.mkdir(parents=True)
    api = signed_in(console, "admin", ADMIN_PASSWORD)
    source = api.post("sources/", {"name": "Outbox", "type": "local", "config": {"path": "outbox"}}).body
    sign_in(page, console, "admin", ADMIN_PASSWORD)
    menu(page, "Sources")
    row = page.get_by_role("row").filter(has_text="Outbox")
    expect(row).to_contain_text("Local folder")
    expect(row).to_contain_text("ok")
    folder.rmdir()  # the folder goes away: the check says so
    page.goto(f"{console.url}/admin/sources/{source['id']}")
    page.get_by_role("button", name="Check connection").click()
    expect(page.get_by_test_id("check-result")).to_contain_text("does not exist")
    expect(page.get_by_test_id("last-error")).to_contain_text("does not exist")
    menu(page, "Sources")
    expect(page.get_by_role("row").filter(has_text="Outbox")).to_contain_text("does not exist")
