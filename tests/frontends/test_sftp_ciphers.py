"""The SSH transport's ciphers and MACs (frontends/sftp/packets.py, transport.py).

With OpenSSH's own client: every cipher and MAC offered moves a multi-MiB file
both ways intact, keys renewed every MiB (rekeying) break nothing, scp works
over AES-GCM. Without a client: sealed packets open again whatever the chunks
they arrive in, and a changed byte, a bad length or bad padding is refused.
"""

from __future__ import annotations

import os
import re
import socket
import struct
from pathlib import Path

import pytest

from appliance.frontends.sftp.packets import CIPHERS, MACS, PacketCiphers, PacketError
from appliance.frontends.sftp.transport import PacketTransport

from .sftp_client import OPTIONS, auth_options, run, sha256

PASSWORD = "user-password-1"
SIZE = 5 * 1024 * 1024 + 4321  # several channel windows' worth, and not a multiple of any packet size
NEGOTIATED = re.compile(r"kex: server->client cipher: (\S+) MAC: (\S+)")
NEGOTIATED_IN = re.compile(r"kex: client->server cipher: (\S+) MAC: (\S+)")
GCM = ["aes128-gcm@openssh.com", "aes256-gcm@openssh.com"]
# each cipher at least once, each MAC at least once
COMBINATIONS = [
    ("aes128-gcm@openssh.com", None),
    ("aes256-gcm@openssh.com", None),
    ("aes128-ctr", "hmac-sha2-256-etm@openssh.com"),
    ("aes192-ctr", "hmac-sha2-512-etm@openssh.com"),
    ("aes256-ctr", "hmac-sha2-256"),
    ("aes128-ctr", "hmac-sha2-512"),
]


def random_file(path: Path, size: int) -> Path:
    path.write_bytes(os.urandom(size))
    return path


def sftp_with(daemon, user: str, commands: str, cwd: Path, *options: str):
    """OpenSSH's sftp with extra `-o` options and -v (the negotiated algorithms are in its stderr)."""
    batch = cwd / "batch.txt"
    batch.write_text(commands.strip() + "\n")
    extra = [arg for option in options for arg in ("-o", option)]
    args = ["sftp", "-v", *OPTIONS, *extra, *auth_options(None), "-P", str(daemon.sftp_port), "-b", str(batch)]
    return run([*args, f"{user}@127.0.0.1"], PASSWORD, cwd)


def negotiated(stderr: str) -> tuple[tuple[str, str], tuple[str, str]]:
    """(cipher, MAC) server to client and client to server, as OpenSSH's client reports them."""
    return NEGOTIATED.search(stderr).groups(), NEGOTIATED_IN.search(stderr).groups()


def round_trip(daemon, user: str, work: Path, *options: str):
    daemon.add_profile(user)
    source = random_file(work / "data.bin", SIZE)
    result = sftp_with(daemon, user, "put data.bin\nget data.bin back.bin", work, *options)
    assert result.returncode == 0, result.stderr[-3000:]
    assert sha256(daemon.home(user) / "data.bin") == sha256(source)
    assert sha256(work / "back.bin") == sha256(source)
    return result


def test_every_cipher_and_mac_is_offered_and_tested():
    assert sorted(c.decode() for c in CIPHERS) == sorted({cipher for cipher, _ in COMBINATIONS})
    assert sorted(m.decode() for m in MACS) == sorted({mac for _, mac in COMBINATIONS if mac})


@pytest.mark.parametrize(("cipher", "mac"), COMBINATIONS)
def test_openssh_moves_a_file_both_ways_with(daemon, tmp_path, cipher, mac):
    user = "c" + re.sub(r"[^a-z0-9]", "", cipher + (mac or ""))[:24]
    options = [f"Ciphers={cipher}"] + ([f"MACs={mac}"] if mac else [])
    result = round_trip(daemon, user, tmp_path, *options)
    expected = (cipher, "<implicit>" if mac is None else mac)
    assert negotiated(result.stderr) == (expected, expected)


