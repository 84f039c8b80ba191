"""The console's accessibility: axe-core (the npm package in ui/node_modules) injected
into Debian's Chromium on every screen of the spec, at 1280x800 and 390x844, as an
organisation admin, a user and the operator, under a light and a dark branding
colour; any serious or critical violation fails. Then what axe cannot see: focus kept
in dialogs and given back, the user menu's arrow keys, the skip link, and a file
viewer at phone width whose rows fit. One daemon and one browser for the module;
screenshots of each screen at both widths land in test-artifacts/screenshots/."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from ..api_client import signed_in
from ..helpers import ADMIN_PASSWORD, ROOT, make_daemon
from .conftest import ARTEFACTS, WIDE, screenshot
from .helpers_console import arrange, sign_in

AXE = ROOT / "ui" / "node_modules" / "axe-core" / "axe.min.js"
PHONE = {"width": 390, "height": 844}
COLOURS = {"light": "#8FE3D6", "dark": "#0B2545"}  # a light teal (white text failed on it) and a navy
LONG_NAME = "quarterly-financial-statements-for-the-board-2026-final-version.pdf"
# the violations that fail the test; moderate and minor ones are reported by axe but do not
SEVERE = ("serious", "critical")
RUN_AXE = """async () => {
  const result = await axe.run(document, {resultTypes: ["violations"]});
  return result.violations
    .filter((v) => ["serious", "critical"].includes(v.impact))
    .map((v) => ({id: v.id, impact: v.impact, help: v.help,
                  nodes: v.nodes.slice(0, 3).map((n) => n.target.join(" ") + ": " + n.failureSummary)}));
}"""


@pytest.fixture(scope="module")
def world(tmp_path_factory, console_built):
    if not AXE.exists():
        pytest.fail(f"{AXE} is missing: run `cd ui && npm ci`")
    daemon = make_daemon(tmp_path_factory.mktemp("a11y"))
    daemon.url = f"http://127.0.0.1:{daemon.http_port}"
    ids = arrange(daemon)
    daemon.add_profile("alice", is_admin=True)  # an organisation's admin who is not the operator
    for user in ("alice", "walter"):
        home = daemon.home(user)
        home.mkdir(parents=True, exist_ok=True)
        (home / LONG_NAME).write_bytes(b"x" * 2048)
        (home / "a-folder-with-a-rather-long-name-indeed").mkdir(exist_ok=True)
        (home / "notes.txt").write_text("hello")
    for user in ("alice", "walter"):  # transfers: the dashboard's top users get rows
        assert signed_in(daemon, user, "user-password-1").get("files/download/?path=/notes.txt").status == 200
    yield daemon, ids
    daemon.stop()


@pytest.fixture(scope="module")
def axe_browser(browser):
    """Contexts that bypass the console's CSP (so axe can be injected) and inject axe-core."""
    source = AXE.read_text()
    contexts = []

    def new_page(viewport=WIDE):
        context = browser.new_context(bypass_csp=True, viewport=viewport)
        context.add_init_script(script=source)
        contexts.append(context)
        return context.new_page()

    yield new_page
    for context in contexts:
        context.close()


def heading(name):
    return lambda page: page.get_by_role("heading", name=name, exact=True)


def cell(name):
    return lambda page: page.get_by_role("cell", name=name, exact=True).first


def click(role, name):
    return lambda page: page.get_by_role(role, name=name, exact=True).first.click()


