"""A resumed upload or an append starts as a copy of the file it extends: the files
service counts that copy against the quota, the same for every protocol and backend
(the backends count nothing of it). A profile already over its quota (lowered by an
admin, or files put there by hand) is refused an append with the quota's own message,
over FTP (APPE, REST and STOR) and over SFTP (an open that keeps the file)."""

from __future__ import annotations

import ftplib
import io
import os
import socket

import paramiko
import pytest

PASSWORD = "user-password-1"
QUOTA = 100_000
REFUSAL = "Your storage quota of 100.0 KB is used up"


@pytest.fixture
def over_quota(daemon):
    """A profile whose home holds more than its quota: one file of 150,000 bytes."""

    def make(username: str):
        daemon.add_profile(username, quota_bytes=QUOTA)
        home = daemon.home(username)
        home.mkdir(parents=True, exist_ok=True)
        data = os.urandom(150_000)
        (home / "big.bin").write_bytes(data)
        return home, data

    return make


def test_an_ftp_append_or_resume_over_the_quota_is_refused_and_the_file_kept(daemon, over_quota):
    home, data = over_quota("appender-ftp")
    ftp = ftplib.FTP()
    ftp.connect("127.0.0.1", daemon.ftp_port, timeout=60)
    try:
        ftp.login("appender-ftp", PASSWORD)
        with pytest.raises(ftplib.error_perm) as appended:
            ftp.storbinary("APPE big.bin", io.BytesIO(b"more"))
        assert str(appended.value).startswith("552") and REFUSAL in str(appended.value)
        with pytest.raises(ftplib.error_perm) as resumed:
            ftp.storbinary("STOR big.bin", io.BytesIO(b"more"), rest=len(data))
        assert str(resumed.value).startswith("552") and REFUSAL in str(resumed.value)
    finally:
        ftp.close()
    assert (home / "big.bin").read_bytes() == data
    assert sorted(p.name for p in home.iterdir()) == ["big.bin"]  # no temporary file left


def test_an_sftp_append_over_the_quota_is_refused_with_the_same_message(daemon, over_quota):
    home, data = over_quota("appender-sftp")
    sock = socket.create_connection(("127.0.0.1", daemon.sftp_port), timeout=60)
    transport = paramiko.Transport(sock)
    try:
        transport.connect(username="appender-sftp", password=PASSWORD)
        client = paramiko.SFTPClient.from_transport(transport)
        with pytest.raises(OSError) as appended:
            with client.open("big.bin", "a") as f:
                f.write(b"more")
        assert REFUSAL in str(appended.value)
    finally:
        transport.close()
    assert (home / "big.bin").read_bytes() == data
    assert sorted(p.name for p in home.iterdir()) == ["big.bin"]
