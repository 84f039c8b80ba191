"""Driving OpenSSH's sftp, scp and ssh against the daemon, by password or key; and SFTP
packets by hand over a paramiko channel (`RawSftp`)."""

from __future__ import annotations

import hashlib
import os
import struct
import subprocess
from pathlib import Path

import paramiko
import pytest

from ..helpers import require, upload_temp_files, wait_for

OPTIONS = [
    "-o", "StrictHostKeyChecking=no",
    "-o", "UserKnownHostsFile=/dev/null",
    "-o", "ConnectTimeout=10",
]  # fmt: skip


def auth_options(key: Path | None) -> list[str]:
    if key is None:
        # sftp -b turns BatchMode on, which forbids passwords: turn it back off
        return ["-o", "BatchMode=no", "-o", "PubkeyAuthentication=no", "-o", "PreferredAuthentications=password"]
    return ["-i", str(key), "-o", "PasswordAuthentication=no", "-o", "PreferredAuthentications=publickey",
            "-o", "IdentitiesOnly=yes"]  # fmt: skip


def run(args: list[str], password: str | None, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    if password is not None:
        env["SSHPASS"] = password
        args = ["sshpass", "-e", *args]
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def sftp(daemon, user: str, password: str | None, commands: str, cwd: Path, key: Path | None = None):
    """Run `commands` with `sftp -b`; a command prefixed with '-' may fail without stopping the batch."""
    batch = cwd / "batch.txt"
    batch.write_text(commands.strip() + "\n")
    return run(
        ["sftp", *OPTIONS, *auth_options(key), "-P", str(daemon.sftp_port), "-b", str(batch), f"{user}@127.0.0.1"],
        password,
        cwd,
    )


def scp(daemon, password: str, source: str, target: str, cwd: Path, *extra: str):
    return run(
        ["scp", *OPTIONS, *auth_options(None), "-P", str(daemon.sftp_port), *extra, source, target], password, cwd
    )


def ssh(daemon, user: str, password: str, command: str, cwd: Path):
    return run(["ssh", *OPTIONS, *auth_options(None), "-p", str(daemon.sftp_port), f"{user}@127.0.0.1", command],
               password, cwd, timeout=30)  # fmt: skip


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class SshfsMount:
    """The daemon's SFTP mounted with Debian's sshfs (FUSE, as root) at `where`, by
    password; `close()` unmounts. Not being root fails the test; a missing sshfs too in CI (helpers.require)."""

    def __init__(self, daemon, user: str, password: str, where: Path):
        require("sshfs", "fusermount")
        if os.geteuid() != 0:
            pytest.fail("sshfs mounts need root here (CI runs the tests as root)")
        self.home = daemon.home(user)
        self.path = where
        where.mkdir(parents=True, exist_ok=True)
        result = subprocess.run(
            ["sshfs", "-p", str(daemon.sftp_port), "-o", "password_stdin", *OPTIONS[:4],
             f"{user}@127.0.0.1:/", str(where)],
            input=password + "\n", capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert result.returncode == 0, f"sshfs failed ({result.returncode}): {result.stderr}"

    def settled(self) -> None:
        """Wait until every file closed in the mount is saved on the server. close(2)
        returns once sshfs has flushed the writes; FUSE then sends the release (sshfs's
        SFTP CLOSE, which commits the upload) without waiting for it, so for an instant
        the server may still hold the upload's temporary file."""
        wait_for(lambda: not upload_temp_files(self.home))

    def close(self) -> None:
        result = subprocess.run(["fusermount", "-u", str(self.path)], capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, f"fusermount -u failed: {result.stderr}"


def string(value: bytes) -> bytes:
    return struct.pack("!L", len(value)) + value


def u32(value: int) -> bytes:
    return struct.pack("!L", value)


def u64(value: int) -> bytes:
    return struct.pack("!Q", value)


class RawSftp:
    """SFTP packets by hand over a paramiko channel, to see the order of the replies."""

    def __init__(self, channel: paramiko.Channel):
        self.channel = channel
        self.next_id = 0
        self._buffer = bytearray()
        self.send(1, struct.pack("!L", 3))  # INIT, version 3
        assert self.receive()[0] == 2  # VERSION

    def send(self, kind: int, body: bytes) -> None:
        self.channel.sendall(struct.pack("!LB", len(body) + 1, kind) + body)

    def request(self, kind: int, *fields: bytes) -> int:
        self.next_id += 1
        self.send(kind, struct.pack("!L", self.next_id) + b"".join(fields))
        return self.next_id

    def receive(self) -> tuple[int, int, bytes]:
        """(type, request id, the rest) of the next reply."""
        head = self.read(5)
        length, kind = struct.unpack("!LB", head)
        body = self.read(length - 1)
        return kind, struct.unpack("!L", body[:4])[0], body[4:]

    def read(self, n: int) -> bytes:
        buffer = self._buffer
        while len(buffer) < n:  # what comes beyond n is kept for the next read
            more = self.channel.recv(1 << 20)
            assert more, "the server closed the channel"
            buffer += more
        data = bytes(buffer[:n])
        del buffer[:n]
        return data
