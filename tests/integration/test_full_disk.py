"""A full disk and a locked database, on a live daemon driven by real clients.

The profile's home is a 1 MiB tmpfs (root only: skipped elsewhere, with the reason):
an upload that does not fit gets a clear error over SFTP, FTP and HTTP, no partial
file under any name, and the database stays whole. A write lock held on the
database by another process for a few seconds makes an API write wait, not fail.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import threading
from pathlib import Path

import pytest

from ..api_client import signed_in
from ..frontends.sftp_client import sftp
from ..helpers import ADMIN_PASSWORD, wait_for

PASSWORD = "user-password-1"
BIG = 3 * 1024 * 1024  # three times the disk


@pytest.fixture(scope="module")
def small_home(daemon):
    daemon.add_profile("filler")
    home = daemon.home("filler")
    home.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(home)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {mounted.stderr.decode().strip()}")
    yield home
    subprocess.run(["umount", "-l", str(home)], check=True)


def everything_under(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def full_disk_lines(daemon) -> int:
    """The daemon's log lines for ops about a full disk (the client's error reaches only the client)."""
    return daemon.output().count("the storage is full: ")


def integrity(daemon) -> str:
    with sqlite3.connect(daemon.data_dir / "appliance.db") as conn:
        return conn.execute("PRAGMA integrity_check").fetchone()[0]


def test_an_sftp_upload_to_a_full_disk_fails_clearly_and_leaves_nothing(daemon, small_home, tmp_path):
    (tmp_path / "big.bin").write_bytes(os.urandom(BIG))
    logged = full_disk_lines(daemon)
    result = sftp(daemon, "filler", PASSWORD, "put big.bin", tmp_path)
    assert result.returncode != 0
    # OpenSSH's sftp shows only the status code of a failed write, not the server's message
    assert 'write remote "/big.bin": Failure' in result.stderr, result.stderr
    assert everything_under(small_home) == []
    wait_for(lambda: full_disk_lines(daemon) > logged)  # ops see it in the daemon's log
    assert "the storage is full: /big.bin could not be written" in daemon.output()
    # the disk is usable again at once: a small file goes in
    (tmp_path / "small.txt").write_text("fits")
    assert sftp(daemon, "filler", PASSWORD, "put small.txt", tmp_path).returncode == 0
    assert (small_home / "small.txt").read_text() == "fits"
    (small_home / "small.txt").unlink()
    assert integrity(daemon) == "ok"


def test_an_ftp_upload_to_a_full_disk_fails_clearly_and_leaves_nothing(daemon, small_home, tmp_path):
    (tmp_path / "big.bin").write_bytes(os.urandom(BIG))
    logged = full_disk_lines(daemon)
    result = subprocess.run(
        ["curl", "-sS", "--ftp-pasv", "-T", str(tmp_path / "big.bin"),
         f"ftp://filler:{PASSWORD}@127.0.0.1:{daemon.ftp_port}/big.bin"],
        capture_output=True, timeout=60,
    )  # fmt: skip
    assert result.returncode != 0
    assert b"552" in result.stderr or b"451" in result.stderr, result.stderr
    assert everything_under(small_home) == []
    wait_for(lambda: full_disk_lines(daemon) > logged)  # the write failed on a transfer thread
    assert integrity(daemon) == "ok"


def test_an_http_upload_to_a_full_disk_fails_clearly_and_leaves_nothing(daemon, small_home):
    api = signed_in(daemon, "filler", PASSWORD)
    body = (
        b'--B\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\n\r\n'
        + os.urandom(BIG)
        + b"\r\n--B--\r\n"
    )
    reply = api.call(
        "POST", "files/upload/?path=/", raw=body, headers={"Content-Type": "multipart/form-data; boundary=B"}
    )
    assert reply.status in (503, 507), (reply.status, reply.body)
    assert "full" in str(reply.body).lower(), reply.body
    assert everything_under(small_home) == []
    assert integrity(daemon) == "ok"


def test_a_locked_database_makes_an_api_write_wait_not_fail(daemon):
    admin = signed_in(daemon, "admin", ADMIN_PASSWORD)
    locked, release = threading.Event(), threading.Event()

    def hold_the_write_lock():
        conn = sqlite3.connect(daemon.data_dir / "appliance.db", isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")  # another writer: the daemon's writes get SQLITE_BUSY
        locked.set()
        release.wait(10)
        conn.execute("ROLLBACK")
        conn.close()

    holder = threading.Thread(target=hold_the_write_lock)
    holder.start()
    assert locked.wait(10)
    threading.Timer(3.0, release.set).start()
    reply = admin.post("profiles/", {"username": "waited", "email": "waited@example.com", "password": "waited-pass-1"})
    answered_after_release = release.is_set()
    holder.join()
    assert reply.status == 201, (reply.status, reply.body)
    assert answered_after_release  # the write met the lock and waited for it, rather than failing
    assert admin.get(f"profiles/{reply.body['id']}/").body["username"] == "waited"
