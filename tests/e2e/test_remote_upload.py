"""Uploads in Chromium to a profile whose files are on a remote source: S3 (moto's
server) and a remote SFTP host (OpenSSH's sshd), both started here. The console's
tus-js-client sends the file in chunks; the appliance stages them on its disk and
sends the whole file to the source when the last one arrives."""

from __future__ import annotations

import os

import pytest
from playwright.sync_api import expect

from ..helpers import require, require_module
from ..integration.sources import BUCKET, SSHD, RemoteServer, S3Server
from ..integration.test_backends import PASSWORD, PREFIX, BucketBackend, FolderBackend, create_source
from ..integration.test_tus_remote import refuse_writes
from .helpers_console import sign_in

MIB = 1024 * 1024


@pytest.fixture
def remote_console(loopback_console):
    return loopback_console


@pytest.fixture(params=["s3", "sftp"])
def backend(request, remote_console, tmp_path):
    folder = tmp_path / "remote"
    folder.mkdir()
    if request.param == "s3":
        require_module("moto.server")
        server = S3Server(folder)
        server.start()
        config = {"endpoint": server.endpoint, "region": "us-east-1", "bucket": BUCKET, "prefix": PREFIX,
                  "access_key": server.access_key, "secret_key": server.secret_key, "path_style": True}  # fmt: skip
        backend = BucketBackend(remote_console, create_source(remote_console, "Bucket", "s3", config), server)
    else:
        require(SSHD)
        server = RemoteServer(folder)
        server.start()
        config = {"host": "127.0.0.1", "port": server.port, "username": server.user,
                  "private_key": server.client_key.read_text(), "path": str(server.files)}  # fmt: skip
        source = create_source(remote_console, "Remote host", "sftp", config)
        backend = FolderBackend("sftp", remote_console, source, server.files)
    backend.server = server
    yield backend
    server.stop()


def test_a_file_chosen_in_the_viewer_lands_on_the_remote_source(page, backend, tmp_path):
    user = backend.user("rita")
    data = os.urandom(17 * MIB + 5)  # two PATCHes of the console's 16 MiB chunks
    chosen = tmp_path / "quarterly.bin"
    chosen.write_bytes(data)
    sign_in(page, backend.daemon, user, PASSWORD)
    expect(page.get_by_text("This folder is empty.")).to_be_visible()
    page.get_by_label("Upload files", exact=True).set_input_files(str(chosen))
    expect(page.get_by_role("cell", name="quarterly.bin", exact=True)).to_be_visible(timeout=60_000)
    assert backend.files(user) == {"quarterly.bin": len(data)}
    assert backend.read(user, "quarterly.bin") == data
    staging = backend.daemon.data_dir / "uploads" / "staging"
    assert staging.is_dir() and list(staging.iterdir()) == []  # staged there, and removed once sent
    rows = [r for r in backend.daemon.logs("upload") if r["username"] == user]
    assert [(r["path"], r["bytes"]) for r in rows] == [("/quarterly.bin", len(data))]


def fail(backend, failing: bool) -> None:
    """The source stops taking files (the remote host goes down; the bucket refuses writes), or takes them again."""
    if backend.kind == "s3":
        refuse_writes(backend.s3, failing)
    elif failing:
        backend.server.stop()
    else:
        backend.server.start()


def test_a_source_failing_at_the_last_chunk_is_retried_by_the_console(page, backend, tmp_path):
    user = backend.user("ruth")
    data = os.urandom(17 * MIB)
    chosen = tmp_path / "late.bin"
    chosen.write_bytes(data)
    sign_in(page, backend.daemon, user, PASSWORD)
    seen = []  # (method, status)

    def route(route, request):
        if request.method == "PATCH" and request.headers.get("upload-offset") == str(16 * MIB):
            fail(backend, True)  # the last chunk arrives, and the source cannot take the file
        response = route.fetch()
        seen.append((request.method, response.status))
        if request.method == "HEAD" and response.status == 423:
            fail(backend, False)  # back for the console's next try
        route.fulfill(response=response)

    page.route("**/api/portal/files/tus/**", route)
    page.get_by_label("Upload files", exact=True).set_input_files(str(chosen))
    expect(page.get_by_role("cell", name="late.bin", exact=True)).to_be_visible(timeout=60_000)
    # created once; the last PATCH answered 503, the HEAD that followed 423, the next one sent it
    assert [s for s in seen if s[0] == "POST"] == [("POST", 201)], seen
    assert seen[-3:] == [("PATCH", 503), ("HEAD", 423), ("HEAD", 200)], seen
    assert backend.read(user, "late.bin") == data
    assert list((backend.daemon.data_dir / "uploads" / "staging").iterdir()) == []
