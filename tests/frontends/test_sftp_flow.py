"""SSH flow control: one client can make the daemon hold only a bounded amount, however
fast it sends and however little it reads. The requests the daemon holds back (their
replies would have nowhere to go) keep the channel's window shut, so the client is
paused by SSH itself instead of being buffered without end; once it reads its
replies, everything it sent is carried out and the file is intact."""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import struct
import threading

import paramiko
from paramiko.common import cMSG_SERVICE_REQUEST, cMSG_USERAUTH_REQUEST

from ..helpers import wait_for
from .sftp_client import RawSftp, sha256, string, u32, u64

PASSWORD = "user-password-1"
TIMEOUT = 60  # seconds a reply may take before the test fails rather than hangs
GROWTH = 64 << 20  # what the daemon may take on for one flooding client
OFFERED = 512 << 20  # what the client sends (WRITE data) or asks for (READ lengths)
CHUNK = 32 << 10
SOURCE = 16 << 20  # the file read; its replies fill the client's window and what the daemon keeps for it
OPEN, CLOSE, READ, WRITE = 3, 4, 5, 6
STATUS, HANDLE, DATA = 101, 102, 103
FOR_READING, FOR_WRITING = 0x01, 0x02 | 0x08 | 0x10  # READ; WRITE | CREAT | TRUNC
OK = u32(0)


