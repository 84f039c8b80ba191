"""The web console in Debian's Chromium against the live daemon."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from ..api_client import MULTIPART, multipart, signed_in
from ..frontends.sftp_client import sftp
from ..helpers import ADMIN_PASSWORD
from .conftest import screenshot


def sign_in(page, console, username: str, password: str) -> None:
    page.goto(console.url + "/auth/login")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()


def test_first_run_setup(page, uninitialised_console):
    page.goto(uninitialised_console.url + "/")
    expect(page.get_by_role("heading", name="Set up the appliance")).to_be_visible()
    screenshot(page, "first-run-setup")
    page.get_by_label("Organisation").fill("Browser Org")
    page.get_by_label("Username").fill("chief")
    page.get_by_label("Email").fill("chief@example.com")
    page.get_by_label("Password").fill("chief-password-1")
    page.get_by_role("button", name="Create").click()
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()
    assert uninitialised_console.query("SELECT username FROM profiles")[0][0] == "chief"


def test_login_failure_shows_the_spec_message(page, console):
    sign_in(page, console, "admin", "wrong-password")
    expect(page.get_by_role("alert")).to_have_text("These credentials do not match our records.")
    screenshot(page, "login")


def test_admin_dashboard_draws_the_chart(page, console):
    api = signed_in(console, "admin", ADMIN_PASSWORD)  # a transfer: the chart has a bar to draw
    api.post("files/upload/?path=/", raw=multipart("chart.txt", b"a bar"), headers=MULTIPART)
    sign_in(page, console, "admin", ADMIN_PASSWORD)
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()
    expect(page.get_by_text("Total users")).to_be_visible()
    expect(page.get_by_role("heading", name="File transfers")).to_be_visible()
    chart = page.get_by_test_id("transfers-chart")
    expect(chart.locator("svg").first).to_be_visible()
    month = re.compile(r"^(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4}$")
    expect(chart.get_by_text(month).first).to_be_visible()
    for item in ("Fileviewer", "Dashboard", "Sources", "Profiles", "API Tokens", "Mailboxes", "Logs"):
        expect(page.get_by_role("navigation", name="Main").get_by_role("link", name=item)).to_be_visible()
    screenshot(page, "dashboard")
    page.get_by_role("button", name="How do I connect?").click()
    dialog = page.get_by_role("dialog", name="How do I connect?")
    expect(dialog.get_by_text("You have been assigned to the source Default.")).to_be_visible()
    expect(dialog.get_by_text(str(console.sftp_port))).to_be_visible()
    screenshot(page, "connect-dialog")


def test_a_non_admin_lands_on_the_file_viewer_and_uploads(page, console, tmp_path):
    console.add_profile("walter")
    sign_in(page, console, "walter", "user-password-1")
    expect(page).to_have_url(re.compile(r"/fileviewer$"))
    nav = page.get_by_role("navigation", name="Main")
    expect(nav.get_by_role("link")).to_have_count(1)
    page.goto(console.url + "/")
    expect(page).to_have_url(re.compile(r"/fileviewer$"))
    payload = tmp_path / "from-browser.txt"
    payload.write_text("uploaded in Chromium")
    page.get_by_label("Upload files", exact=True).set_input_files(str(payload))
    expect(page.get_by_role("cell", name="from-browser.txt", exact=True)).to_be_visible()
    screenshot(page, "file-viewer")
    result = sftp(console, "walter", "user-password-1", "get from-browser.txt fetched.txt", tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "fetched.txt").read_text() == "uploaded in Chromium"


def test_a_filename_with_script_is_shown_as_text(page, console):
    console.add_profile("xss")
    home = console.home("xss")
    home.mkdir(parents=True, exist_ok=True)
    name = "<img src=x onerror=window.hacked=1>.txt"
    script = "<script>window.hacked=2<\\script>.txt"  # a name cannot hold "/"
    (home / name).write_text("x")
    (home / script).write_text("x")
    sign_in(page, console, "xss", "user-password-1")
    expect(page.get_by_text(name)).to_be_visible()
    expect(page.get_by_role("cell", name=script, exact=True)).to_be_visible()
    page.get_by_role("button", name=f"Rename {script}").click()
    expect(page.get_by_role("dialog", name=f"Rename {script}")).to_be_visible()
    assert page.evaluate("window.hacked") is None
    assert page.locator("table script, table img[src=x]").count() == 0


def test_payment_missing_goes_to_billing(page, console):
    org = console.add_organisation("Slow Payers")
    console.add_profile("slow", org_id=org)
    sign_in(page, console, "slow", "user-password-1")
    expect(page).to_have_url(re.compile(r"/fileviewer$"))
    console.execute("UPDATE organisations SET status = 'payment_missing' WHERE id = ?", org)
    page.reload()
    expect(page).to_have_url(re.compile(r"/auth/billing$"))
    expect(page.get_by_role("heading", name="Payment missing")).to_be_visible()
    screenshot(page, "billing")


def test_an_expired_access_token_is_refreshed_transparently(page, console):
    sign_in(page, console, "admin", ADMIN_PASSWORD)
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()
    # spoil the access token: the next call gets 401 token_not_valid, refreshes and retries
    page.evaluate(
        "() => { const s = JSON.parse(localStorage.getItem('authUser')); s.access = s.access + 'x';"
        " localStorage.setItem('authUser', JSON.stringify(s)); }"
    )
    page.goto(console.url + "/fileviewer")
    expect(page.get_by_role("heading", name="Fileviewer")).to_be_visible()
    expect(page.get_by_text("This folder is empty.")).to_be_visible()  # the listing came through
    page.wait_for_load_state("networkidle")
    expect(page).to_have_url(re.compile(r"/fileviewer$"))
    session = page.evaluate("() => JSON.parse(localStorage.getItem('authUser'))")
    assert not session["access"].endswith("x")


def test_the_mailbox_runs_screen_shows_the_history(page, console):
    from ..api_client import signed_in

    api = signed_in(console, "admin", ADMIN_PASSWORD)
    source = api.get("sources/").body["results"][0]["id"]
    mailbox = api.post(
        "mailboxes/",
        {"name": "Partner drop", "host": "mail.partner.invalid", "port": 993, "security": "tls", "username": "u",
         "password": "p", "source": source},
    )  # fmt: skip
    # the host cannot be resolved yet: saved with a warning, and each run says so
    assert mailbox.status == 201 and "Cannot resolve the host" in mailbox.body["warning"], mailbox.body
    mailbox_id = mailbox.body["id"]
    assert api.post(f"mailboxes/{mailbox_id}/run/").status == 202
    sign_in(page, console, "admin", ADMIN_PASSWORD)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Mailboxes").click()
    page.get_by_role("row", name=re.compile("Partner drop")).get_by_role("link", name="Runs").click()
    expect(page.get_by_role("heading", name="Mailbox runs")).to_be_visible()
    expect(page.get_by_role("cell", name="failed")).to_be_visible()
    expect(page.get_by_text("Cannot resolve the host mail.partner.invalid")).to_be_visible()
    screenshot(page, "mailbox-runs")


def test_an_admin_creates_an_api_token_shown_once(page, console):
    from ..api_client import Api

    sign_in(page, console, "admin", ADMIN_PASSWORD)
    page.get_by_role("navigation", name="Main").get_by_role("link", name="API Tokens").click()
    page.get_by_role("link", name="Create").click()
    page.get_by_label("Name (what will use it)").fill("nightly sync")
    page.get_by_role("button", name="Create").click()
    secret = page.get_by_test_id("token-secret").inner_text()
    assert secret.startswith("apl_")
    screenshot(page, "token-created")
    assert Api(console, secret).get("files/?path=/").status == 200
    page.get_by_role("link", name="Done").click()
    expect(page.get_by_role("cell", name="nightly sync")).to_be_visible()
    assert secret not in page.content()
