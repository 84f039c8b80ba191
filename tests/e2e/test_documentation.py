"""The console's documentation page in Chromium: the user menu and the connect dialog
lead to it, and it shows this portal's configured host, ports and fingerprints."""

from __future__ import annotations

import re
import urllib.request

from playwright.sync_api import expect

from .conftest import screenshot
from .helpers_console import sign_in


def check_page(docs, console) -> None:
    expect(docs).to_have_url(console.url + "/docs")
    expect(docs.get_by_role("heading", name="Documentation", exact=True)).to_be_visible()
    expect(docs.get_by_test_id("docs-sftp-port")).to_have_text(str(console.sftp_port))
    expect(docs.get_by_test_id("docs-ftp-port")).to_have_text(str(console.ftp_port))
    commands = docs.locator("pre.command")
    expect(commands.first).to_have_text(f"sftp -P {console.sftp_port} dana@127.0.0.1")
    expect(docs.get_by_text(f"lftp -p {console.ftp_port} -u dana", exact=False)).to_be_visible()
    expect(docs.get_by_text(re.compile(r"ssh-ed25519 SHA256:[A-Za-z0-9+/]{43}"))).to_be_visible()
    for heading in ("FileZilla", "WinSCP", "rclone", "Share links", "Uploads are all or nothing"):
        expect(docs.get_by_role("heading", name=heading)).to_be_visible()
    expect(docs.get_by_text("Page not found")).to_have_count(0)


def test_the_documentation_link_opens_the_page_with_the_configured_ports(page, console):
    console.add_profile("dana")
    sign_in(page, console, "dana", "user-password-1")
    page.locator(".user-menu > button").click()
    with page.expect_popup() as popup:
        page.get_by_role("menuitem", name="Documentation").click()
    docs = popup.value
    check_page(docs, console)
    screenshot(docs, "documentation")
    docs.close()

    # the connect dialog's link leads to the same page
    page.get_by_role("button", name="How do I connect?").click()
    dialog = page.get_by_role("dialog", name="How do I connect?")
    expect(dialog.get_by_role("link", name="Documentation")).to_have_attribute("href", "/docs")
    with page.expect_popup() as popup:
        dialog.get_by_role("link", name="Documentation").click()
    check_page(popup.value, console)


def test_the_server_serves_the_console_at_docs(console):
    for path in ("/docs", "/docs/"):
        with urllib.request.urlopen(console.url + path, timeout=10) as response:
            assert response.status == 200
            assert response.headers["content-type"].startswith("text/html")
            assert b"<div id=root>" in response.read()
