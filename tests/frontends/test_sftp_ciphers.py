"""The SSH transport's ciphers, MACs and key exchange (frontends/sftp/packets.py, transport.py).

A client with AES-GCM is offered AES-GCM alone, and strict key exchange (the
Terrapin counter-measure, CVE-2023-48795) is offered and kept to; [sftp]
legacy_ciphers (on by default) adds AES-CTR for clients without AES-GCM (curl
with libssh2 1.10), with encrypt-and-MAC HMACs, and EtM ones only after a strict
key exchange; with it off, only AES-GCM is negotiated.
With OpenSSH's own client: every cipher and MAC offered moves a multi-MiB file
both ways intact, keys renewed every MiB (rekeying) break nothing, scp works
over AES-GCM. Without a client: sealed packets open again whatever the chunks
they arrive in, and a changed byte, a bad length or bad padding is refused.
"""

from __future__ import annotations

import io
import os
import re
import socket
import struct
import subprocess
from pathlib import Path

import paramiko
import pytest

from appliance.frontends.sftp.packets import CIPHERS, MACS, PacketCiphers, PacketError
from appliance.frontends.sftp.transport import PacketTransport

from .sftp_client import OPTIONS, auth_options, run, sha256

PASSWORD = "user-password-1"
SIZE = 5 * 1024 * 1024 + 4321  # several channel windows' worth, and not a multiple of any packet size
NEGOTIATED = re.compile(r"kex: server->client cipher: (\S+) MAC: (\S+)")
NEGOTIATED_IN = re.compile(r"kex: client->server cipher: (\S+) MAC: (\S+)")
GCM = ["aes128-gcm@openssh.com", "aes256-gcm@openssh.com"]
OFFERED = [c.encode() for c in GCM]
ETM = [b"hmac-sha2-256-etm@openssh.com", b"hmac-sha2-512-etm@openssh.com"]
ENCRYPT_AND_MAC = [b"hmac-sha2-256", b"hmac-sha2-512"]
CTR = [b"aes128-ctr", b"aes192-ctr", b"aes256-ctr"]
STRICT_C = b"kex-strict-c-v00@openssh.com"
# each cipher at least once, each MAC at least once; AES-CTR only for a client without AES-GCM
COMBINATIONS = [
    ("aes128-gcm@openssh.com", None),
    ("aes256-gcm@openssh.com", None),
]
LEGACY_COMBINATIONS = [
    ("aes128-ctr", "hmac-sha2-256-etm@openssh.com"),  # EtM: OpenSSH 9.2 makes a strict key exchange
    ("aes192-ctr", "hmac-sha2-512-etm@openssh.com"),
    ("aes256-ctr", "hmac-sha2-256"),
    ("aes128-ctr", "hmac-sha2-512"),
]


@pytest.fixture(scope="module")
def strict(daemon_factory):
    """A daemon with [sftp] legacy_ciphers off: AES-GCM only."""
    return daemon_factory(sftp__legacy_ciphers=False)


def random_file(path: Path, size: int) -> Path:
    path.write_bytes(os.urandom(size))
    return path


def sftp_with(daemon, user: str, commands: str, cwd: Path, *options: str):
    """OpenSSH's sftp with extra `-o` options and -vvv (the negotiated algorithms are in its stderr)."""
    batch = cwd / "batch.txt"
    batch.write_text(commands.strip() + "\n")
    extra = [arg for option in options for arg in ("-o", option)]
    args = ["sftp", "-vvv", *OPTIONS, *extra, *auth_options(None), "-P", str(daemon.sftp_port), "-b", str(batch)]
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
    tested = COMBINATIONS + LEGACY_COMBINATIONS
    assert sorted(c.decode() for c in CIPHERS) == sorted({cipher for cipher, _ in tested})
    assert sorted(m.decode() for m in MACS) == sorted({mac for _, mac in tested if mac})


@pytest.mark.parametrize(("cipher", "mac"), COMBINATIONS)
def test_openssh_moves_a_file_both_ways_with(daemon, tmp_path, cipher, mac):
    user = "c" + re.sub(r"[^a-z0-9]", "", cipher + (mac or ""))[:24]
    options = [f"Ciphers={cipher}"] + ([f"MACs={mac}"] if mac else [])
    result = round_trip(daemon, user, tmp_path, *options)
    expected = (cipher, "<implicit>" if mac is None else mac)
    assert negotiated(result.stderr) == (expected, expected)
    assert "will use strict KEX ordering" in result.stderr


