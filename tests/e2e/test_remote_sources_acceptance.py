"""Issue #9's "done when", end to end: an admin creates an S3 source (moto's server,
a stand-in for S3) or a remote SFTP source (OpenSSH's sshd) through the console's
screens, sees it connected, makes a profile on it there; that user moves files by
OpenSSH sftp, by FTP (curl) and in the file viewer in Chromium; the files are on the
backing store itself, and each transfer has its audit row."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess

import pytest
from playwright.sync_api import expect

from ..frontends.sftp_client import sftp, sha256
from ..helpers import ADMIN_PASSWORD, require, require_module
from ..integration.sources import BUCKET, SSHD, RemoteServer, S3Server
from ..integration.test_backends import PREFIX, BucketBackend, FolderBackend
from .helpers_console import menu, sign_in, sign_out

KB = 1024
USER_PASSWORD = "acceptance-password-1"


@pytest.fixture
def daemon(loopback_console):
    return loopback_console


@pytest.fixture(params=["s3", "sftp"])
def store(request, tmp_path):
    """The remote store, started; nothing is configured in the appliance yet."""
    require("sftp", "sshpass", "curl")
    folder = tmp_path / "remote"
    folder.mkdir()
    if request.param == "s3":
        require_module("moto.server")
        server = S3Server(folder)
    else:
        require(SSHD)
        server = RemoteServer(folder)
    server.kind = request.param
    server.start()
    yield server
    server.stop()


def create_source_in_the_console(page, daemon, server) -> int:
    """Sources → Create, the type's form filled in, created: returns the new source's id."""
    menu(page, "Sources")
    page.get_by_role("link", name="Create").click()
    expect(page.get_by_role("heading", name="Create a source")).to_be_visible()
    if server.kind == "s3":
        name = "Partner bucket"
        page.get_by_label("Name", exact=True).fill(name)
        page.get_by_label("Type").select_option(label="S3-compatible bucket")
        page.get_by_label("Endpoint URL").fill(server.endpoint)
        page.get_by_label("Region").fill("us-east-1")
        page.get_by_label("Bucket").fill(BUCKET)
        page.get_by_label("Prefix").fill(PREFIX)
        expect(page.get_by_label("Authentication")).to_have_value("keys")
        page.get_by_label("Access key").fill(server.access_key)
        page.get_by_label("Secret key").fill(server.secret_key)
        page.get_by_label("Path-style addressing").check()
    else:
        name = "Partner host"
        page.get_by_label("Name", exact=True).fill(name)
        page.get_by_label("Type").select_option(label="Remote SFTP server")
        page.get_by_label("Host", exact=True).fill("127.0.0.1")
        page.get_by_label("Port").fill(str(server.port))
        page.get_by_label("Username").fill(server.user)
        page.get_by_label("Private key").fill(server.client_key.read_text())
        page.get_by_label("Remote folder").fill(str(server.files))
        # the fingerprint is left empty: pinned on first connect, shown on the source's page
        expect(page.get_by_label("Host key fingerprint")).to_have_value("")
    page.get_by_role("button", name="Create").click()
    expect(page.get_by_role("heading", name=name)).to_be_visible()
    expect(page).to_have_url(re.compile(r"/admin/sources/\d+$"))
    source_id = int(page.url.rsplit("/", 1)[1])
    expect(page.get_by_text(f"Created {name}", exact=True)).to_be_visible()  # not "Created …, but: <error>"
    expect(page.locator(".meta .badge")).to_have_text("ok")
    if server.kind == "sftp":
        expect(page.get_by_label("Host key fingerprint")).to_have_value(server.fingerprint())
    menu(page, "Sources")
    row = page.get_by_role("row").filter(has_text=name)
    expect(row.locator(".badge")).to_have_text("ok")
    row_config = daemon.query("SELECT type, status FROM sources WHERE id = ?", source_id)[0]
    assert (row_config["type"], row_config["status"]) == (server.kind, "ok")
    return source_id


def create_profile_in_the_console(page, daemon, source_id: int, username: str) -> None:
    """Profiles → Create: a user on that source, by password, with SFTP, FTP and the web."""
    source_name = daemon.query("SELECT name FROM sources WHERE id = ?", source_id)[0]["name"]
    menu(page, "Profiles")
    page.get_by_role("link", name="Create").click()
    expect(page.get_by_role("heading", name="Create a profile")).to_be_visible()
    page.get_by_label("Username", exact=True).fill(username)
    page.get_by_label("Email", exact=True).fill(f"{username}@example.com")
    page.get_by_label("Password", exact=True).fill(USER_PASSWORD)
    page.get_by_label("Source", exact=True).select_option(label=source_name)
    for protocol in ("SFTP", "FTP", "Web"):
        page.get_by_role("checkbox", name=protocol, exact=True).check()
    page.get_by_role("button", name="Create").click()
    expect(page.get_by_role("heading", name=username)).to_be_visible()
    expect(page).to_have_url(re.compile(r"/admin/profiles/\d+$"))
    row = daemon.query("SELECT source_id, home, protocols FROM profiles WHERE username = ?", username)[0]
    assert row["source_id"] == source_id and row["home"] == f"/{username}"
    assert sorted(json.loads(row["protocols"])) == ["ftp", "sftp", "web"]


def ftp(daemon, username: str, *args: str) -> subprocess.CompletedProcess:
    """curl on the daemon's plain FTP port, passive mode."""
    return subprocess.run(
        ["curl", "-sS", "--ftp-pasv", "--user", f"{username}:{USER_PASSWORD}", *args],
        capture_output=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def rows_of(page, daemon, action: str, username: str, count: int) -> list[tuple]:
    """The audit rows of `action` for `username`, once `count` are there (a row is written as a transfer ends)."""
    for _ in range(200):
        rows = [r for r in daemon.logs(action) if r["username"] == username]
        if len(rows) >= count:
            break
        page.wait_for_timeout(50)
    return [(r["protocol"], r["path"], r["bytes"]) for r in rows]


def test_an_admin_sets_up_a_remote_source_in_the_console_and_its_user_moves_files(page, daemon, store, tmp_path):
    user = f"partner{store.kind}"

    # 1-2. the admin, through the console's screens
    sign_in(page, daemon, "admin", ADMIN_PASSWORD)
    source_id = create_source_in_the_console(page, daemon, store)
    create_profile_in_the_console(page, daemon, source_id, user)
    sign_out(page)
    source = {"id": source_id}
    backend = (
        BucketBackend(daemon, source, store)
        if store.kind == "s3"
        else FolderBackend("sftp", daemon, source, store.files)
    )

    # 3a. OpenSSH sftp, by password: up, and back down
    by_sftp = os.urandom(300 * KB + 17)
    (tmp_path / "by-sftp.bin").write_bytes(by_sftp)
    result = sftp(daemon, user, USER_PASSWORD, "put by-sftp.bin\nget by-sftp.bin sftp-back.bin\nls -l", tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "sftp-back.bin").read_bytes() == by_sftp

    # 3b. plain FTP with curl: up, and back down
    by_ftp = os.urandom(200 * KB + 3)
    (tmp_path / "by-ftp.bin").write_bytes(by_ftp)
    url = f"ftp://127.0.0.1:{daemon.ftp_port}/"
    result = ftp(daemon, user, "-T", str(tmp_path / "by-ftp.bin"), url + "by-ftp.bin")
    assert result.returncode == 0, result.stderr
    result = ftp(daemon, user, "-o", str(tmp_path / "ftp-back.bin"), url + "by-ftp.bin")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "ftp-back.bin").read_bytes() == by_ftp

    # 3c. the browser: both files listed, a third uploaded in the viewer, one downloaded
    by_web = os.urandom(250 * KB + 9)
    (tmp_path / "by-web.bin").write_bytes(by_web)
    sign_in(page, daemon, user, USER_PASSWORD)
    expect(page).to_have_url(re.compile(r"/fileviewer$"))
    for name in ("by-sftp.bin", "by-ftp.bin"):
        expect(page.get_by_role("cell", name=name, exact=True)).to_be_visible()
    page.get_by_label("Upload files", exact=True).set_input_files(str(tmp_path / "by-web.bin"))
    expect(page.get_by_role("cell", name="by-web.bin", exact=True)).to_be_visible(timeout=30_000)
    with page.expect_download() as info:
        page.get_by_role("button", name="Download by-ftp.bin", exact=True).click()
    download = info.value
    assert download.failure() is None and download.suggested_filename == "by-ftp.bin"
    assert sha256(download.path()) == hashlib.sha256(by_ftp).hexdigest()

    # 4. on the backing store itself (the bucket's keys under the prefix, the sshd's folder) ...
    assert backend.files(user) == {"by-sftp.bin": len(by_sftp), "by-ftp.bin": len(by_ftp), "by-web.bin": len(by_web)}
    assert backend.read(user, "by-sftp.bin") == by_sftp
    assert backend.read(user, "by-ftp.bin") == by_ftp
    assert backend.read(user, "by-web.bin") == by_web
    names = ("by-sftp.bin", "by-ftp.bin", "by-web.bin")
    if store.kind == "s3":  # the whole bucket: the three objects under prefix/home (and folder markers only)
        assert {k for k in store.keys() if not k.endswith("/")} == {f"{PREFIX}/{user}/{n}" for n in names}
    else:  # the whole remote folder
        assert {str(p.relative_to(store.files)) for p in store.files.rglob("*") if p.is_file()} == {
            f"{user}/{n}" for n in names
        }
    # ... and one audit row a transfer
    assert sorted(rows_of(page, daemon, "upload", user, 3)) == [
        ("ftp", "/by-ftp.bin", len(by_ftp)),
        ("sftp", "/by-sftp.bin", len(by_sftp)),
        ("web", "/by-web.bin", len(by_web)),
    ]
    assert sorted(rows_of(page, daemon, "download", user, 3)) == [
        ("ftp", "/by-ftp.bin", len(by_ftp)),
        ("sftp", "/by-sftp.bin", len(by_sftp)),
        ("web", "/by-ftp.bin", len(by_ftp)),
    ]