@pytest.mark.parametrize("cipher", GCM)
def test_aes_gcm_needs_none_of_our_macs(daemon, tmp_path, cipher):
    """OpenSSH ignores the MAC lists when an AEAD cipher is chosen; a client
    offering only MACs we lack must still get its AES-GCM connection."""
    user = "nomac" + cipher[3:6]
    result = round_trip(daemon, user, tmp_path, f"Ciphers={cipher}", "MACs=umac-64-etm@openssh.com")
    assert negotiated(result.stderr) == ((cipher, "<implicit>"), (cipher, "<implicit>"))


@pytest.mark.parametrize(
    "options",
    [
        ("Ciphers=aes128-gcm@openssh.com",),
        ("Ciphers=aes256-ctr", "MACs=hmac-sha2-256-etm@openssh.com"),
        ("Ciphers=aes128-ctr", "MACs=hmac-sha2-256"),
    ],
    ids=["gcm", "ctr-etm", "ctr-hmac"],
)
def test_keys_renewed_every_mib_mid_transfer(daemon, tmp_path, options):
    """RekeyLimit=1M: the client starts a key exchange every MiB while data flows
    both ways; new keys, GCM nonces and MAC sequence numbers must all line up."""
    user = "rekey" + re.sub(r"[^a-z0-9]", "", "".join(options))
    result = round_trip(daemon, user, tmp_path, *options, "RekeyLimit=1M")
    assert result.stderr.count("SSH2_MSG_NEWKEYS received") >= 8, "the client did not rekey as asked"


def test_openssh_defaults_get_aes_gcm(daemon, tmp_path):
    """OpenSSH's client (9.2 here) lists chacha20-poly1305, then AES-CTR, then
    AES-GCM, and takes its first one the server offers: a client that can
    take AES-GCM is offered AES-GCM alone."""
    result = round_trip(daemon, "defaults", tmp_path)
    assert negotiated(result.stderr) == (("aes128-gcm@openssh.com", "<implicit>"),) * 2


def test_a_client_without_aes_gcm_still_gets_aes_ctr_with_encrypt_then_mac(daemon, tmp_path):
    result = round_trip(daemon, "oldclient", tmp_path, "Ciphers=aes256-ctr,aes128-ctr")
    assert negotiated(result.stderr) == (("aes256-ctr", "hmac-sha2-256-etm@openssh.com"),) * 2


def kexinit(ciphers: bytes, macs: bytes = b"hmac-sha2-256") -> bytes:
    """A client's first KEXINIT, unencrypted, offering `ciphers` and `macs` both ways."""
    lists = [b"curve25519-sha256", b"ssh-ed25519", ciphers, ciphers, macs, macs]
    lists += [b"none", b"none", b"", b""]
    payload = bytes([20]) + os.urandom(16) + b"".join(struct.pack(">L", len(n)) + n for n in lists) + bytes(5)
    return b"".join(bytes(p) for p in PacketCiphers.plain().seal(0, [payload]))


def server_kexinit(daemon, first: bytes) -> list[bytes]:
    """Connect, send our version line and `first`, and return the cipher list of the server's KEXINIT."""
    with socket.create_connection(("127.0.0.1", daemon.sftp_port), timeout=10) as sock:
        sock.sendall(b"SSH-2.0-CipherTest\r\n" + first)
        data = b""
        while data.count(b"\n") == 0 or len(data.split(b"\n", 1)[1]) < 5:
            data += sock.recv(65536)
        rest = data.split(b"\n", 1)[1]
        (length,) = struct.unpack(">L", rest[:4])
        while len(rest) < 4 + length:
            rest += sock.recv(65536)
    payload = rest[5 : 4 + length - rest[4]]
    assert payload[0] == 20  # KEXINIT
    names, offset = [], 17
    for _ in range(3):
        (size,) = struct.unpack(">L", payload[offset : offset + 4])
        names.append(payload[offset + 4 : offset + 4 + size])
        offset += 4 + size
    return names[2].split(b",")


def test_the_cipher_offer_follows_the_clients_kexinit(daemon):
    assert server_kexinit(daemon, kexinit(b"aes256-ctr,aes256-gcm@openssh.com")) == [
        c for c in CIPHERS if c.endswith(b"gcm@openssh.com")
    ]
    assert server_kexinit(daemon, kexinit(b"aes128-ctr,aes128-cbc")) == CIPHERS
    # a client insisting on a MAC we lack is not let in through AES-GCM (test_sftp.py: it is refused)
    assert server_kexinit(daemon, kexinit(b"aes128-ctr,aes128-gcm@openssh.com", b"hmac-sha1")) == CIPHERS