@pytest.mark.parametrize(("cipher", "mac"), LEGACY_COMBINATIONS)
def test_a_client_without_aes_gcm_moves_a_file_both_ways_with(daemon, tmp_path, cipher, mac):
    """Sequence numbers reset after each NEWKEYS (strict key exchange) or the HMACs would not match."""
    user = "l" + re.sub(r"[^a-z0-9]", "", cipher + mac)[:24]
    result = round_trip(daemon, user, tmp_path, f"Ciphers={cipher}", f"MACs={mac}")
    assert negotiated(result.stderr) == ((cipher, mac), (cipher, mac))
    assert "will use strict KEX ordering" in result.stderr


@pytest.mark.parametrize(
    ("user", "options"),
    [
        ("ctretm", ("Ciphers=aes128-ctr", "MACs=hmac-sha2-256-etm@openssh.com")),
        ("ctrhmac", ("Ciphers=aes256-ctr", "MACs=hmac-sha2-256")),
        ("ctronly", ("Ciphers=aes128-ctr,aes256-ctr",)),
    ],
)
def test_without_legacy_ciphers_a_client_asking_only_for_aes_ctr_is_refused(strict, tmp_path, user, options):
    strict.add_profile(user)
    result = sftp_with(strict, user, "ls", tmp_path, *options)
    assert result.returncode != 0
    assert "no matching cipher found" in result.stderr, result.stderr[-2000:]
    assert "Their offer: aes128-gcm@openssh.com,aes256-gcm@openssh.com" in result.stderr


@pytest.mark.parametrize("cipher", GCM)
def test_aes_gcm_needs_none_of_our_macs(daemon, tmp_path, cipher):
    """OpenSSH ignores the MAC lists when an AEAD cipher is chosen; a client
    offering only MACs we lack must still get its AES-GCM connection."""
    user = "nomac" + cipher[3:6]
    result = round_trip(daemon, user, tmp_path, f"Ciphers={cipher}", "MACs=umac-64-etm@openssh.com")
    assert negotiated(result.stderr) == ((cipher, "<implicit>"), (cipher, "<implicit>"))


@pytest.mark.parametrize(
    ("options", "where"),
    [
        (("Ciphers=aes128-gcm@openssh.com",), "daemon"),
        (("Ciphers=aes256-ctr", "MACs=hmac-sha2-256-etm@openssh.com"), "daemon"),
        (("Ciphers=aes128-ctr", "MACs=hmac-sha2-256"), "daemon"),
    ],
    ids=["gcm", "ctr-etm", "ctr-hmac"],
)
def test_keys_renewed_every_mib_mid_transfer(request, tmp_path, options, where):
    """RekeyLimit=1M: the client starts a key exchange every MiB while data flows
    both ways; new keys, GCM nonces, MAC sequence numbers (reset at each NEWKEYS
    in a strict key exchange) must all line up."""
    daemon = request.getfixturevalue(where)
    user = "rekey" + re.sub(r"[^a-z0-9]", "", "".join(options))
    result = round_trip(daemon, user, tmp_path, *options, "RekeyLimit=1M")
    assert result.stderr.count("SSH2_MSG_NEWKEYS received") >= 8, "the client did not rekey as asked"


def test_openssh_defaults_get_aes_gcm_with_strict_kex(daemon, tmp_path):
    """OpenSSH's client (9.2 here) lists chacha20-poly1305, then AES-CTR, then
    AES-GCM, and takes its first one the server offers: AES-GCM alone is offered."""
    result = round_trip(daemon, "defaults", tmp_path)
    assert negotiated(result.stderr) == (("aes128-gcm@openssh.com", "<implicit>"),) * 2
    assert "will use strict KEX ordering" in result.stderr


def test_a_client_without_aes_gcm_gets_aes_ctr(daemon, tmp_path):
    result = round_trip(daemon, "oldclient", tmp_path, "Ciphers=aes256-ctr,aes128-ctr")
    assert negotiated(result.stderr) == (("aes256-ctr", "hmac-sha2-256-etm@openssh.com"),) * 2
    # OpenSSH's defaults still get AES-GCM alone
    result = round_trip(daemon, "newclient", tmp_path)
    assert negotiated(result.stderr) == (("aes128-gcm@openssh.com", "<implicit>"),) * 2


def curl_sftp(daemon, user: str, cwd: Path) -> subprocess.CompletedProcess:
    """curl (libssh2 1.10 on Debian 12: AES-CTR and encrypt-and-MAC HMACs only, no strict key exchange)."""
    url = f"sftp://127.0.0.1:{daemon.sftp_port}/"
    return subprocess.run(["curl", "-sS", "-k", "--user", f"{user}:{PASSWORD}", url], cwd=cwd,
                          capture_output=True, text=True, timeout=60)  # fmt: skip


