"""paramiko's SFTPClient (the engine of pysftp, Fabric, Ansible's paramiko mode and
Airflow's SFTP hook) against the live daemon. paramiko pipelines its requests and
expects the replies for one handle in the order it sent them, as OpenSSH's
sftp-server answers; a reply out of order leaves it waiting for ever, so every
channel here has a timeout that turns such a hang into a failure."""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import struct
from pathlib import Path

import paramiko
import pytest

from appliance.core.auth import ATTEMPTS_PER_CONNECTION, TOO_MANY_ATTEMPTS

from ..helpers import wait_for
from .sftp_client import RawSftp, sha256, string, u32, u64

PASSWORD = "user-password-1"
TIMEOUT = 60  # seconds a reply may take before the test fails rather than hangs
BIG = 64 << 20


@pytest.fixture
def sftp_as(daemon):
    """paramiko SFTP sessions as a profile, closed after the test."""
    transports = []

    def connect(username: str) -> paramiko.SFTPClient:
        sock = socket.create_connection(("127.0.0.1", daemon.sftp_port), timeout=TIMEOUT)
        transport = paramiko.Transport(sock)
        transports.append(transport)
        transport.banner_timeout = transport.auth_timeout = TIMEOUT
        transport.connect(username=username, password=PASSWORD)
        client = paramiko.SFTPClient.from_transport(transport)
        client.get_channel().settimeout(TIMEOUT)
        return client

    yield connect
    for transport in transports:
        transport.close()


def random_file(path: Path, size: int) -> str:
    digest = hashlib.sha256()
    with open(path, "wb") as f:
        for _ in range(0, size, 1 << 20):
            chunk = os.urandom(min(1 << 20, size - f.tell()))
            digest.update(chunk)
            f.write(chunk)
    return digest.hexdigest()


def test_put_and_get_of_a_64_mib_file(daemon, sftp_as, tmp_path):
    daemon.add_profile("pk-big")
    client = sftp_as("pk-big")
    digest = random_file(tmp_path / "big.bin", BIG)
    attrs = client.put(str(tmp_path / "big.bin"), "/big.bin")  # pipelined writes; confirm stats the result
    assert attrs.st_size == BIG
    assert sha256(daemon.home("pk-big") / "big.bin") == digest
    client.get("/big.bin", str(tmp_path / "prefetched.bin"))  # prefetch: many reads in flight
    assert sha256(tmp_path / "prefetched.bin") == digest
    # paramiko's own pace limits these two (a round trip per 32 KiB; a prefetch that polls): a smaller file
    digest = random_file(tmp_path / "small.bin", 6 << 20)
    client.put(str(tmp_path / "small.bin"), "/small.bin")
    client.get("/small.bin", str(tmp_path / "plain.bin"), prefetch=False)
    assert sha256(tmp_path / "plain.bin") == digest
    with client.open("/small.bin", "rb") as f:
        f.prefetch(max_concurrent_requests=16)
        assert hashlib.sha256(f.read()).hexdigest() == digest


def test_pipelined_writes_at_several_offsets_then_reads_of_ranges(daemon, sftp_as):
    daemon.add_profile("pk-offsets")
    client = sftp_as("pk-offsets")
    expected = bytearray()

    def write_at(f, offset: int, data: bytes) -> None:
        f.seek(offset)
        f.write(data)
        if len(expected) < offset + len(data):
            expected.extend(bytes(offset + len(data) - len(expected)))
        expected[offset : offset + len(data)] = data

    with client.open("/edited.bin", "wb") as f:
        f.set_pipelined(True)
        write_at(f, 0, os.urandom(6 << 20))
        write_at(f, 9 << 20, os.urandom(1 << 20))  # past the end: a hole of zeros
        write_at(f, 1 << 20, os.urandom((2 << 20) + 5))  # over what is there
    assert (daemon.home("pk-offsets") / "edited.bin").read_bytes() == expected

    with client.open("/edited.bin", "r+") as f:  # an existing file, written in place
        f.set_pipelined(True)
        write_at(f, 3 << 20, os.urandom(1 << 20))
        write_at(f, 123, os.urandom(70_000))
        write_at(f, 10 << 20, os.urandom(3 << 20))  # and longer than it was
    assert (daemon.home("pk-offsets") / "edited.bin").read_bytes() == expected

    ranges = [(0, 40_000), (5 << 20, 1 << 20), (123, 7), (12 << 20, 65_536), (len(expected) - 10, 10)]
    with client.open("/edited.bin", "rb") as f:
        chunks = list(f.readv(ranges))  # many READs of one handle in flight
    assert chunks == [bytes(expected[o : o + n]) for o, n in ranges]