def admin_screens(ids) -> list:
    """(name, path, what shows it is ready, what to do first or None) for the organisation's admin."""
    dialog = lambda name: lambda page: page.get_by_role("dialog", name=name)  # noqa: E731
    return [
        ("dashboard", "/", lambda page: page.get_by_test_id("transfers-chart").locator("svg").first, None),
        ("welcome", "/?welcome=1", dialog("Welcome"), None),
        ("connect-dialog", "/admin/sources", dialog("How do I connect?"), click("button", "How do I connect?")),
        ("user-menu", "/admin/sources", lambda page: page.get_by_role("menu"), lambda page: open_user_menu(page)),
        ("sources", "/admin/sources", cell("Default"), None),
        ("source-create", "/admin/sources/create", heading("Create a source"), None),
        ("source-detail", f"/admin/sources/{ids['source']}", heading("Default"), None),
        ("source-delete", f"/admin/sources/{ids['source']}", dialog("Delete the source"), click("button", "Delete")),
        ("source-callback", "/admin/sources/callback", lambda page: page.locator("main h1").first, None),
        ("profiles", "/admin/profiles", cell("walter"), None),
        ("profile-create", "/admin/profiles/create", heading("Create a profile"), None),
        ("profile-detail", f"/admin/profiles/{ids['profile']}", heading("walter"), None),
        ("tokens", "/admin/tokens", cell("nightly sync"), None),
        ("token-create", "/admin/tokens/create", heading("Create an API token"), None),
        ("token-detail", f"/admin/tokens/{ids['token']}", heading("nightly sync"), None),
        ("mailboxes", "/admin/mailboxes", cell("Invoices"), None),
        ("mailbox-create", "/admin/mailboxes/create", heading("Create a mailbox"), None),
        ("mailbox-detail", f"/admin/mailboxes/{ids['mailbox']}", heading("Invoices"), None),
        ("mailbox-runs", f"/admin/mailboxes/{ids['mailbox']}/runs", heading("Mailbox runs"), None),
        ("organisation", "/admin/organisation", heading("Organisation settings"), None),
        ("logs", "/admin/logs", lambda page: page.get_by_role("cell", name=re.compile("signed in")).first, None),
        ("admin-files", "/fileviewer", lambda page: page.get_by_title(LONG_NAME), None),
        ("share-dialog", "/fileviewer", dialog("Share notes.txt"), lambda page: row_action(page, "notes.txt", "Share")),
        ("user-terms", "/user-terms", lambda page: page.get_by_text("Be kind to the files."), None),
        ("not-found", "/no/such/screen", heading("Page not found"), None),
        ("error", "/error", heading("Something went wrong"), None),
    ]


def operator_screens(ids) -> list:
    return [
        ("god", "/admin/god", cell("Globex"), None),
        ("god-logs", f"/admin/god/{ids['org']}/logs", heading("Logs of Globex"), None),
        ("operator-dashboard", "/", lambda page: page.get_by_test_id("transfers-chart").locator("svg").first, None),
    ]


USER_SCREENS = [
    ("fileviewer", "/fileviewer", lambda page: page.get_by_title(LONG_NAME), None),
    ("fileviewer-folder", "/fileviewer?path=%2Freports", lambda page: page.get_by_title("q1.pdf"), None),
    ("user-terms-user", "/user-terms", lambda page: page.get_by_text("Be kind to the files."), None),
]

AUTH_SCREENS = [
    ("login", "/auth/login?branding=acme", heading("Sign in"), None),
    ("forgot-password", "/auth/forgot-password", heading("Forgot password"), None),
    ("register", "/auth/register?uid=x&token=y", heading("Welcome: choose your password"), None),
    ("reset-confirm", "/auth/MQ/abc-123", heading("Choose a new password"), None),
    ("billing", "/auth/billing", heading("Payment missing"), None),
    ("shared", "/auth/shared", heading("Shared files"), None),
]


def open_user_menu(page):
    page.locator(".user-menu > button").click()


def row_action(page, name: str, action: str):
    """Use a file's row action: a button of its own on wide screens, an item of its Actions menu on phones."""
    expect(page.get_by_title(name, exact=True)).to_be_visible()  # the folder has loaded
    direct = page.get_by_role("button", name=f"{action} {name}", exact=True)
    if direct.is_visible():
        direct.click()
        return
    page.get_by_role("button", name=f"Actions for {name}", exact=True).click()
    page.get_by_role("menuitem", name=action, exact=True).click()


def audit(page, label: str) -> list[str]:
    return [
        f"{label}: {v['id']} ({v['impact']}) {v['help']}\n      " + "\n      ".join(v["nodes"])
        for v in page.evaluate(RUN_AXE)
    ]


def tour(page, url: str, screens: list, colour: str, found: list[str]) -> None:
    """Each screen at both widths: ready, audited, photographed."""
    for name, path, ready, before in screens:
        page.set_viewport_size(WIDE)
        page.goto(url + path)
        for size in (WIDE, PHONE):
            page.set_viewport_size(size)
            if before is not None:
                if size is PHONE:  # the state a click opened: opened again at this width
                    page.goto(url + path)
                before(page)
            expect(ready(page)).to_be_visible()
            page.wait_for_timeout(200)  # the chart redraws 150 ms after a resize
            found += audit(page, f"{name} at {size['width']} px, {colour} branding")
            screenshot(page, f"{name}-{size['width']}-{colour}")