def test_the_default_daemon_serves_curl_without_aes_gcm(daemon, strict, tmp_path):
    """curl is what people script with: served by default; legacy_ciphers = false refuses it."""
    daemon.add_profile("curlold")
    (daemon.home("curlold")).mkdir(parents=True, exist_ok=True)
    (daemon.home("curlold") / "seen.txt").write_text("x")
    listed = curl_sftp(daemon, "curlold", tmp_path)
    assert listed.returncode == 0 and "seen.txt" in listed.stdout, listed.stderr
    strict.add_profile("curlnew")
    (strict.home("curlnew")).mkdir(parents=True, exist_ok=True)
    (strict.home("curlnew") / "seen.txt").write_text("x")
    libssh2 = subprocess.run(["curl", "-V"], capture_output=True, text=True).stdout
    refused = curl_sftp(strict, "curlnew", tmp_path)
    if "libssh2/1.10" in libssh2:
        assert refused.returncode != 0 and "seen.txt" not in refused.stdout


def test_a_client_asking_ctr_with_etm_without_strict_key_exchange_is_refused(daemon):
    """AES-CTR with an EtM MAC is what Terrapin truncates without a strict key exchange:
    a client that has no AES-GCM, asks for that and makes no strict key exchange gets
    no connection (paramiko with strict_kex=False and only those algorithms)."""
    daemon.add_profile("ctrnostrict")
    client = paramiko.Transport(("127.0.0.1", daemon.sftp_port), strict_kex=False)
    client.get_security_options().ciphers = ("aes128-ctr",)
    client.get_security_options().digests = ("hmac-sha2-256-etm@openssh.com",)
    try:
        with pytest.raises(paramiko.SSHException, match="Incompatible ssh server|no matching|Negotiation failed"):
            client.connect(username="ctrnostrict", password=PASSWORD)
        assert not client.is_authenticated()
    finally:
        client.close()
    # the same client with an encrypt-and-MAC HMAC, or a strict key exchange, is served
    for strict_kex, mac in ((False, "hmac-sha2-256"), (True, "hmac-sha2-256-etm@openssh.com")):
        client = paramiko.Transport(("127.0.0.1", daemon.sftp_port), strict_kex=strict_kex)
        client.get_security_options().ciphers = ("aes128-ctr",)
        client.get_security_options().digests = (mac,)
        try:
            client.connect(username="ctrnostrict", password=PASSWORD)
            assert (client.local_cipher, client.local_mac) == ("aes128-ctr", mac)
            assert client.agreed_on_strict_kex == strict_kex
        finally:
            client.close()


def kexinit(ciphers: bytes, macs: bytes = b"hmac-sha2-256", kex: bytes = b"curve25519-sha256") -> bytes:
    """A client's first KEXINIT, unencrypted, offering `ciphers` and `macs` both ways."""
    return plain_packet(kexinit_payload(ciphers, macs, kex))


def kexinit_payload(ciphers: bytes, macs: bytes = b"hmac-sha2-256", kex: bytes = b"curve25519-sha256") -> bytes:
    lists = [kex, b"ssh-ed25519", ciphers, ciphers, macs, macs, b"none", b"none", b"", b""]
    return bytes([20]) + os.urandom(16) + b"".join(struct.pack(">L", len(n)) + n for n in lists) + bytes(5)


def plain_packet(payload: bytes, seq: int = 0) -> bytes:
    return b"".join(bytes(p) for p in PacketCiphers.plain().seal(seq, [payload]))


class Peer:
    """A raw client: the version lines exchanged, then unencrypted packets."""

    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.sock.sendall(b"SSH-2.0-CipherTest\r\n")
        self.buf = b""
        while b"\n" not in self.buf:
            self.buf += self._recv()
        self.buf = self.buf.split(b"\n", 1)[1]

    def _recv(self) -> bytes:
        data = self.sock.recv(65536)
        if not data:
            raise EOFError("the server closed the connection")
        return data

    def packet(self) -> bytes:
        """The next unencrypted packet's payload."""
        while len(self.buf) < 4 or len(self.buf) < 4 + struct.unpack(">L", self.buf[:4])[0]:
            self.buf += self._recv()
        (length,) = struct.unpack(">L", self.buf[:4])
        payload = self.buf[5 : 4 + length - self.buf[4]]
        self.buf = self.buf[4 + length :]
        return payload

    def close(self) -> None:
        self.sock.close()


