"""Resumable uploads in Chromium (tus-js-client against the daemon's tus endpoint):
a dropped connection and an expired access token in the middle of a large upload
continue from the recorded offset instead of starting again."""

from __future__ import annotations

import hashlib
import os

from playwright.sync_api import expect

from ..frontends.sftp_client import sftp
from .helpers_console import sign_in

MIB = 1024 * 1024
CHUNK = 16 * MIB  # the console's chunk size (features/files/api/uploadFile.js)


def test_a_large_upload_survives_a_dropped_connection_and_a_token_refresh(page, console, tmp_path):
    console.add_profile("walter")
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(40 * MIB))  # three PATCHes: 16 + 16 + 8 MiB
    sign_in(page, console, "walter", "user-password-1")

    seen = []  # (method, Upload-Offset, what the test did)

    def route(route, request):
        method, offset = request.method, request.headers.get("upload-offset")
        patches = [s for s in seen if s[0] == "PATCH"]
        if method == "PATCH" and offset == str(CHUNK) and not any(s[2] == "dropped" for s in seen):
            seen.append((method, offset, "dropped"))
            route.abort("connectionreset")  # the network fails before this chunk arrives
            return
        if method == "PATCH" and offset == str(2 * CHUNK) and not any(s[2] == "expired" for s in patches):
            seen.append((method, offset, "expired"))
            headers = {**request.headers, "authorization": "Bearer expired.access.token"}
            route.continue_(headers=headers)  # the server answers 401 token_not_valid
            return
        seen.append((method, offset, ""))
        route.continue_()

    page.route("**/api/portal/files/tus/**", route)
    refresh = []
    page.on("request", lambda r: refresh.append(r.url) if r.url.endswith("/token/refresh/") else None)
    page.get_by_label("Upload files", exact=True).set_input_files(str(big))
    expect(page.get_by_role("cell", name="big.bin", exact=True)).to_be_visible(timeout=60_000)

    creations = [s for s in seen if s[0] == "POST"]
    offsets = [int(s[1]) for s in seen if s[0] == "PATCH"]
    assert len(creations) == 1, seen  # one upload from start to end, never created again
    assert offsets == [0, CHUNK, CHUNK, 2 * CHUNK, 2 * CHUNK], seen  # resumed at the offsets, never from 0
    assert ("HEAD", None, "") in seen  # it asked the server where to go on from
    assert refresh, "the expired token was not refreshed"
    session = page.evaluate("() => JSON.parse(localStorage.getItem('authUser'))")
    assert session and session["access"] != "expired.access.token"

    result = sftp(console, "walter", "user-password-1", "get big.bin fetched.bin", tmp_path)
    assert result.returncode == 0, result.stderr
    fetched = (tmp_path / "fetched.bin").read_bytes()
    assert hashlib.sha256(fetched).digest() == hashlib.sha256(big.read_bytes()).digest()
    assert console.logs("upload")[-1]["path"].endswith("/big.bin")


def test_a_folder_upload_keeps_its_structure(page, console, tmp_path):
    console.add_profile("walter")
    tree = tmp_path / "project"
    (tree / "docs" / "specs").mkdir(parents=True)
    (tree / "readme.txt").write_text("top")
    (tree / "docs" / "guide.txt").write_text("guide")
    (tree / "docs" / "specs" / "v1.txt").write_text("spec one")
    sign_in(page, console, "walter", "user-password-1")
    page.get_by_label("Upload a folder").set_input_files(str(tree))
    expect(page.get_by_role("button", name="project", exact=True)).to_be_visible()
    home = console.home("walter")
    expect(page.get_by_text("Uploaded 3 files")).to_be_visible()
    assert (home / "project" / "docs" / "specs" / "v1.txt").read_text() == "spec one"
    assert (home / "project" / "docs" / "guide.txt").read_text() == "guide"
    assert (home / "project" / "readme.txt").read_text() == "top"


def test_files_dropped_on_the_viewer_are_uploaded(page, console):
    console.add_profile("walter")
    sign_in(page, console, "walter", "user-password-1")
    expect(page.get_by_text("This folder is empty.")).to_be_visible()
    page.evaluate(
        """() => {
        const data = new DataTransfer();
        data.items.add(new File(["dropped bytes"], "dropped.txt", { type: "text/plain" }));
        const target = document.querySelector(".file-viewer");
        for (const type of ["dragenter", "dragover", "drop"]) {
          target.dispatchEvent(new DragEvent(type, { bubbles: true, cancelable: true, dataTransfer: data }));
        }
    }"""
    )
    expect(page.get_by_role("cell", name="dropped.txt", exact=True)).to_be_visible()
    assert (console.home("walter") / "dropped.txt").read_text() == "dropped bytes"
