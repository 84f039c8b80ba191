"""FTP as users' real clients drive it, for behaviour found by trying the product
from outside: Python's ftplib, curl and lftp against a live daemon."""

from __future__ import annotations

import ftplib
import os

import pytest

PASSWORD = "user-password-1"


@pytest.fixture(scope="module")
def user(daemon) -> str:
    daemon.add_profile("outsider")
    home = daemon.home("outsider")
    home.mkdir(parents=True, exist_ok=True)
    return "outsider"


@pytest.fixture
def client(daemon, user):
    f = ftplib.FTP(timeout=20)
    f.connect("127.0.0.1", daemon.ftp_port)
    f.login(user, PASSWORD)
    yield f
    f.close()


def aborted(client: ftplib.FTP) -> bool:
    """ABOR by ftplib: the transfer's 426, then ABOR's own 226 (which abort() leaves unread)."""
    reply = client.abort()
    if reply.startswith("426"):
        reply = client.getresp()
    return reply.startswith("226")


def test_ftplib_abort_stops_a_download(daemon, user, client):
    """ftplib's abort() sends the whole "ABOR\\r\\n" as urgent data, so its last byte is
    the urgent one; the server must still read the line (it hung until the stall
    timeout, then answered 426 "No data moved for 300 seconds")."""
    (daemon.home(user) / "large.bin").write_bytes(os.urandom(32 << 20))
    conn = client.transfercmd("RETR large.bin")
    conn.recv(4096)  # under way; we read no more, so it stalls
    assert aborted(client)
    conn.close()
    assert client.sendcmd("NOOP").startswith("200")


def test_ftplib_abort_stops_an_upload_and_leaves_nothing(daemon, user, client):
    home = daemon.home(user)
    conn = client.transfercmd("STOR aborted.bin")
    conn.sendall(os.urandom(1 << 20))
    assert aborted(client)
    conn.close()
    assert client.sendcmd("NOOP").startswith("200")
    assert not (home / "aborted.bin").exists()
