"""Share links in Chromium: made in the file viewer, opened by a visitor who is not
signed in (password, download), and an upload-only drop box."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from .conftest import screenshot
from .helpers_console import sign_in


def make_link(page, name: str, *, password: str = "", limit: str = "", drop_box: bool = False) -> str:
    page.get_by_role("button", name=f"Share {name}").click()
    dialog = page.get_by_role("dialog", name=f"Share {name}")
    if password:
        dialog.get_by_label("Password").fill(password)
    if drop_box:
        dialog.get_by_label(re.compile("Drop box")).check()
    if limit:
        dialog.get_by_label("Download limit").fill(limit)
    screenshot(page, "share-dialog")
    dialog.get_by_role("button", name="Create link").click()
    url = dialog.get_by_test_id("share-url").inner_text()
    assert re.search(r"/auth/shared\?token=[\w-]+$", url), url
    dialog.get_by_role("button", name="Done").click()
    return url


def test_a_password_protected_link_downloads_for_a_visitor(page, console, browser):
    console.add_profile("walter")
    home = console.home("walter")
    home.mkdir(parents=True, exist_ok=True)
    (home / "report.pdf").write_bytes(b"%PDF quarterly figures")
    sign_in(page, console, "walter", "user-password-1")
    url = make_link(page, "report.pdf", password="open sesame", limit="2")

    visitor = browser.new_context(accept_downloads=True)  # nobody signed in there
    try:
        guest = visitor.new_page()
        guest.goto(url)
        expect(guest.get_by_text("This link is protected by a password.")).to_be_visible()
        guest.get_by_label("Password").fill("wrong")
        guest.get_by_role("button", name="Open").click()
        expect(guest.get_by_role("alert")).to_have_text("The password is not right.")
        guest.get_by_label("Password").fill("open sesame")
        guest.get_by_role("button", name="Open").click()
        expect(guest.get_by_text("report.pdf")).to_be_visible()
        expect(guest.get_by_text(re.compile("for 2 more downloads"))).to_be_visible()
        screenshot(guest, "shared-file")
        with guest.expect_download() as info:
            guest.get_by_role("link", name="Download").click()
        download = info.value
        assert download.suggested_filename == "report.pdf"
        with open(download.path(), "rb") as f:
            assert f.read() == b"%PDF quarterly figures"
        expect(guest.get_by_text(re.compile("for 1 more download\\b"))).to_be_visible()

        page.get_by_role("button", name="Shared links").click()
        links = page.get_by_role("dialog", name="Shared links")
        row = links.get_by_role("row", name=re.compile(r"report\.pdf"))
        expect(row.get_by_role("cell", name="1 of 2")).to_be_visible()
        screenshot(page, "shared-links")
        row.get_by_role("button", name="Revoke the link to /report.pdf").click()
        page.get_by_role("dialog", name="Revoke the link").get_by_role("button", name="Revoke").click()
        expect(row.get_by_role("cell", name="revoked")).to_be_visible()
        guest.reload()
        expect(guest.get_by_role("alert")).to_have_text("This link was revoked.")
    finally:
        visitor.close()


def test_a_drop_box_link_takes_uploads_from_a_visitor(page, console, browser, tmp_path):
    console.add_profile("walter")
    inbox = console.home("walter") / "inbox"
    inbox.mkdir(parents=True)
    sign_in(page, console, "walter", "user-password-1")
    url = make_link(page, "inbox", drop_box=True)

    visitor = browser.new_context()
    try:
        guest = visitor.new_page()
        guest.goto(url)
        expect(guest.get_by_role("heading", name="Upload files")).to_be_visible()
        payload = tmp_path / "invoice.txt"
        payload.write_text("invoice 42")
        guest.get_by_label("Choose files to upload").set_input_files(str(payload))
        expect(guest.get_by_text("uploaded", exact=True)).to_be_visible()
        guest.get_by_label("Choose files to upload").set_input_files(str(payload))
        expect(guest.get_by_text("uploaded as invoice (1).txt")).to_be_visible()
        screenshot(guest, "shared-drop-box")
        assert (inbox / "invoice.txt").read_text() == "invoice 42"
        assert (inbox / "invoice (1).txt").read_text() == "invoice 42"
        assert guest.get_by_role("link", name="Download").count() == 0  # uploads only
    finally:
        visitor.close()


def test_a_folder_link_lists_and_an_expired_one_says_so(page, console, browser):
    console.add_profile("walter")
    docs = console.home("walter") / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "a.txt").write_text("A")
    (docs / "sub" / "b.txt").write_text("B")
    sign_in(page, console, "walter", "user-password-1")
    url = make_link(page, "docs")
    visitor = browser.new_context()
    try:
        guest = visitor.new_page()
        guest.goto(url)
        expect(guest.get_by_role("cell", name="a.txt")).to_be_visible()
        guest.get_by_role("button", name=re.compile("sub")).click()
        expect(guest.get_by_role("cell", name="b.txt")).to_be_visible()
        screenshot(guest, "shared-folder")
        console.execute("UPDATE shares SET expires_at = '2000-01-01T00:00:00Z'")
        guest.reload()
        expect(guest.get_by_role("alert")).to_have_text("This link has expired.")
    finally:
        visitor.close()
