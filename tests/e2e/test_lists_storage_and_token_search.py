"""The operator's list shows each organisation's storage (and measures one on demand);
the API token list has a search box like the other lists."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from ..api_client import signed_in
from ..helpers import ADMIN_PASSWORD
from .conftest import screenshot
from .helpers_console import menu, sign_in


def test_the_operator_sees_each_organisations_storage_and_measures_one_now(page, console):
    other = console.add_organisation("Initech")
    root = console.source_root(other)
    (root / "peter").mkdir(parents=True)
    (root / "peter" / "tps.bin").write_bytes(b"t" * 1500)
    (root / "stapler.bin").write_bytes(b"s" * 500)
    sign_in(page, console, "admin", ADMIN_PASSWORD)
    menu(page, "Organisations")
    expect(page.get_by_role("columnheader", name="Storage")).to_be_visible()
    storage = page.get_by_test_id(f"storage-{other}")
    # made after the daemon's first round: measured in the background once the list asks
    expect(storage).to_have_text(re.compile(r"^(Not measured yet|2\.0 KB in 2 files)$"))
    (root / "more.bin").write_bytes(b"m" * 3000)
    row = page.get_by_role("row", name=re.compile("Initech"))
    row.get_by_role("button", name="Measure storage of Initech").click()
    expect(storage).to_have_text("5.0 KB in 3 files")
    expect(storage).to_have_attribute("title", re.compile(r"^Measured "))
    expect(page.get_by_text("Initech: 5.0 KB in 3 files")).to_be_visible()
    acme = page.get_by_test_id(f"storage-{console.default_org()}")
    expect(acme).to_have_text(re.compile(r"^(Not measured yet|[\d.]+ (B|KB|MB) in \d+ files?)$"))
    screenshot(page, "god-storage")


def test_the_token_list_searches_by_name_and_prefix(page, console):
    api = signed_in(console, "admin", ADMIN_PASSWORD)
    made = {n: api.post("tokens/", {"name": n, "scopes": ["files"]}).body for n in ("Nightly backup", "CI deploy")}
    sign_in(page, console, "admin", ADMIN_PASSWORD)
    menu(page, "API Tokens")
    table = page.get_by_role("table", name="API tokens")
    expect(table.get_by_role("link", name="Nightly backup")).to_be_visible()
    expect(table.get_by_role("link", name="CI deploy")).to_be_visible()
    search = page.get_by_label("Search by name or prefix")
    search.fill("backup")
    expect(table.get_by_role("link", name="Nightly backup")).to_be_visible()
    expect(table.get_by_role("link", name="CI deploy")).to_have_count(0)
    search.fill(made["CI deploy"]["token"])  # a whole token pasted: which one is it?
    expect(table.get_by_role("link", name="CI deploy")).to_be_visible()
    expect(table.get_by_role("link", name="Nightly backup")).to_have_count(0)
    search.fill("nothing like it")
    expect(page.get_by_text("Nothing matches the search.")).to_be_visible()
    secret = made["CI deploy"]["token"].split("_", 2)[2]
    assert secret not in console.output()  # the secret never went into a URL
