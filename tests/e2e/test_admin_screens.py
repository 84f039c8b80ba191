"""The admin screens in Chromium: create, edit and delete through the forms, server
field errors, and the operator's screens."""

from __future__ import annotations

import json
import re

from playwright.sync_api import expect

from ..helpers import ADMIN_PASSWORD
from .conftest import screenshot
from .helpers_console import menu, sign_in, sign_out, wait_until


def test_an_admin_creates_a_profile_and_it_signs_in(page, console):
    sign_in(page, console, "admin", ADMIN_PASSWORD)
    menu(page, "Profiles")
    page.get_by_role("link", name="Create").click()
    expect(page.get_by_role("heading", name="Create a profile")).to_be_visible()
    page.get_by_label("Username", exact=True).fill("petra")
    page.get_by_label("Email", exact=True).fill("petra@example.com")
    page.get_by_label("Password", exact=True).fill("petra-password-1")
    page.get_by_role("button", name="Create").click()
    expect(page.get_by_role("heading", name="petra")).to_be_visible()
    expect(page).to_have_url(re.compile(r"/admin/profiles/\d+$"))
    row = console.query("SELECT home, source_id, is_admin FROM profiles WHERE username = 'petra'")[0]
    assert row["home"] == "/petra" and row["source_id"] is not None and not row["is_admin"]
    sign_out(page)
    sign_in(page, console, "petra", "petra-password-1")
    expect(page).to_have_url(re.compile(r"/fileviewer$"))
    expect(page.get_by_role("heading", name="Fileviewer")).to_be_visible()
    nav = page.get_by_role("navigation", name="Main")
    expect(nav.get_by_role("link")).to_have_count(1)


def test_the_server_field_errors_show_next_to_the_fields(page, console):
    console.add_profile("taken")
    sign_in(page, console, "admin", ADMIN_PASSWORD)
    page.goto(console.url + "/admin/profiles/create")
    page.get_by_label("Username", exact=True).fill("taken")
    page.get_by_label("Email", exact=True).fill("someone@example.com")
    password = page.get_by_label("Password", exact=True)
    password.fill("short")
    page.get_by_role("button", name="Create").click()
    expect(password).to_have_attribute("aria-invalid", "true")
    screenshot(page, "profile-field-errors")
    password.fill("a-long-enough-password-1")
    page.get_by_role("button", name="Create").click()
    expect(page.get_by_label("Username", exact=True)).to_have_attribute("aria-invalid", "true")
    expect(password).not_to_have_attribute("aria-invalid", "true")
    expect(page.locator(".field-error").filter(has_text="This username is taken.")).to_be_visible()
    assert len(console.query("SELECT id FROM profiles WHERE username = 'taken'")) == 1


def test_an_admin_edits_then_deletes_a_profile_after_confirming(page, console):
    profile_id = console.add_profile("olga")
    sign_in(page, console, "admin", ADMIN_PASSWORD)
    page.goto(f"{console.url}/admin/profiles/{profile_id}")
    expect(page.get_by_role("heading", name="olga")).to_be_visible()
    page.get_by_label("Quota in bytes").fill("5000000")
    page.get_by_role("checkbox", name="FTP", exact=True).uncheck()
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_text("Saved olga")).to_be_visible()
    row = console.query("SELECT quota_bytes, protocols FROM profiles WHERE id = ?", profile_id)[0]
    assert row["quota_bytes"] == 5_000_000 and json.loads(row["protocols"]) == ["sftp", "web"]
    page.get_by_role("button", name="Delete").click()
    dialog = page.get_by_role("dialog", name="Delete the profile")
    expect(dialog).to_be_visible()
    screenshot(page, "confirm-delete")
    dialog.get_by_role("button", name="Cancel").click()
    assert console.query("SELECT id FROM profiles WHERE id = ?", profile_id)
    page.get_by_role("button", name="Delete").click()
    page.get_by_role("dialog", name="Delete the profile").get_by_role("button", name="Delete").click()
    expect(page).to_have_url(re.compile(r"/admin/profiles$"))
    expect(page.get_by_text("Deleted olga")).to_be_visible()
    assert not console.query("SELECT id FROM profiles WHERE id = ?", profile_id)


def test_sources_create_check_and_callback(page, console):
    folder = console.data_dir / "files" / "acme" / "archive"
    folder.mkdir(parents=True)
    sign_in(page, console, "admin", ADMIN_PASSWORD)
    menu(page, "Sources")
    page.get_by_role("link", name="Create").click()
    page.get_by_label("Name", exact=True).fill("Archive")
    page.get_by_label("Folder", exact=True).fill("/etc")
    page.get_by_role("button", name="Create").click()
    expect(page.get_by_text(re.compile("Local sources must be inside")).first).to_be_visible()
    page.get_by_label("Folder", exact=True).fill("archive")
    page.get_by_role("button", name="Create").click()
    expect(page.get_by_role("heading", name="Archive")).to_be_visible()
    source_id = int(page.url.rsplit("/", 1)[1])
    # the callback finishes a provider's sign-in only (code + state, see test_source_sign_in.py)
    page.goto(f"{console.url}/admin/sources/callback?source={source_id}")
    expect(page.get_by_role("alert")).to_contain_text("does not hold a sign-in to finish")
    page.goto(f"{console.url}/admin/sources/callback?code=forged&state=forged")
    expect(page.get_by_role("alert")).to_contain_text("The source was not connected")