def resident(pid: int) -> int:
    """The process's resident memory now (VmRSS), in bytes."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def packet(kind: int, request_id: int, *fields: bytes) -> bytes:
    body = u32(request_id) + b"".join(fields)
    return struct.pack("!LB", len(body) + 1, kind) + body


def connect(daemon, username: str) -> tuple[paramiko.Transport, RawSftp]:
    """A signed-in SFTP channel whose window toward the client (paramiko's 2 MiB) is
    reopened only as the test reads from it."""
    sock = socket.create_connection(("127.0.0.1", daemon.sftp_port), timeout=TIMEOUT)
    transport = paramiko.Transport(sock)
    transport.banner_timeout = transport.auth_timeout = TIMEOUT
    transport.connect(username=username, password=PASSWORD)
    channel = transport.open_session()
    channel.settimeout(TIMEOUT)
    channel.invoke_subsystem("sftp")
    return transport, RawSftp(channel)


def open_handle(raw: RawSftp, path: bytes, flags: int) -> bytes:
    raw.request(OPEN, string(path), u32(flags), u32(0))
    kind, _, body = raw.receive()
    assert kind == HANDLE, body
    return body[4:]


class Offer:
    """Packets sent as fast as the channel's window lets them go."""

    def __init__(self, transport: paramiko.Transport, channel: paramiko.Channel, packets):
        self.transport = transport
        self.channel = channel
        self.packets = iter(packets)
        self.rest = b""
        self.sent = 0

    def until_paused(self) -> bool:
        """Send until everything is sent (True) or the window is shut for good (False):
        shut, and still shut once the daemon has answered a global request sent behind
        the data. The daemon handles what arrives in order, so by then it has seen all
        the data; a window reopened as data arrives would be open again."""
        while True:
            if not self.rest:
                self.rest = next(self.packets, b"")
                if not self.rest:
                    return True
            if self.channel.send_ready():
                n = self.channel.send(self.rest)
                self.sent += n
                self.rest = self.rest[n:]
                continue
            self.transport.global_request("keepalive@openssh.com", wait=True)
            if not self.channel.send_ready():
                return False

    def send_the_rest(self) -> None:
        """The rest, blocking on the window (in a thread, while the test reads)."""
        self.channel.sendall(self.rest)
        for piece in self.packets:
            self.channel.sendall(piece)


def flooded(daemon, offer: Offer, before: int) -> None:
    """The client is paused by its window having sent a fraction of what it offered,
    and the daemon took on less than GROWTH for it."""
    assert not offer.until_paused(), f"the daemon took all {OFFERED >> 20} MiB in without a reply being read"
    assert offer.channel.out_window_size == 0
    assert offer.sent < OFFERED // 8, f"{offer.sent >> 20} MiB sent before the window shut"
    grown = resident(daemon.process.pid) - before
    assert grown < GROWTH, f"the daemon's memory grew by {grown >> 20} MiB"


def test_a_client_that_uploads_and_never_reads_the_replies_is_paused_by_its_window(fresh_daemon, tmp_path):
    """The client first asks for more than its window and the daemon's output can hold
    (READs it does not read the replies to), then WRITEs 512 MiB: the daemon holds those
    back, and its window shuts instead of its memory taking them all in."""
    daemon = fresh_daemon  # of its own: its memory is this test's alone
    daemon.add_profile("flow-writer")
    home = daemon.home("flow-writer")
    home.mkdir(parents=True, exist_ok=True)
    source = os.urandom(SOURCE)
    (home / "source.bin").write_bytes(source)
    transport, raw = connect(daemon, "flow-writer")
    with transport:
        reading = open_handle(raw, b"/source.bin", FOR_READING)
        writing = open_handle(raw, b"/upload.bin", FOR_WRITING)
        before = resident(daemon.process.pid)
        reads = [raw.request(READ, string(reading), u64(offset), u32(CHUNK)) for offset in range(0, SOURCE, CHUNK)]
        first_write = raw.next_id + 1
        writes = range(first_write, first_write + OFFERED // CHUNK)
        digest = hashlib.sha256()

        def write_packets():
            for request_id in writes:
                data = os.urandom(CHUNK)
                digest.update(data)
                yield packet(WRITE, request_id, string(writing), u64((request_id - first_write) * CHUNK), string(data))

        offer = Offer(transport, raw.channel, write_packets())
        flooded(daemon, offer, before)

        sender = threading.Thread(target=offer.send_the_rest, daemon=True)
        sender.start()
        replies = {}
        for _ in range(len(reads) + len(writes)):
            kind, request_id, body = raw.receive()
            replies[request_id] = (kind, body)
        sender.join(TIMEOUT)
        assert not sender.is_alive()
        assert [replies[r] for r in reads] == [
            (DATA, u32(CHUNK) + source[o : o + CHUNK]) for o in range(0, SOURCE, CHUNK)
        ]
        assert all(replies[r][0] == STATUS and replies[r][1][:4] == OK for r in writes)
        raw.next_id = writes[-1]
        closing = raw.request(CLOSE, string(writing))
        assert raw.receive()[:2] == (STATUS, closing)
    assert (home / "upload.bin").stat().st_size == OFFERED
    assert sha256(home / "upload.bin") == digest.hexdigest()


def test_a_client_that_floods_reads_and_never_reads_the_replies_is_paused_by_its_window(fresh_daemon):
    """READs asking for 512 MiB (4 KiB each, around a 16 MiB file), none of their replies
    read: the daemon keeps a few MiB of replies and holds the other requests back, which
    shuts the client's window; once the client reads, every reply comes, in order."""
    daemon = fresh_daemon
    daemon.add_profile("flow-reader")
    home = daemon.home("flow-reader")
    home.mkdir(parents=True, exist_ok=True)
    source = os.urandom(SOURCE)
    (home / "source.bin").write_bytes(source)
    size = 4 << 10
    transport, raw = connect(daemon, "flow-reader")
    with transport:
        reading = open_handle(raw, b"/source.bin", FOR_READING)
        before = resident(daemon.process.pid)
        first = raw.next_id + 1
        reads = range(first, first + OFFERED // size)

        def offset(request_id: int) -> int:
            return (request_id - first) * size % SOURCE

        offer = Offer(
            transport, raw.channel, (packet(READ, r, string(reading), u64(offset(r)), u32(size)) for r in reads)
        )
        flooded(daemon, offer, before)

        sender = threading.Thread(target=offer.send_the_rest, daemon=True)
        sender.start()
        for request_id in reads:  # one handle: in request order
            kind, answered, body = raw.receive()
            assert (kind, answered) == (DATA, request_id)
            assert body == u32(size) + source[offset(request_id) : offset(request_id) + size]
        sender.join(TIMEOUT)
        assert not sender.is_alive()


# Before sign-in: what a client that never signs in can make the daemon hold.


def test_a_packet_over_64_kib_before_sign_in_ends_the_connection_with_the_reason(daemon, caplog):
    """A packet is buffered whole before it is read: before sign-in none may exceed
    64 KiB (a key exchange or a sign-in with a key takes a few KiB), whether it arrives
    in pieces or whole in one read (the second was let through: a flaky test)."""
    sock = socket.create_connection(("127.0.0.1", daemon.sftp_port), timeout=TIMEOUT)
    with paramiko.Transport(sock) as transport, caplog.at_level(logging.INFO, logger="paramiko.transport"):
        transport.start_client(timeout=TIMEOUT)  # the key exchange, not the sign-in
        transport.send_ignore(100_000)
        # paramiko's reader logs the DISCONNECT and ends the transport; sending anything
        # more could meet the closed socket first (EOFError, the reason never read)
        wait_for(lambda: not transport.is_active(), timeout=TIMEOUT)
    assert "packet too large: at most 65536 bytes before sign-in" in caplog.text


def test_sign_in_requests_sent_without_waiting_are_answered_in_turn_and_a_flood_ends_the_connection(
    fresh_daemon, caplog
):
    """RFC 4252 lets a client send sign-in requests without waiting for the answers: a
    few wait their turn, more end the connection (each would be a password check held)."""
    sock = socket.create_connection(("127.0.0.1", fresh_daemon.sftp_port), timeout=TIMEOUT)
    with paramiko.Transport(sock) as transport, caplog.at_level(logging.INFO, logger="paramiko.transport"):
        transport.start_client(timeout=TIMEOUT)
        service = paramiko.Message()
        service.add_byte(cMSG_SERVICE_REQUEST)
        service.add_string("ssh-userauth")
        transport._send_message(service)
        for n in range(20):
            attempt = paramiko.Message()
            attempt.add_byte(cMSG_USERAUTH_REQUEST)
            for field in ("nobody", "ssh-connection", "password"):
                attempt.add_string(field)
            attempt.add_boolean(False)
            attempt.add_string(f"guess-{n}")
            transport._send_message(attempt)
        wait_for(lambda: not transport.is_active(), timeout=TIMEOUT)
    assert "too many sign-in requests at once" in caplog.text