def test_every_screen_passes_axe_at_both_widths_for_each_role_and_branding(world, axe_browser):
    daemon, ids = world
    pages = {
        "admin": axe_browser(),
        "operator": axe_browser(),
        "user": axe_browser(),
        "visitor": axe_browser(),
    }
    sign_in(pages["admin"], daemon, "alice", "user-password-1")
    sign_in(pages["operator"], daemon, "admin", ADMIN_PASSWORD)
    sign_in(pages["user"], daemon, "walter", "user-password-1")
    found: list[str] = []
    for colour, value in COLOURS.items():
        daemon.execute(
            "UPDATE organisations SET branding = 1, branding_colour = ? WHERE id = ?", value, daemon.default_org()
        )
        tour(pages["admin"], daemon.url, admin_screens(ids), colour, found)
        tour(pages["operator"], daemon.url, operator_screens(ids), colour, found)
        tour(pages["user"], daemon.url, USER_SCREENS, colour, found)
        tour(pages["visitor"], daemon.url, AUTH_SCREENS, colour, found)
        # the drawer at phone width: the menu's text on the branding colour
        page = pages["admin"]
        page.set_viewport_size(PHONE)
        page.goto(daemon.url + "/admin/logs")
        page.get_by_role("button", name="Toggle menu").click()
        expect(page.get_by_test_id("side-menu")).to_be_in_viewport()
        page.wait_for_timeout(300)  # the drawer's slide
        found += audit(page, f"drawer at 390 px, {colour} branding")
        screenshot(page, f"drawer-390-{colour}")
    report = ROOT / "test-artifacts" / "axe-violations.txt"
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text("\n".join(found) + "\n")
    assert not found, f"{len(found)} serious or critical axe violations (all in {report}):\n" + "\n".join(found[:40])


IN_DIALOG = "document.querySelector('[role=dialog]').contains(document.activeElement)"


def test_a_dialog_keeps_focus_inside_and_gives_it_back_on_close(world, axe_browser):
    daemon, _ = world
    page = axe_browser()
    sign_in(page, daemon, "alice", "user-password-1")
    page.goto(daemon.url + "/admin/profiles")
    chip = page.get_by_role("button", name="How do I connect?")
    chip.focus()
    page.keyboard.press("Enter")
    dialog = page.get_by_role("dialog", name="How do I connect?")
    expect(dialog).to_be_visible()
    assert page.evaluate(IN_DIALOG)
    first = page.evaluate("document.activeElement.outerHTML")
    stops = dialog.locator("a[href], button, input, select, textarea").count()
    assert stops >= 2
    for _ in range(stops):  # forwards once round: never out, and back to the start
        page.keyboard.press("Tab")
        assert page.evaluate(IN_DIALOG)
    assert page.evaluate("document.activeElement.outerHTML") == first
    for _ in range(stops + 1):
        page.keyboard.press("Shift+Tab")
        assert page.evaluate(IN_DIALOG)
    page.keyboard.press("Escape")
    expect(dialog).to_have_count(0)
    expect(chip).to_be_focused()


