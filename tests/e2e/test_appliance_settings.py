"""The operator is warned while the public host name is localhost, and sets it in the
console (#41 item 5): the banner on every screen leads to the setting, and goes once
it is saved, without a restart; a plain admin never sees it."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from ..helpers import ADMIN_PASSWORD, daemon_with, free_port
from .conftest import screenshot
from .helpers_console import sign_in, sign_out


def test_the_operator_sets_the_public_host_name_and_the_warning_goes(page, tmp_path, console_built):
    # outbound mail set by the config, the public host name left to its default (localhost)
    console = daemon_with(tmp_path, start=False, smtp__host="127.0.0.1", smtp__port=free_port())
    del console.env["APPLIANCE_SERVER_PUBLIC_HOSTNAME"]
    console.start()
    console.url = f"http://127.0.0.1:{console.http_port}"
    try:
        console.add_profile("plain-admin", is_admin=True)
        sign_in(page, console, "plain-admin", "user-password-1")
        expect(page.get_by_role("button", name="How do I connect?")).to_be_visible()
        expect(page.get_by_test_id("settings-warning")).to_have_count(0)
        sign_out(page)

        sign_in(page, console, "admin", ADMIN_PASSWORD)
        warning = page.get_by_role("region", name="Appliance settings to finish")
        expect(warning).to_contain_text("The public host name is localhost")
        expect(warning).not_to_contain_text("Outbound mail")  # the config sets it
        screenshot(page, "operator-settings-warning")
        warning.get_by_role("link", name="Set the public host name").click()
        expect(page).to_have_url(re.compile(r"/admin/god#public-host-name$"))

        mail = page.get_by_test_id("mail-state")
        expect(mail.get_by_label("Mail server", exact=True)).to_be_disabled()
        locked = re.compile(r"^Set in the config file \(environment variable APPLIANCE_SMTP_HOST\)")
        expect(mail.get_by_text(locked)).to_be_visible()
        screenshot(page, "operator-appliance-settings")
        host = page.get_by_test_id("public-host-name").get_by_label("Public host name")
        host.fill("https://files.example.com")
        page.get_by_role("button", name="Save the host name").click()
        expect(page.locator(".field-error").filter(has_text="Leave out https://")).to_be_visible()
        host.fill("files.example.com")
        page.get_by_role("button", name="Save the host name").click()
        expect(page.get_by_text("Public host name saved: links now name files.example.com")).to_be_visible()
        expect(warning).to_have_count(0)

        page.get_by_role("button", name="How do I connect?").click()
        expect(page.get_by_role("dialog", name="How do I connect?")).to_contain_text("files.example.com")
    finally:
        console.stop()
