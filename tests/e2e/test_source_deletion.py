"""Deleting a local source in Chromium: the admin chooses what becomes of its files.
"Delete the folder and all its files" removes the folder from the disk; keeping them
(the default) leaves a folder outside the organisation's own one reserved for it,
which the operator sees under Local folders on /admin/god and releases."""

from __future__ import annotations

import os
import re

import pytest
from playwright.sync_api import expect

from ..api_client import signed_in
from ..helpers import ADMIN_PASSWORD, daemon_with
from .conftest import screenshot
from .helpers_console import menu, sign_in, sign_out

PASSWORD = "user-password-1"  # add_profile's


@pytest.fixture
def local_console(tmp_path, console_built):
    """A daemon whose organisations may have local sources anywhere under tmp_path."""
    daemon = daemon_with(tmp_path, sources__local_roots=tmp_path)  # the data dir is under it too
    daemon.url = f"http://127.0.0.1:{daemon.http_port}"
    yield daemon, tmp_path / "roots"
    daemon.stop()


def delete_source(page, name: str):
    """Open the source's page from the list and its delete dialog."""
    menu(page, "Sources")
    page.get_by_role("link", name=name, exact=True).click()
    expect(page.get_by_role("heading", name=name, exact=True)).to_be_visible()
    page.get_by_role("button", name="Delete", exact=True).click()
    return page.get_by_role("dialog", name="Delete the source")


def test_a_local_sources_files_are_removed_or_kept_and_the_operator_releases_a_kept_folder(page, local_console):
    daemon, roots = local_console
    daemon.add_profile("alice", is_admin=True)  # the organisation's admin, not the operator
    alice = signed_in(daemon, "alice", PASSWORD)
    for name in ("Scratch", "Archive"):
        folder = roots / name.lower()
        made = alice.post("sources/", {"name": name, "type": "local", "config": {"path": str(folder)}})
        assert made.status == 201, made.body
        (folder / "deep").mkdir(parents=True)
        (folder / "deep" / "report.txt").write_text(f"{name}'s report")

    sign_in(page, daemon, "alice", PASSWORD)
    dialog = delete_source(page, "Scratch")
    expect(dialog.get_by_role("radio", name="Keep the files")).to_be_checked()
    choice = dialog.get_by_role("group", name="What becomes of the files")
    expect(choice).to_contain_text("the folder stays reserved for this organisation")
    expect(dialog.get_by_role("button", name="Delete the source", exact=True)).to_be_visible()
    dialog.get_by_role("radio", name="Delete the folder and all its files").check()
    expect(choice).to_contain_text("This cannot be undone.")
    screenshot(page, "source-delete-with-files")
    dialog.get_by_role("button", name="Delete the source and its files", exact=True).click()
    expect(page).to_have_url(re.compile(r"/admin/sources$"))
    expect(page.get_by_test_id("notification")).to_contain_text("Deleted Scratch and its files")
    assert not (roots / "scratch").exists()

    dialog = delete_source(page, "Archive")
    dialog.get_by_role("button", name="Delete the source", exact=True).click()  # the files kept: the default
    expect(page).to_have_url(re.compile(r"/admin/sources$"))
    expect(page.get_by_role("link", name="Archive", exact=True)).to_have_count(0)
    assert (roots / "archive" / "deep" / "report.txt").read_text() == "Archive's report"

    sign_out(page)
    sign_in(page, daemon, "admin", ADMIN_PASSWORD)
    menu(page, "Organisations")
    folders = page.get_by_test_id("local-folders")
    kept = folders.get_by_role("row").filter(has_text=os.path.realpath(roots / "archive"))
    expect(kept).to_contain_text(re.compile(r"Reserved since .+ \(was Archive\)"))
    expect(kept).to_contain_text("Acme")
    expect(folders.get_by_role("row").filter(has_text=os.path.realpath(roots / "scratch"))).to_have_count(0)
    kept.get_by_role("button", name="Release").click()
    confirm = page.get_by_role("dialog", name="Release the folder")
    expect(confirm).to_contain_text(
        "Any organisation may then make a source in this folder and read the files left in it."
    )
    screenshot(page, "god-release-folder")
    confirm.get_by_role("button", name="Release", exact=True).click()
    expect(kept).to_have_count(0)
    expect(page.get_by_test_id("notification")).to_contain_text("Released")
    assert not daemon.query("SELECT id FROM reserved_folders")
    assert (roots / "archive" / "deep" / "report.txt").exists()  # releasing forgets the folder, not its files