def test_the_user_menu_moves_with_the_arrow_keys(world, axe_browser):
    daemon, _ = world
    page = axe_browser()
    sign_in(page, daemon, "alice", "user-password-1")
    button = page.get_by_role("button", name="alice", exact=True)
    button.focus()
    page.keyboard.press("ArrowDown")
    item = lambda name: page.get_by_role("menuitem", name=name, exact=True)  # noqa: E731
    expect(item("Logout")).to_be_focused()
    page.keyboard.press("ArrowDown")
    expect(item("Documentation")).to_be_focused()
    page.keyboard.press("End")
    expect(item("User terms")).to_be_focused()
    page.keyboard.press("ArrowDown")  # wraps round
    expect(item("Logout")).to_be_focused()
    page.keyboard.press("ArrowUp")
    expect(item("User terms")).to_be_focused()
    page.keyboard.press("Escape")
    expect(page.get_by_role("menu")).to_have_count(0)
    expect(button).to_be_focused()
    page.keyboard.press("ArrowUp")  # opens on the last item
    expect(item("User terms")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/user-terms$"))


def test_a_skip_link_leads_past_the_header_and_menu(world, axe_browser):
    daemon, _ = world
    page = axe_browser()
    sign_in(page, daemon, "alice", "user-password-1")
    page.goto(daemon.url + "/admin/profiles")
    expect(page.get_by_role("heading", name="Profiles", exact=True)).to_be_visible()
    page.keyboard.press("Tab")
    skip = page.get_by_role("link", name="Skip to main content")
    expect(skip).to_be_focused()
    expect(skip).to_be_in_viewport()
    page.keyboard.press("Enter")
    expect(page.locator("main")).to_be_focused()
    page.keyboard.press("Tab")
    assert page.evaluate("document.querySelector('main').contains(document.activeElement)")


def test_the_file_viewer_fits_a_phone_with_its_actions_in_a_menu(world, axe_browser):
    daemon, _ = world
    page = axe_browser(PHONE)
    sign_in(page, daemon, "walter", "user-password-1")
    page.goto(daemon.url + "/fileviewer")
    name = page.get_by_title(LONG_NAME, exact=True)
    expect(name).to_be_visible()
    # nothing wider than the phone: not the page, not the table, not a row
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    assert page.evaluate(
        """(() => {
          const wrap = document.querySelector("table.files").closest(".table-wrap");
          const right = wrap.getBoundingClientRect().right;
          return wrap.scrollWidth <= wrap.clientWidth
            && [...wrap.querySelectorAll("tbody tr")].every((row) => row.getBoundingClientRect().right <= right + 0.5);
        })()"""
    )
    # the long name is cut with an ellipsis on one line, not broken mid-word; all of it is there to read
    cut = name.locator(".ellipsis")
    assert cut.evaluate("el => getComputedStyle(el).textOverflow") == "ellipsis"
    assert cut.evaluate("el => el.scrollWidth > el.clientWidth")
    assert cut.evaluate("el => el.getClientRects().length") == 1
    expect(page.get_by_role("cell", name=re.compile("^" + re.escape(LONG_NAME)))).to_be_visible()
    # one Actions button per row instead of four links; every action through it
    rows = page.locator("table.files tbody tr").count()
    expect(page.get_by_role("button", name=re.compile(r"^Actions for "))).to_have_count(rows)
    expect(page.get_by_role("button", name=f"Download {LONG_NAME}", exact=True)).to_have_count(0)
    actions = page.get_by_role("button", name=f"Actions for {LONG_NAME}", exact=True)
    actions.click()
    menu = page.get_by_role("menu", name=f"Actions for {LONG_NAME}")
    expect(menu.get_by_role("menuitem")).to_have_text(["Download", "Share", "Rename", "Delete"])
    box = menu.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"], box
    expect(menu.get_by_role("menuitem", name="Download")).to_be_focused()
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    expect(menu.get_by_role("menuitem", name="Rename")).to_be_focused()
    screenshot(page, "fileviewer-actions-menu-390")
    page.keyboard.press("Enter")
    dialog = page.get_by_role("dialog", name=f"Rename {LONG_NAME}")
    expect(dialog).to_be_visible()
    page.keyboard.press("Escape")
    expect(dialog).to_have_count(0)
    expect(actions).to_be_focused()  # focus back where the person was
    actions.click()
    page.get_by_role("menuitem", name="Share").click()
    share = page.get_by_role("dialog", name=f"Share {LONG_NAME}")
    share.get_by_role("button", name="Create link").click()
    expect(share.get_by_test_id("share-url")).to_be_visible()
    # the made link's two buttons side by side on one row
    copy, done = share.get_by_role("button", name="Copy link"), share.get_by_role("button", name="Done")
    assert abs(copy.bounding_box()["y"] - done.bounding_box()["y"]) < 2
    screenshot(page, "share-link-made-390")
    done.click()
    expect(actions).to_be_focused()


FITS = "document.documentElement.scrollWidth <= window.innerWidth"
LISTS_FIT = """(() => [...document.querySelectorAll(".table-wrap")].every(
  (wrap) => wrap.scrollWidth <= wrap.clientWidth && wrap.getBoundingClientRect().right <= window.innerWidth))()"""


def phone_row_actions(page, name: str, items: list[str | re.Pattern], label: str) -> None:
    """At phone width: the page does not scroll sideways, the row's Actions button is on
    the screen, and its menu opens on the screen with the row's actions (axe'd open)."""
    assert page.evaluate(FITS), page.evaluate("[document.documentElement.scrollWidth, innerWidth]")
    assert page.evaluate(LISTS_FIT)
    actions = page.get_by_role("button", name=f"Actions for {name}", exact=True)
    actions.scroll_into_view_if_needed()
    expect(actions).to_be_in_viewport()
    button = actions.bounding_box()
    assert button["x"] >= 0 and button["x"] + button["width"] <= PHONE["width"], button
    actions.click()
    menu = page.get_by_role("menu", name=f"Actions for {name}")
    expect(menu.get_by_role("menuitem")).to_have_text(items)
    box = menu.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"], box
    found = audit(page, f"{label} actions menu at 390 px")
    assert not found, found
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTEFACTS / f"{label}-actions-menu-390.png"))  # not scrolled: that closes the menu


