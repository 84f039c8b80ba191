"""An upload's final status goes out only once its audit row is committed; a
download's goes out before its row (the client's next request overlaps the row's
commit), and the session's end waits for the row.

The audit log writes its rows by group commit (many rows per transaction): each
upload must still wait for its own row. These tests hold SQLite's write lock from
outside (a second connection in BEGIN IMMEDIATE), so the daemon can commit no row,
upload a file over SFTP, FTP and HTTP, wait until the file is in place on the disk
(its commit is done and its row is next), and check that the client has no final
status yet; once the lock is released, the status comes and the row is there."""

from __future__ import annotations

import contextlib
import ftplib
import os
import socket
import subprocess
import threading

import paramiko
import pytest

from ..api_client import signed_in
from ..frontends.sftp_client import OPTIONS, RawSftp, auth_options, string, u32, u64
from ..helpers import recv_exactly, wait_for

PASSWORD = "user-password-1"
TIMEOUT = 60


@contextlib.contextmanager
def database_write_lock(daemon):
    """Hold the database's write lock: the daemon's transactions wait (busy_timeout) until it goes."""
    conn = daemon.db()
    conn.isolation_level = None
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        conn.execute("ROLLBACK")
        conn.close()


class InBackground(threading.Thread):
    """Run `fn` in a thread; `finished` is set when it returns (its result or error kept)."""

    def __init__(self, fn):
        super().__init__(daemon=True)
        self.fn = fn
        self.finished = threading.Event()
        self.result = self.error = None
        self.start()

    def run(self):
        try:
            self.result = self.fn()
        except BaseException as e:  # noqa: BLE001 - reported by the test
            self.error = e
        finally:
            self.finished.set()


def uploads_of(daemon, username: str, path: str) -> list:
    return [row for row in daemon.logs("upload") if row["username"] == username and row["path"] == path]


def check_held_until_the_row_commits(daemon, username: str, name: str, upload) -> None:
    """Start `upload` (a function that returns once the client has the final status)
    with the database locked; the file lands, the status does not come; unlock: it comes."""
    target = daemon.home(username) / name
    with database_write_lock(daemon):
        running = InBackground(upload)
        wait_for(lambda: target.exists() or running.finished.is_set())
        assert running.error is None, running.error
        assert target.exists()
        # the file is committed on the disk, its row cannot be: no final status yet
        assert not running.finished.is_set(), "the client had its final status before the audit row was committed"
    running.join(TIMEOUT)
    assert running.finished.is_set() and running.error is None, running.error
    assert len(uploads_of(daemon, username, f"/{name}")) == 1


@contextlib.contextmanager
def ssh_session(daemon, username: str):
    """A paramiko transport signed in as `username` (its password), closed at the end."""
    sock = socket.create_connection(("127.0.0.1", daemon.sftp_port), timeout=TIMEOUT)
    transport = paramiko.Transport(sock)
    try:
        transport.connect(username=username, password=PASSWORD)
        yield transport
    finally:
        transport.close()


def open_channel(transport):
    channel = transport.open_session(timeout=TIMEOUT)
    channel.settimeout(TIMEOUT)
    return channel


def test_sftp_close_waits_for_the_audit_row(daemon):
    daemon.add_profile("held-sftp")
    with ssh_session(daemon, "held-sftp") as transport:
        client = paramiko.SFTPClient.from_transport(transport)
        client.get_channel().settimeout(TIMEOUT)

        def upload():
            with client.open("/one.bin", "wb") as f:
                f.write(b"x" * 4096)  # the CLOSE's status is the final one

        check_held_until_the_row_commits(daemon, "held-sftp", "one.bin", upload)


def test_ftp_226_waits_for_the_audit_row(daemon):
    daemon.add_profile("held-ftp")
    ftp = ftplib.FTP()
    ftp.connect("127.0.0.1", daemon.ftp_port, timeout=TIMEOUT)
    try:
        ftp.login("held-ftp", PASSWORD)

        def upload():
            ftp.storbinary("STOR one.bin", _Bytes(b"y" * 4096))  # returns on the 226

        check_held_until_the_row_commits(daemon, "held-ftp", "one.bin", upload)
    finally:
        ftp.close()


def test_http_upload_reply_waits_for_the_audit_row(daemon):
    daemon.add_profile("held-web")
    api = signed_in(daemon, "held-web", PASSWORD)
    api.get("files/?path=/")  # signed in and served once before the lock

    def upload():
        reply = api.post("files/upload/?path=/", raw=_multipart("one.bin", b"z" * 4096), headers=_MULTIPART)
        assert reply.status == 201, reply.body

    check_held_until_the_row_commits(daemon, "held-web", "one.bin", upload)


def downloads_of(daemon, username: str) -> list:
    return [(row["path"], row["bytes"]) for row in daemon.logs("download") if row["username"] == username]


