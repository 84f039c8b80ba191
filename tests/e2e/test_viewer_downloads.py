"""Downloads from the file viewer in Chromium: the browser itself fetches a short-lived
signed link and saves the file (the page never reads the bytes into memory)."""

from __future__ import annotations

import hashlib
import os

from playwright.sync_api import expect

from .helpers_console import sign_in


def test_a_download_from_the_viewer_arrives_as_a_file_with_the_right_bytes(page, console):
    console.add_profile("dora")
    home = console.home("dora")
    (home / "reports").mkdir(parents=True)
    data = os.urandom(6 * 1024 * 1024 + 123)
    (home / "reports" / "q3 résumé.bin").write_bytes(data)
    sign_in(page, console, "dora", "user-password-1")
    page.goto(console.url + "/fileviewer?path=/reports")
    expect(page.get_by_text("q3 résumé.bin")).to_be_visible()

    requests = []
    page.on("request", lambda r: requests.append(r) if "/files/download" in r.url else None)
    with page.expect_download() as info:
        page.get_by_role("button", name="Download q3 résumé.bin").click()
    download = info.value
    assert download.failure() is None
    assert download.suggested_filename == "q3 résumé.bin"
    with open(download.path(), "rb") as f:
        assert hashlib.sha256(f.read()).hexdigest() == hashlib.sha256(data).hexdigest()

    # the page asked for a link; the browser, not a script, fetched the file with it
    kinds = [(r.method, r.resource_type, r.url.split("?")[0].rsplit("/api/portal/", 1)[1]) for r in requests]
    assert ("POST", "fetch", "files/download-link/") in kinds
    assert not [k for k in kinds if k[2] == "files/download/" and k[1] in ("fetch", "xhr")]
    # (a navigation that turns into a download is not reported as a request: the access log has it)
    for _ in range(200):  # the line is written as the request finishes
        fetched = [line for line in console.output().splitlines() if "/api/portal/files/download/" in line]
        if fetched:
            break
        page.wait_for_timeout(50)
    assert len(fetched) == 1 and '/reports/q3%20r%C3%A9sum%C3%A9.bin&access=*** HTTP/1.1" 200 ' in fetched[0]
    sql = "SELECT protocol, bytes FROM logs WHERE action = 'download' AND username = 'dora'"
    for _ in range(200):  # the row is written as the reply ends
        if console.query(sql):
            break
        page.wait_for_timeout(50)
    assert [(r["protocol"], r["bytes"]) for r in console.query(sql)] == [("web", len(data))]
    expect(page).to_have_url(console.url + "/fileviewer?path=/reports")  # the viewer stayed where it was


def test_a_download_the_user_may_no_longer_make_says_why(page, console):
    console.add_profile("dan")
    home = console.home("dan")
    home.mkdir(parents=True, exist_ok=True)
    (home / "gone.txt").write_bytes(b"soon gone")
    sign_in(page, console, "dan", "user-password-1")
    page.goto(console.url + "/fileviewer")
    expect(page.get_by_text("gone.txt")).to_be_visible()
    console.execute("UPDATE profiles SET permissions = '[\"list\"]' WHERE username = 'dan'")
    page.get_by_role("button", name="Download gone.txt").click()
    expect(page.get_by_text("You may not download files (/gone.txt).", exact=False)).to_be_visible()