def test_tokens_are_revoked_after_confirming(page, console):
    from ..api_client import Api, signed_in

    api = signed_in(console, "admin", ADMIN_PASSWORD)
    created = api.post("tokens/", {"name": "backup job", "scopes": ["files"]}).body
    sign_in(page, console, "admin", ADMIN_PASSWORD)
    menu(page, "API Tokens")
    page.get_by_role("link", name="backup job").click()
    expect(page.get_by_test_id("token-state")).to_have_text("active")
    page.get_by_role("button", name="Revoke").click()
    page.get_by_role("dialog", name="Revoke the token").get_by_role("button", name="Revoke").click()
    expect(page.get_by_test_id("token-state")).to_have_text("revoked")
    assert Api(console, created["token"]).get("files/?path=/").status == 401


def test_organisation_settings_validate_the_colour_and_brand_the_menu(page, console):
    console.execute(
        "UPDATE organisations SET status = 'trial', trial_ends_at = ? WHERE id = ?",
        "2099-01-01T00:00:00Z", console.default_org(),
    )  # fmt: skip
    sign_in(page, console, "admin", ADMIN_PASSWORD)
    chip = page.get_by_role("link", name=re.compile(r"^\d+ Days left on trial$"))
    expect(chip).to_be_visible()
    chip.click()
    expect(page).to_have_url(re.compile(r"/admin/organisation$"))
    colour = page.get_by_label("Branding colour", exact=True)
    colour.fill("blue")
    expect(page.get_by_text("Enter a colour as #RRGGBB, for example #3D37FF.")).to_be_visible()
    expect(page.get_by_role("button", name="Save")).to_be_disabled()
    colour.fill("#0A7B43")
    page.get_by_label("Use our branding").check()
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_text("Organisation settings saved")).to_be_visible()
    expect(page.get_by_test_id("side-menu")).to_have_css("background-color", "rgb(10, 123, 67)")
    row = console.query("SELECT branding, branding_colour FROM organisations WHERE id = ?", console.default_org())[0]
    assert row["branding"] and row["branding_colour"] == "#0A7B43"


def test_the_operator_changes_an_organisation_status_and_reads_its_logs(page, console):
    other = console.add_organisation("Globex", status="trial", trial_ends_at="2099-01-01T00:00:00Z")
    console.add_profile("hank", org_id=other)
    sign_in(page, console, "admin", ADMIN_PASSWORD)
    menu(page, "Organisations")
    row = page.get_by_role("row", name=re.compile("Globex"))
    expect(row.get_by_role("cell", name="Trial", exact=True)).to_be_visible()
    row.get_by_role("button", name="Change status").click()
    dialog = page.get_by_role("dialog", name="Change Globex")
    dialog.get_by_label("Status").select_option("payment_missing")
    dialog.get_by_role("button", name="Save").click()
    expect(row.get_by_role("cell", name="Payment missing")).to_be_visible()
    status = console.query("SELECT status FROM organisations WHERE id = ?", other)[0][0]
    assert status == "payment_missing"
    row.get_by_role("link", name="Logs").click()
    expect(page.get_by_role("heading", name="Logs of Globex")).to_be_visible()
    expect(page.get_by_role("cell", name=re.compile("changed status from trial to payment missing"))).to_be_visible()


def png(width: int = 96, height: int = 32) -> bytes:
    """A small valid PNG (one colour)."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + b"\x3d\x37\xff" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def test_the_logo_is_uploaded_and_brands_the_sign_in_page(page, console, tmp_path):
    logo = tmp_path / "logo.png"
    logo.write_bytes(png())
    not_an_image = tmp_path / "logo.txt"
    not_an_image.write_text("not an image")
    sign_in(page, console, "admin", ADMIN_PASSWORD)
    page.goto(console.url + "/admin/organisation")
    page.get_by_label("Use our branding").check()
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_text("Organisation settings saved")).to_be_visible()
    page.get_by_label("Upload a logo").set_input_files(str(not_an_image))
    expect(page.locator(".field-error").filter(has_text="PNG, JPEG or SVG")).to_be_visible()
    page.get_by_label("Upload a logo").set_input_files(str(logo))
    preview = page.get_by_test_id("logo-preview").get_by_role("img")
    expect(preview).to_be_visible()
    wait_until(page, "document.querySelector('[data-testid=logo-preview] img').naturalWidth === 96")
    expect(page.get_by_test_id("side-menu").get_by_role("img", name="Logo")).to_be_visible()
    screenshot(page, "organisation-logo")
    sign_out(page)
    page.goto(console.url + "/auth/login?branding=acme")
    panel_logo = page.get_by_test_id("auth-panel").get_by_role("img", name="Logo")
    expect(panel_logo).to_be_visible()
    assert panel_logo.evaluate("img => img.naturalWidth") == 96
    screenshot(page, "login-branded")