def test_an_sftp_download_is_answered_before_its_row_and_the_session_ends_after_it(daemon, tmp_path):
    daemon.add_profile("held-get")
    data = os.urandom(5000)
    daemon.home("held-get").mkdir(parents=True, exist_ok=True)
    (daemon.home("held-get") / "report.bin").write_bytes(data)
    with ssh_session(daemon, "held-get") as transport:
        channel = open_channel(transport)
        channel.invoke_subsystem("sftp")
        raw = RawSftp(channel)
        with database_write_lock(daemon):
            raw.request(3, string(b"/report.bin"), u32(1), u32(0))  # OPEN for reading
            kind, _, body = raw.receive()
            assert kind == 102, body  # HANDLE
            handle = body[4:]
            raw.request(5, string(handle), u64(0), u32(len(data) + 100))  # READ
            kind, _, body = raw.receive()
            assert (kind, body[4:]) == (103, data)  # DATA
            raw.request(4, string(handle))  # CLOSE: answered though no row can be written
            kind, _, body = raw.receive()
            assert (kind, body[:4]) == (101, u32(0)), body  # STATUS OK
            assert downloads_of(daemon, "held-get") == []
        wait_for(lambda: downloads_of(daemon, "held-get") == [("/report.bin", len(data))])

    # OpenSSH's sftp ends only when the session does: after the row. Its commands come
    # on stdin once it has signed in (the sign-in's own row needs the database)
    signed_in_before = len(logins_of(daemon, "held-get"))
    client = subprocess.Popen(
        ["sshpass", "-e", "sftp", *OPTIONS, *auth_options(None), "-P", str(daemon.sftp_port), "held-get@127.0.0.1"],
        cwd=tmp_path, env={**os.environ, "SSHPASS": PASSWORD}, text=True,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        wait_for(lambda: len(logins_of(daemon, "held-get")) > signed_in_before or client.poll() is not None)
        with database_write_lock(daemon):
            client.stdin.write("get report.bin back.bin\nbye\n")
            client.stdin.flush()
            back = tmp_path / "back.bin"
            wait_for(lambda: (back.exists() and back.stat().st_size == len(data)) or client.poll() is not None)
            with pytest.raises(subprocess.TimeoutExpired):
                client.wait(0.5)  # the session has not ended: the row cannot be written
        _, errors = client.communicate(timeout=TIMEOUT)
        assert client.returncode == 0, errors
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()
    assert back.read_bytes() == data
    assert downloads_of(daemon, "held-get") == [("/report.bin", len(data))] * 2


def logins_of(daemon, username: str) -> list:
    return [row for row in daemon.logs("login") if row["username"] == username]


class _Bytes:
    def __init__(self, data: bytes):
        self._data = data

    def read(self, size: int = -1) -> bytes:
        data, self._data = (self._data, b"") if size < 0 else (self._data[:size], self._data[size:])
        return data


_MULTIPART = {"Content-Type": "multipart/form-data; boundary=XyZ"}


def _multipart(name: str, data: bytes) -> bytes:
    return (
        b'--XyZ\r\nContent-Disposition: form-data; name="file"; filename="' + name.encode() + b'"\r\n'
        b"Content-Type: application/octet-stream\r\n\r\n" + data + b"\r\n--XyZ--\r\n"
    )


def test_an_scp_download_goes_on_before_its_rows_and_the_exit_waits_for_them(daemon):
    """Legacy scp's downloads are the connection's session's too: the next file is sent
    while the first one's row cannot be written, and the exit status (what OpenSSH's
    scp waits for) comes only once both rows are in the log."""
    daemon.add_profile("held-scp")
    home = daemon.home("held-scp")
    home.mkdir(parents=True, exist_ok=True)
    files = {"a.bin": os.urandom(3000), "b.bin": os.urandom(4000)}
    for name, data in files.items():
        (home / name).write_bytes(data)
    with ssh_session(daemon, "held-scp") as transport:
        channel = open_channel(transport)
        with database_write_lock(daemon):
            channel.exec_command("scp -f a.bin b.bin")
            channel.sendall(b"\0")  # ready
            for name, data in files.items():
                assert _line(channel) == b"C0644 %d %s\n" % (len(data), name.encode())
                channel.sendall(b"\0")
                assert recv_exactly(channel, len(data) + 1) == data + b"\0"
                channel.sendall(b"\0")
            channel.shutdown_write()
            with pytest.raises(socket.timeout):
                channel.settimeout(0.5)
                channel.recv(1)  # no exit status, no close: the rows cannot be written
            assert downloads_of(daemon, "held-scp") == []
        wait_for(channel.exit_status_ready)
        assert channel.recv_exit_status() == 0
        assert sorted(downloads_of(daemon, "held-scp")) == [(f"/{name}", len(data)) for name, data in files.items()]


def _line(channel) -> bytes:
    line = b""
    while not line.endswith(b"\n"):
        line += recv_exactly(channel, 1)
    return line