def test_replies_on_one_handle_come_in_request_order_and_close_commits_every_write(daemon, sftp_as):
    """Pipelined WRITEs (many MiB, so that some wait for the disk) then FSTAT and CLOSE on
    one handle; then pipelined READs and a CLOSE: every reply in the order of its request."""
    daemon.add_profile("pk-order")
    raw = RawSftp(sftp_as("pk-order").get_channel())
    flags = 0x02 | 0x08 | 0x10  # WRITE | CREAT | TRUNC
    raw.request(3, string(b"/ordered.bin"), u32(flags), u32(0))  # OPEN, no attributes
    kind, _, body = raw.receive()
    assert kind == 102, body  # HANDLE
    handle = body[4:]
    data = os.urandom(8 << 20)
    chunk = 32 << 10
    sent = [
        raw.request(6, string(handle), u64(offset), string(data[offset : offset + chunk]))
        for offset in range(0, len(data), chunk)
    ]
    sent += [raw.request(8, string(handle)), raw.request(4, string(handle))]  # FSTAT, CLOSE
    answers = [raw.receive() for _ in sent]
    assert [request for _, request, _ in answers] == sent
    assert all(kind == 101 and body[:4] == struct.pack("!L", 0) for kind, _, body in answers[:-2])  # STATUS OK
    assert answers[-2][0] == 105 and struct.unpack("!Q", answers[-2][2][4:12])[0] == len(data)  # ATTRS: the size
    assert answers[-1][0] == 101 and answers[-1][2][:4] == struct.pack("!L", 0)
    assert (daemon.home("pk-order") / "ordered.bin").read_bytes() == data

    raw.request(3, string(b"/ordered.bin"), u32(0x01), u32(0))  # for READ
    kind, _, body = raw.receive()
    handle = body[4:]
    offsets = [o for o in range(0, len(data), 3 << 20)] + [len(data) - 100, 5, len(data) + 1]
    sent = [raw.request(5, string(handle), u64(offset), u32(chunk)) for offset in offsets]
    sent.append(raw.request(4, string(handle)))
    answers = [raw.receive() for _ in sent]
    assert [request for _, request, _ in answers] == sent
    assert [body[4:] for _, _, body in answers[:-2]] == [data[o : o + chunk] for o in offsets[:-1]]
    assert answers[-2][0] == 101 and struct.unpack("!L", answers[-2][2][:4])[0] == 1  # EOF past the end