def test_organisations_profiles_and_logs_fit_a_phone_with_their_actions_in_a_menu(world, axe_browser):
    daemon, _ = world
    page = axe_browser(PHONE)
    sign_in(page, daemon, "admin", ADMIN_PASSWORD)  # the operator: every list

    page.goto(daemon.url + "/admin/god")
    expect(page.get_by_role("cell", name="Globex", exact=True)).to_be_visible()
    expect(page.get_by_role("button", name="Change status")).to_have_count(0)  # in the menu, not in the row
    phone_row_actions(page, "Globex", ["Change status", "Logs", "Measure storage"], "god")
    page.get_by_role("menuitem", name="Change status").click()
    dialog = page.get_by_role("dialog", name="Change Globex")
    expect(dialog).to_be_visible()
    page.keyboard.press("Escape")
    expect(dialog).to_have_count(0)

    page.goto(daemon.url + "/admin/profiles")
    expect(page.get_by_role("cell", name="walter", exact=True)).to_be_visible()
    phone_row_actions(page, "walter", ["Edit", "Delete"], "profiles")
    page.get_by_role("menuitem", name="Edit").click()
    expect(page.get_by_role("heading", name="walter")).to_be_visible()

    page.goto(daemon.url + "/admin/logs?username=walter")
    expect(page.get_by_role("cell", name="walter", exact=True).first).to_be_visible()
    entry = page.get_by_role("button", name=re.compile(r"^Actions for log entry \d+$")).first
    name = entry.get_attribute("aria-label").removeprefix("Actions for ")
    phone_row_actions(page, name, [re.compile(r"^Only \S+ entries$"), re.compile(r"^Only \S+ entries$")], "logs")
    page.get_by_role("menuitem").first.click()  # narrows the log to the entry's action
    expect(page).to_have_url(re.compile(r"\?action=\w+&username=walter$"))


def test_log_filters_live_in_the_address(world, axe_browser):
    daemon, _ = world
    page = axe_browser()
    sign_in(page, daemon, "alice", "user-password-1")
    page.goto(daemon.url + "/admin/logs")
    expect(page.get_by_role("cell", name="alice", exact=True).first).to_be_visible()
    page.get_by_label("User").fill("walter")
    expect(page).to_have_url(re.compile(r"/admin/logs\?username=walter$"))
    expect(page.get_by_role("cell", name="alice", exact=True)).to_have_count(0)
    page.reload()  # what a shared or bookmarked address shows
    expect(page.get_by_label("User")).to_have_value("walter")
    expect(page.get_by_role("cell", name="walter", exact=True).first).to_be_visible()
    expect(page.get_by_role("cell", name="alice", exact=True)).to_have_count(0)

    # the operator's view of an organisation's log: the same filters, dates too, kept the same way
    operator = axe_browser()
    sign_in(operator, daemon, "admin", ADMIN_PASSWORD)
    operator.goto(f"{daemon.url}/admin/god/{daemon.default_org()}/logs")
    expect(operator.get_by_role("cell", name="alice", exact=True).first).to_be_visible()
    operator.get_by_label("From").fill("2099-01-01")
    expect(operator).to_have_url(re.compile(r"date_from=2099-01-01"))
    expect(operator.get_by_text("No log entries match.")).to_be_visible()
    operator.reload()
    expect(operator.get_by_label("From")).to_have_value("2099-01-01")
    expect(operator.get_by_text("No log entries match.")).to_be_visible()
    operator.get_by_label("From").fill("")
    operator.get_by_label("To", exact=True).fill("2000-01-01")
    expect(operator).to_have_url(re.compile(r"\?date_to=2000-01-01$"))
    expect(operator.get_by_text("No log entries match.")).to_be_visible()
