"""The login page's initial load budget: at most 250 KB of gzip'd JavaScript, measured
from what Chromium actually fetches for /auth/login; the figure is written to
test-artifacts/login-js-budget.txt."""

from __future__ import annotations

import gzip

from playwright.sync_api import expect

from ..helpers import ROOT

BUDGET = 250 * 1000  # bytes of gzip'd JS


def test_the_login_page_loads_at_most_250_kb_of_gzipped_js(page, console):
    scripts = {}

    def record(response):
        if response.url.endswith(".js") and response.status == 200:
            scripts[response.url] = response.body()

    page.on("response", record)
    page.goto(console.url + "/auth/login")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    page.wait_for_load_state("networkidle")
    assert scripts, "the login page loaded no script"
    sizes = {url.rsplit("/", 1)[1]: len(gzip.compress(body, 9)) for url, body in scripts.items()}
    total = sum(sizes.values())
    report = ROOT / "test-artifacts" / "login-js-budget.txt"
    report.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"{name}: {size} bytes gzip'd" for name, size in sorted(sizes.items())]
    report.write_text("\n".join([*lines, f"total: {total} bytes (budget {BUDGET})", ""]))
    assert total <= BUDGET, f"the login page loads {total} bytes of gzip'd JS: {sizes}"
    # the chart and the admin screens are chunks of their own, not loaded here
    assert not any("TransfersChart" in name for name in sizes), sizes
