"""SFTP as a user and a sysadmin meet it from outside, with OpenSSH's clients:
what they are told when the server says no."""

from __future__ import annotations

import os
import signal
import struct
import subprocess
import time
from pathlib import Path

import paramiko

from ..api_client import signed_in
from ..helpers import ADMIN_PASSWORD, daemon_with, wait_for, wait_for_port
from .sftp_client import OPTIONS, auth_options, sftp

PASSWORD = "user-password-1"

FXP_INIT, FXP_VERSION, FXP_SETSTAT, FXP_STATUS, FXP_STAT, FXP_ATTRS = 1, 2, 9, 101, 17, 105
FXP_OPEN, FXP_WRITE, FXP_HANDLE = 3, 6, 102
FXF_WRITE, FXF_CREAT, FXF_TRUNC = 0x02, 0x08, 0x10
FX_OK, FX_NO_SUCH_FILE = 0, 2
ATTR_SIZE = 0x1


class RawSftp:
    """SFTP packets of our own making over OpenSSH's `ssh -s ... sftp`: for requests
    the sftp client never sends but other clients (sshfs, libraries) do."""

    def __init__(self, daemon, user: str, password: str = PASSWORD):
        args = ["ssh", *OPTIONS, *auth_options(None), "-p", str(daemon.sftp_port), "-s", f"{user}@127.0.0.1", "sftp"]
        env = dict(os.environ, SSHPASS=password)
        self.process = subprocess.Popen(
            ["sshpass", "-e", *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        )
        self._id = 0
        self._send(FXP_INIT, struct.pack("!L", 3))
        kind, _ = self._receive()
        assert kind == FXP_VERSION

    def _send(self, kind: int, body: bytes) -> None:
        self.process.stdin.write(struct.pack("!LB", len(body) + 1, kind) + body)
        self.process.stdin.flush()

    def _receive(self) -> tuple[int, bytes]:
        head = self.process.stdout.read(4)
        assert len(head) == 4, self.process.stderr.read().decode(errors="replace")
        data = self.process.stdout.read(struct.unpack("!L", head)[0])
        return data[0], data[1:]

    def request(self, kind: int, body: bytes) -> tuple[int, bytes]:
        self._id += 1
        self._send(kind, struct.pack("!L", self._id) + body)
        reply, data = self._receive()
        assert struct.unpack("!L", data[:4])[0] == self._id
        return reply, data[4:]

    def status(self, kind: int, body: bytes) -> tuple[int, str]:
        reply, data = self.request(kind, body)
        assert reply == FXP_STATUS, reply
        (code, length) = struct.unpack("!LL", data[:8])
        return code, data[8 : 8 + length].decode()

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(10)
        self.process.stdout.close()
        self.process.stderr.close()


def string(value: str) -> bytes:
    data = value.encode()
    return struct.pack("!L", len(data)) + data


def test_a_size_change_is_carried_out_not_pretended(daemon, tmp_path):
    """SETSTAT with a size (sshfs's truncate) was answered OK and the file kept its
    size: a client believed a file it had truncated still held the old bytes. Then it
    was refused; now the file really is cut (or extended with zeros)."""
    daemon.add_profile("truncator")
    home = daemon.home("truncator")
    home.mkdir(parents=True, exist_ok=True)
    (home / "data.txt").write_text("0123456789")
    raw = RawSftp(daemon, "truncator")
    try:
        code, message = raw.status(FXP_SETSTAT, string("data.txt") + struct.pack("!LQ", ATTR_SIZE, 4))
        assert code == FX_OK, (code, message)
        assert (home / "data.txt").read_bytes() == b"0123"
        code, message = raw.status(FXP_SETSTAT, string("data.txt") + struct.pack("!LQ", ATTR_SIZE, 6))
        assert code == FX_OK, (code, message)
        assert (home / "data.txt").read_bytes() == b"0123\0\0"
        code, message = raw.status(FXP_SETSTAT, string("missing.txt") + struct.pack("!LQ", ATTR_SIZE, 0))
        assert code == FX_NO_SUCH_FILE, (code, message)
    finally:
        raw.close()
    assert not (home / "missing.txt").exists()


def test_a_deactivated_profiles_open_session_is_ended_with_the_reason(daemon, tmp_path):
    """An admin who deactivates a leaver through the API ends their open SFTP session
    at once: an SSH DISCONNECT with the reason, which OpenSSH prints, and the upload
    they had open is not saved (no file, no temporary copy)."""
    profile_id = daemon.add_profile("sftp-leaver")
    home = daemon.home("sftp-leaver")
    home.mkdir(parents=True, exist_ok=True)
    raw = RawSftp(daemon, "sftp-leaver")
    try:
        flags = struct.pack("!LL", FXF_WRITE | FXF_CREAT | FXF_TRUNC, 0)
        reply, data = raw.request(FXP_OPEN, string("half.bin") + flags)
        assert reply == FXP_HANDLE, reply
        handle = data[: 4 + struct.unpack("!L", data[:4])[0]]
        code, message = raw.status(FXP_WRITE, handle + struct.pack("!Q", 0) + string("x" * 32768))
        assert code == FX_OK, (code, message)
        assert [p.name for p in home.iterdir()] != []  # the upload's temporary file
        admin = signed_in(daemon, "admin", ADMIN_PASSWORD)
        assert admin.patch(f"profiles/{profile_id}/", {"active": False}).status == 200
        assert raw.process.wait(20) != 0
        assert raw.process.stdout.read() == b""
        stderr = raw.process.stderr.read().decode(errors="replace")
    finally:
        raw.close()
    assert "This account is disabled. Ask your administrator to enable it." in stderr, stderr
    # the upload is aborted as the connection goes: its temporary file is removed on a
    # worker thread, which may finish after the client has read the DISCONNECT and gone
    wait_for(lambda: list(home.iterdir()) == [], timeout=20)
    # and it cannot come back
    result = sftp(daemon, "sftp-leaver", PASSWORD, "ls", tmp_path)
    assert result.returncode != 0 and "disabled" in result.stderr, result.stderr


def test_a_refused_connection_is_told_why(tmp_path):
    """A connection refused as it opens (a banned address, too many connections) was
    dropped without a word: OpenSSH printed only "kex_exchange_identification:
    Connection closed by remote host". FTP says why in its 421; SFTP now does too."""
    daemon = daemon_with(tmp_path, security__max_connections_per_address=1)
    try:
        daemon.add_profile("crowded")
        # The place is held by a signed-in session: a connection still in its key
        # exchange is cut after a 10 s grace, and once (a loaded CI machine) the sftp
        # below started after it had gone and was let in.
        held = paramiko.Transport(("127.0.0.1", daemon.sftp_port))
        try:
            held.connect(username="crowded", password=PASSWORD)
            assert held.is_authenticated()
            result = sftp(daemon, "crowded", PASSWORD, "ls", tmp_path)
            assert held.is_active(), "the session holding the place was dropped"
        finally:
            held.close()
        assert result.returncode != 0
        assert "Too many connections from 127.0.0.1 (at most 1)." in result.stderr, result.stderr
        assert "Traceback" not in daemon.output()
        # the place is free again
        deadline = time.monotonic() + 10
        while sftp(daemon, "crowded", PASSWORD, "ls", tmp_path).returncode != 0:
            assert time.monotonic() < deadline, "the held connection was never released"
            time.sleep(0.1)
    finally:
        daemon.stop()


def test_port_forwarding_is_refused_in_words_and_quietly(daemon, tmp_path: Path):
    """`ssh -W` / `ssh -L` open direct-tcpip channels: refused, and the client was told
    "unknown channel type: unknown channel" while the daemon logged a critical
    traceback for every attempt."""
    daemon.add_profile("tunneller")
    before = daemon.output().count("channel open failed")
    env = dict(os.environ, SSHPASS=PASSWORD)
    result = subprocess.run(
        ["sshpass", "-e", "ssh", *OPTIONS, *auth_options(None), "-p", str(daemon.sftp_port),
         "-W", f"127.0.0.1:{daemon.http_port}", "tunneller@127.0.0.1"],
        env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert result.returncode != 0
    assert "administratively prohibited" in result.stderr, result.stderr
    assert "SFTP only" in result.stderr, result.stderr
    wait_for_port(daemon.sftp_port)
    assert daemon.output().count("channel open failed") == before
    # the connection's sessions are unharmed: SFTP still works
    assert sftp(daemon, "tunneller", PASSWORD, "ls", tmp_path).returncode == 0


def test_a_client_that_does_not_sign_in_is_hung_up_and_frees_its_place(tmp_path):
    """After the key exchange, the end of the login grace raised an AttributeError (the
    package's name `transport` is its submodule, not conch's): the connection stayed
    open for ever, holding a sign-in place, and further clients were refused."""
    daemon = daemon_with(tmp_path, sftp__login_grace_time=2, security__max_unauthenticated_per_address=1)
    daemon.add_profile("prompt")
    # sshpass waits for a prompt that never comes, so ssh sits at its password prompt
    stuck = subprocess.Popen(
        ["sshpass", "-P", "no-such-prompt", "-p", "x", "ssh", *OPTIONS, *auth_options(None),
         "-p", str(daemon.sftp_port), "slow@127.0.0.1", "true"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 20
        while "did not sign in in time" not in daemon.output():
            assert time.monotonic() < deadline, daemon.output()
            time.sleep(0.1)
        result = sftp(daemon, "prompt", PASSWORD, "ls", tmp_path)
        assert result.returncode == 0, result.stderr
        assert "Unhandled Error" not in daemon.output() and "Traceback" not in daemon.output()
    finally:
        os.killpg(stuck.pid, signal.SIGKILL)
        stuck.wait(10)
        daemon.stop()