def peak_memory(pid: int) -> int:
    """The process's peak resident memory so far (VmHWM), in bytes."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM")


def test_a_get_that_asks_for_the_whole_file_at_once_is_not_held_in_memory(fresh_daemon, tmp_path):
    """paramiko's get() sends a READ for every 32 KiB of the file before it reads a reply:
    the daemon answers them as the client takes them, not all into its memory at once."""
    fresh_daemon.add_profile("pk-memory")
    size = 256 << 20
    home = fresh_daemon.home("pk-memory")
    home.mkdir(parents=True, exist_ok=True)  # made at the first sign-in otherwise
    digest = random_file(home / "whole.bin", size)
    sock = socket.create_connection(("127.0.0.1", fresh_daemon.sftp_port), timeout=TIMEOUT)
    with paramiko.Transport(sock) as transport:
        transport.connect(username="pk-memory", password=PASSWORD)
        client = paramiko.SFTPClient.from_transport(transport)
        client.get_channel().settimeout(TIMEOUT)
        before = peak_memory(fresh_daemon.process.pid)
        client.get("/whole.bin", str(tmp_path / "whole.bin"))
        growth = peak_memory(fresh_daemon.process.pid) - before
    assert sha256(tmp_path / "whole.bin") == digest
    assert growth < 48 << 20, f"the daemon's memory grew by {growth >> 20} MiB"


def test_a_download_leaves_little_unread_at_paramiko_on_a_fast_link(daemon, sftp_as, tmp_path, monkeypatch):
    """paramiko's receive buffer moves everything it holds on every read: the daemon
    leaves at most compat.PARAMIKO_UNREAD (plus the link's round trip's worth, next
    to nothing on loopback) unread at it, where it used to fill the whole 2 MiB
    window whenever the reader fell behind (half the client's CPU went on memmove)."""
    from appliance.frontends.sftp.compat import PARAMIKO_UNREAD

    most = 0
    feed = paramiko.buffered_pipe.BufferedPipe.feed

    def counting_feed(pipe, data):
        nonlocal most
        feed(pipe, data)
        most = max(most, len(pipe))

    monkeypatch.setattr(paramiko.buffered_pipe.BufferedPipe, "feed", counting_feed)
    daemon.add_profile("pk-unread")
    client = sftp_as("pk-unread")
    digest = random_file(daemon.home("pk-unread") / "eight.bin", 8 << 20)
    received = hashlib.sha256()
    with client.open("/eight.bin", "rb") as f:
        f.prefetch()  # every READ sent at once, as get() does
        while chunk := f.read(32 * 1024):
            received.update(chunk)
            for _ in range(20_000):  # a reader slower than the link (work, not a sleep)
                pass
    assert received.hexdigest() == digest
    window = client.get_channel().in_window_size
    assert window >= 4 * PARAMIKO_UNREAD  # else the limit would not be tested
    assert 0 < most <= PARAMIKO_UNREAD + 64 * 1024, f"{most} bytes were left unread (window {window})"


def test_the_unread_allowance_is_for_paramiko_on_a_fast_link_only():
    from appliance.frontends.sftp.compat import PARAMIKO_UNREAD, unread_allowance

    paramiko_version, window = b"SSH-2.0-paramiko_5.1.0", 2 << 20
    assert unread_allowance(paramiko_version, window, 0.00002) == PARAMIKO_UNREAD + 20_000
    assert unread_allowance(paramiko_version, window, 0.02) is None  # a WAN link: the whole window
    assert unread_allowance(paramiko_version, window, None) is None  # not known: the whole window
    assert unread_allowance(paramiko_version, 64 << 20, 0.0) == 16 << 20  # past its reopening point
    assert unread_allowance(paramiko_version, 256 * 1024, 0.0) is None  # a small window: all of it
    assert unread_allowance(b"SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3", window, 0.0) is None


def test_failed_sign_ins_are_bounded_per_connection(daemon, caplog):
    """The core's one limit, as FTP's: a wrong password that uses up the connection's
    attempts is answered by hanging up with why, not by another "try again"."""
    caplog.set_level(logging.INFO, logger="paramiko.transport")
    daemon.add_profile("pk-guesser", "right-password-1")
    # from an address of its own, so the core's throttle does not slow other tests
    sock = socket.create_connection(("127.0.0.1", daemon.sftp_port), timeout=TIMEOUT, source_address=("127.0.0.5", 0))
    transport = paramiko.Transport(sock)
    transport.banner_timeout = transport.auth_timeout = TIMEOUT
    try:
        transport.start_client(timeout=TIMEOUT)
        for attempt in range(ATTEMPTS_PER_CONNECTION - 1):
            with pytest.raises(paramiko.AuthenticationException):
                transport.auth_password("pk-guesser", f"wrong-{attempt}")
            assert transport.is_active(), attempt  # answered "try again": the connection stays
        with pytest.raises(paramiko.AuthenticationException):
            transport.auth_password("pk-guesser", "wrong-last")
        wait_for(lambda: not transport.is_active())
    finally:
        transport.close()
    assert TOO_MANY_ATTEMPTS in caplog.text
    rows = [row for row in daemon.logs("login_failed") if row["username"] == "pk-guesser"]
    assert len(rows) == ATTEMPTS_PER_CONNECTION