def test_a_client_waiting_for_the_servers_kexinit_gets_the_whole_offer(daemon):
    """The server waits a moment for the client's KEXINIT, not for ever."""
    assert server_kexinit(daemon, b"") == CIPHERS


def test_scp_both_ways_over_aes_gcm(daemon, tmp_path):
    """scp (SFTP underneath) truncates a download at a reply out of order."""
    daemon.add_profile("scpgcm")
    source = random_file(tmp_path / "one.bin", SIZE)
    port = str(daemon.sftp_port)
    base = ["scp", *OPTIONS, "-o", "Ciphers=aes256-gcm@openssh.com", *auth_options(None), "-P", port]
    up = run([*base, "one.bin", "scpgcm@127.0.0.1:/one.bin"], PASSWORD, tmp_path)
    assert up.returncode == 0, up.stderr
    for attempt in range(3):
        (tmp_path / "copy.bin").unlink(missing_ok=True)
        down = run([*base, "scpgcm@127.0.0.1:/one.bin", "copy.bin"], PASSWORD, tmp_path)
        assert down.returncode == 0, down.stderr
        assert sha256(tmp_path / "copy.bin") == sha256(source), attempt


# -- the packet layer on its own --------------------------------------------------------

KEYS = [os.urandom(64) for _ in range(6)]


def pair(cipher: bytes, mac: bytes) -> tuple[PacketCiphers, PacketCiphers]:
    """Two ends keyed like a connection: what one seals, the other opens."""
    sender, receiver = PacketCiphers(cipher, cipher, mac, mac), PacketCiphers(cipher, cipher, mac, mac)
    iv_out, key_out, iv_in, key_in, integ_out, integ_in = KEYS
    sender.setKeys(iv_out, key_out, iv_in, key_in, integ_out, integ_in)
    receiver.setKeys(iv_in, key_in, iv_out, key_out, integ_in, integ_out)
    return sender, receiver


ALL = [(c, b"hmac-sha2-256") for c in CIPHERS] + [(b"aes128-ctr", m) for m in MACS] + [(b"none", b"none")]


class Collecting(PacketTransport):
    """The receiving half of the transport, with a recorder for dispatched messages."""

    def __init__(self, ciphers: PacketCiphers):
        self.gotVersion = True
        self.currentEncryptions = ciphers
        self.messages = []
        self.disconnected = None

    def dispatchMessage(self, messageNum, payload):
        self.messages.append((messageNum, payload))

    def sendDisconnect(self, reason, desc):
        self.disconnected = (reason, desc)


def sealed(sender: PacketCiphers, messages, first_seq: int = 0) -> bytes:
    return b"".join(
        b"".join(bytes(p) for p in sender.seal(first_seq + n, [bytes((kind,)), payload]))
        for n, (kind, payload) in enumerate(messages)
    )


@pytest.mark.parametrize(("cipher", "mac"), ALL, ids=lambda v: v.decode())
@pytest.mark.parametrize("chunk", [1, 7, 4096, 1 << 20])
def test_packets_open_whatever_chunks_they_arrive_in(cipher, mac, chunk):
    sender, receiver = pair(cipher, mac)
    messages = [(94, os.urandom(size)) for size in (0, 1, 11, 12, 15, 16, 17, 255, 32768 + 9, 70_000)]
    wire = sealed(sender, messages)
    end = Collecting(receiver)
    for start in range(0, len(wire), chunk):
        end.dataReceived(wire[start : start + chunk])
    assert end.disconnected is None
    assert end.messages == messages
    assert end.incomingPacketSequence == len(messages)