def name_lists(payload: bytes) -> list[list[bytes]]:
    assert payload[0] == 20  # KEXINIT
    names, offset = [], 17
    for _ in range(10):
        (size,) = struct.unpack(">L", payload[offset : offset + 4])
        names.append(payload[offset + 4 : offset + 4 + size].split(b","))
        offset += 4 + size
    return names


def server_offer(daemon, first: bytes) -> tuple[list[bytes], list[bytes]]:
    """Connect, send `first` (a KEXINIT, or nothing), and return the ciphers and MACs of the server's KEXINIT."""
    peer = Peer(daemon.sftp_port)
    try:
        peer.sock.sendall(first)
        lists = name_lists(peer.packet())
    finally:
        peer.close()
    return lists[2], lists[4]


def test_without_legacy_ciphers_the_offer_is_aes_gcm_alone_whatever_the_client_asks(strict):
    for client in (kexinit(b"aes256-ctr,aes256-gcm@openssh.com"), kexinit(b"aes128-ctr,aes128-cbc"), b""):
        assert server_offer(strict, client) == (OFFERED, ETM)


def test_the_offer_follows_the_clients_kexinit(daemon):
    """By default: AES-GCM alone to a client that has it (its KEXINIT is in the exchange
    hash, so nobody in between can strip AES-GCM from it), AES-CTR too to one that has not."""
    assert server_offer(daemon, kexinit(b"aes256-ctr,aes256-gcm@openssh.com")) == (OFFERED, ETM)
    # no AES-GCM, no strict key exchange: encrypt-and-MAC only (CTR-EtM is open to Terrapin)
    assert server_offer(daemon, kexinit(b"aes128-ctr,aes128-cbc")) == (OFFERED + CTR, ENCRYPT_AND_MAC)
    strict = kexinit(b"aes128-ctr", kex=b"curve25519-sha256," + STRICT_C)
    assert server_offer(daemon, strict) == (OFFERED + CTR, ETM + ENCRYPT_AND_MAC)
    # a client waiting for the server's KEXINIT (a moment, not for ever) gets the whole offer
    assert server_offer(daemon, b"") == (OFFERED + CTR, ETM + ENCRYPT_AND_MAC)


def test_strict_key_exchange_is_offered_in_the_first_kexinit_only(daemon):
    peer = Peer(daemon.sftp_port)
    try:
        kex = name_lists(peer.packet())[0]
    finally:
        peer.close()
    assert b"kex-strict-s-v00@openssh.com" in kex and kex[0] == b"mlkem768x25519-sha256"


def disconnect_reason(peer: Peer) -> bytes:
    """Read packets up to the server's DISCONNECT and return its description."""
    while True:
        try:
            payload = peer.packet()
        except EOFError:
            return b""
        if payload[0] == 1:  # DISCONNECT
            (size,) = struct.unpack(">L", payload[5:9])
            return payload[9 : 9 + size]


IGNORE = bytes([2]) + struct.pack(">L", 3) + b"pad"


@pytest.mark.parametrize("when", ["before", "after"])
def test_a_strict_client_sending_anything_but_key_exchange_is_disconnected(daemon, when):
    """Strict KEX: the client's KEXINIT must be its first packet, and nothing but key
    exchange messages (not even IGNORE, the Terrapin attacker's tool) may follow it
    until NEWKEYS."""
    first = kexinit_payload(b"aes128-gcm@openssh.com", kex=b"curve25519-sha256," + STRICT_C)
    packets = [IGNORE, first] if when == "before" else [first, IGNORE]
    peer = Peer(daemon.sftp_port)
    try:
        peer.sock.sendall(b"".join(plain_packet(p, n) for n, p in enumerate(packets)))
        reason = disconnect_reason(peer)
    finally:
        peer.close()
    assert reason.startswith(b"strict key exchange violated"), reason


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


def test_paramiko_gets_aes_gcm_with_strict_kex(daemon):
    """paramiko (3.4 and later) lists AES-CTR before AES-GCM and makes a strict key exchange."""
    daemon.add_profile("pmiko")
    client = paramiko.Transport(("127.0.0.1", daemon.sftp_port))
    try:
        client.connect(username="pmiko", password=PASSWORD)
        assert client.agreed_on_strict_kex
        assert (client.local_cipher, client.remote_cipher) == ("aes128-gcm@openssh.com",) * 2
        sftp = paramiko.SFTPClient.from_transport(client)
        sftp.putfo(io.BytesIO(b"hello"), "hello.txt")
        assert sftp.listdir(".") == ["hello.txt"]
    finally:
        client.close()