@pytest.mark.parametrize(("cipher", "mac"), [a for a in ALL if a[0] != b"none"], ids=lambda v: v.decode())
def test_a_changed_byte_is_a_mac_error(cipher, mac):
    sender, receiver = pair(cipher, mac)
    wire = bytearray(sealed(sender, [(94, b"x" * 100)]))
    wire[len(wire) // 2] ^= 1
    end = Collecting(receiver)
    end.dataReceived(bytes(wire))
    assert end.messages == []
    assert end.disconnected[0] == 5  # DISCONNECT_MAC_ERROR
    end.dataReceived(sealed(pair(cipher, mac)[0], [(94, b"more")]))
    assert end.messages == []  # nothing more is read after the error


@pytest.mark.parametrize(("cipher", "mac"), [a for a in ALL if a[0] != b"none"], ids=lambda v: v.decode())
def test_packets_out_of_sequence_do_not_open(cipher, mac):
    """A packet replayed or dropped by someone in between: the MAC (sequence
    number) or the GCM nonce no longer matches."""
    sender, receiver = pair(cipher, mac)
    sealed(sender, [(94, b"one")])  # lost on the way
    end = Collecting(receiver)
    end.dataReceived(sealed(sender, [(94, b"two")], first_seq=1))
    assert end.messages == []
    assert end.disconnected is not None


@pytest.mark.parametrize("length", [0, 4, 1 << 21, 33])
def test_a_bad_packet_length_ends_the_connection(length):
    _, receiver = pair(b"aes128-gcm@openssh.com", b"none")
    end = Collecting(receiver)
    end.dataReceived(struct.pack(">L", length) + bytes(64))
    assert end.messages == []
    assert end.disconnected[0] == 2  # DISCONNECT_PROTOCOL_ERROR


@pytest.mark.parametrize("pad", [0, 3, 200])
def test_bad_padding_ends_the_connection(pad):
    body = bytes((pad,)) + bytes(31)  # a 32-byte packet claiming `pad` bytes of padding
    end = Collecting(PacketCiphers.plain())
    end.dataReceived(struct.pack(">L", 32 - 4) + body[: 32 - 4])
    assert end.messages == []
    assert end.disconnected[0] == 2
    with pytest.raises(PacketError):
        PacketCiphers.plain().open(memoryview(struct.pack(">L", 28) + body[:28]), 0)


def test_gcm_nonces_count_per_packet_and_wrap_at_64_bits():
    """OpenSSH's PROTOCOL: the invocation counter (the nonce's last 8 bytes) is
    incremented by one per packet, modulo 2**64, starting from the derived IV."""
    iv = b"\x01\x02\x03\x04" + b"\xff" * 7 + b"\xfe"
    ends = [PacketCiphers(b"aes256-gcm@openssh.com", b"aes256-gcm@openssh.com", b"", b"") for _ in range(2)]
    ends[0].setKeys(iv, KEYS[1], iv, KEYS[1], b"", b"")
    ends[1].setKeys(iv, KEYS[1], iv, KEYS[1], b"", b"")
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    aead = AESGCM(KEYS[1][:32])
    for counter in (0xFFFF_FFFF_FFFF_FFFE, 0xFFFF_FFFF_FFFF_FFFF, 0):
        head, body = ends[0].seal(0, [b"\x5e", b"payload"])
        nonce = iv[:4] + counter.to_bytes(8, "big")
        plain = aead.decrypt(nonce, body, head)  # raises if the nonce is not the expected one
        assert plain[1 : 1 + 8] == b"\x5epayload"
        opened = ends[1].open(memoryview(head + body), 0)
        assert bytes(opened[0][opened[1] : opened[2]]) == b"\x5epayload"


# -- the SFTP requests of a transfer (server.py's READ and WRITE) --------------------------


class FakeReader:
    def __init__(self, data: bytes):
        self.data = data

    async def read(self, offset: int, length: int) -> bytes:
        return self.data[offset : offset + length]


def sftp_protocol():
    from twisted.internet.testing import StringTransport

    from appliance.frontends.sftp.server import FilesServer, ReadFile, SftpProtocol

    protocol = SftpProtocol(FilesServer(session=None, max_open_handles=4))
    transport = StringTransport()
    protocol.makeConnection(transport)
    protocol.openFiles[b"h"] = ReadFile(FakeReader(os.urandom(600_000)), None)
    return protocol, transport


def sftp_packet(kind: int, body: bytes) -> bytes:
    return struct.pack("!LB", len(body) + 1, kind) + body


def replies(output: bytes) -> list[tuple[int, bytes]]:
    found, offset = [], 0
    while offset < len(output):
        (length,) = struct.unpack_from("!L", output, offset)
        found.append((output[offset + 4], output[offset + 5 : offset + 4 + length]))
        offset += 4 + length
    return found


def test_reads_are_answered_in_order_capped_and_end_with_eof():
    from appliance.frontends.sftp.server import MAX_READ

    protocol, transport = sftp_protocol()
    data = protocol.openFiles[b"h"].reader.data
    reads = [(0, 32768), (32768, 1 << 20), (590_000, 32768), (600_000, 10)]
    protocol.dataReceived(
        b"".join(
            sftp_packet(5, struct.pack("!L", n) + struct.pack("!L", 1) + b"h" + struct.pack("!QL", offset, length))
            for n, (offset, length) in enumerate(reads)
        )
    )
    answers = replies(transport.value())
    assert [(kind, struct.unpack("!L", body[:4])[0]) for kind, body in answers] == [
        (103, 0),
        (103, 1),
        (103, 2),
        (101, 3),
    ]
    assert answers[0][1][8:] == data[:32768]
    assert answers[1][1][8:] == data[32768 : 32768 + MAX_READ]  # a 1 MiB request gets a short reply
    assert answers[2][1][8:] == data[590_000:]
    assert struct.unpack("!L", answers[3][1][4:8])[0] == 1  # FX_EOF


@pytest.mark.parametrize(
    ("kind", "body"),
    [
        (5, struct.pack("!LL", 9, 1) + b"h" + b"\0\0"),  # READ cut short
        (6, struct.pack("!LL", 9, 1) + b"h" + struct.pack("!QL", 0, 100) + b"x" * 10),  # WRITE shorter than it says
        (6, struct.pack("!L", 9)),  # WRITE with no handle at all
    ],
)
def test_malformed_reads_and_writes_get_bad_message(kind, body):
    protocol, transport = sftp_protocol()
    protocol.dataReceived(sftp_packet(kind, body))
    [(reply, answer)] = replies(transport.value())
    assert reply == 101 and struct.unpack("!LL", answer[:8]) == (9, 5)  # FX_BAD_MESSAGE
    assert not transport.disconnecting


def test_a_read_of_an_unknown_handle_is_refused():
    protocol, transport = sftp_protocol()
    protocol.dataReceived(sftp_packet(5, struct.pack("!LL", 4, 5) + b"other" + struct.pack("!QL", 0, 10)))
    [(reply, answer)] = replies(transport.value())
    assert reply == 101 and struct.unpack("!LL", answer[:8]) == (4, 4)  # FX_FAILURE


class WaitingReader:
    """A read that waits, as one does for the disk, on a Deferred the test fires."""

    def __init__(self):
        from twisted.internet.defer import Deferred

        self.pending = Deferred()

    async def read(self, offset: int, length: int) -> bytes:
        return (await self.pending)[:length]


@pytest.mark.parametrize("outcome", ["bytes", "core error", "unexpected error"])
def test_a_read_that_waits_is_answered_with_its_result_or_its_error(outcome):
    from twisted.logger import globalLogPublisher

    from appliance.errors import ApplianceError
    from appliance.frontends.sftp.server import ReadFile

    logged = []
    globalLogPublisher.addObserver(logged.append)
    try:
        protocol, transport = sftp_protocol()
        reader = WaitingReader()
        protocol.openFiles[b"w"] = ReadFile(reader, None)
        protocol.dataReceived(sftp_packet(5, struct.pack("!LL", 3, 1) + b"w" + struct.pack("!QL", 0, 5)))
        assert transport.value() == b""  # waiting
        if outcome == "bytes":
            reader.pending.callback(b"hello world")
        elif outcome == "core error":
            reader.pending.errback(ApplianceError("The storage failed: try again later."))
        else:
            reader.pending.errback(ZeroDivisionError())
        [(reply, answer)] = replies(transport.value())
    finally:
        globalLogPublisher.removeObserver(logged.append)
    failures = [event for event in logged if "log_failure" in event]
    if outcome == "bytes":
        assert (reply, answer) == (103, struct.pack("!LL", 3, 5) + b"hello")
        assert failures == []
    elif outcome == "core error":
        assert reply == 101 and struct.unpack("!LL", answer[:8]) == (3, 4)  # FX_FAILURE
        assert b"The storage failed" in answer
        assert failures == []
    else:  # answered, and logged once as the unexpected error it is (not an AssertionError)
        assert reply == 101 and b"Internal error" in answer
        assert [e["log_failure"].type for e in failures] == [ZeroDivisionError]
