"""SSH binary packets (RFC 4253 section 6) sealed and opened without conch's copies.

Conch's `SSHCiphers` knows AES-CTR/CBC with encrypt-and-MAC HMACs only. This
module adds what OpenSSH's client prefers and what is fast here:

- `aes128-gcm@openssh.com` / `aes256-gcm@openssh.com` (RFC 5647 as OpenSSH's
  PROTOCOL file has it): the 4-byte packet length travels in clear as the
  additional authenticated data, the 12-byte nonce is the 4-byte fixed field
  and 8-byte invocation counter derived by the key exchange, incremented per
  packet; a 16-byte tag and no MAC (the MAC negotiation is ignored);
- `hmac-sha2-256-etm@openssh.com` / `hmac-sha2-512-etm@openssh.com`
  (encrypt-then-MAC: the length in clear, the MAC over the ciphertext);
- the encrypt-and-MAC HMACs and AES-CTR conch already had, for older clients.

With AEAD and EtM the padding makes the packet, length field excluded, a
multiple of the block size; with encrypt-and-MAC, length field included.
`PacketCiphers` stands in for conch's `SSHCiphers` (same constructor, `setKeys`
and type names, so `isEncrypted`/`isVerified` and the key exchange code work
unchanged); `seal` returns the bytes to write, `open` takes one packet off the
front of the receive buffer.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import struct

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

GCM = {b"aes128-gcm@openssh.com": 16, b"aes256-gcm@openssh.com": 32}
CTR = {b"aes128-ctr": 16, b"aes192-ctr": 24, b"aes256-ctr": 32}
HMACS = {b"hmac-sha2-256": hashlib.sha256, b"hmac-sha2-512": hashlib.sha512}
ETM_HMACS = {b"hmac-sha2-256-etm@openssh.com": hashlib.sha256, b"hmac-sha2-512-etm@openssh.com": hashlib.sha512}

CIPHERS = [*GCM, *CTR]
MACS = [*ETM_HMACS, *HMACS]
MAX_PACKET = 1 << 20  # conch's limit on an incoming packet's length field

_LENGTH = struct.Struct(">L")
_LENGTH_PAD = struct.Struct(">LB")
_BYTE = [bytes((n,)) for n in range(256)]
_NONE = b"none"
_POOL = 4096  # random bytes fetched at once for padding


class PacketError(Exception):
    """The peer sent a packet that cannot be opened; `mac` tells a failed check from bad framing."""

    def __init__(self, message: str, mac: bool = False):
        super().__init__(message)
        self.mac = mac


def is_aead(cipher: bytes) -> bool:
    return cipher in GCM


def _padding(size: int, block: int) -> int:
    """Padding bytes (4 at least) that make `size` plus the padding a multiple of `block`."""
    pad = block - size % block
    return pad + block if pad < 4 else pad


class _RandomPadding:
    """Random padding bytes, fetched from the system a few KiB at a time rather than per packet."""

    def __init__(self):
        self._pool = b""
        self._at = 0

    def take(self, n: int) -> bytes:
        at = self._at
        if at + n > len(self._pool):
            self._pool, at = os.urandom(_POOL), 0
        self._at = at + n
        return self._pool[at : at + n]


class _Hmac:
    """HMAC keyed once; per packet only a copy of the keyed state."""

    def __init__(self, digest, key: bytes):
        size = digest().digest_size
        # the key is the first digest-size bytes of the derived key (RFC 4253 7.2)
        self._keyed = hmac.new(key[:size], digestmod=digest)
        self.size = size

    def mac(self, seq: int, *parts) -> bytes:
        h = self._keyed.copy()
        h.update(_LENGTH.pack(seq))
        for part in parts:
            h.update(part)
        return h.digest()


class _Plain:
    """No cipher, no MAC (before the first key exchange completes)."""

    block = 8
    mac_size = 0

    def seal(self, seq: int, parts: list) -> list:
        size = 5 + sum(len(p) for p in parts)
        pad = _padding(size, self.block)
        return [b"".join([_LENGTH_PAD.pack(size - 4 + pad, pad), *parts, os.urandom(pad)])]

    def open(self, buf: memoryview, seq: int):
        if len(buf) < 5:
            return None, 0, 0, 0
        length, pad = _LENGTH_PAD.unpack_from(buf)
        _check(length, pad, (length + 4) % self.block)
        if len(buf) < 4 + length:
            return None, 0, 0, 0
        return buf, 5, 4 + length - pad, 4 + length


class _EncryptAndMac:
    """AES-CTR with an HMAC over the plaintext (conch's only mode)."""

    block = 16

    def __init__(self, cipher: bytes, mac: bytes, out: bool, iv: bytes, key: bytes, integ: bytes):
        ctr = Cipher(algorithms.AES(key[: CTR[cipher]]), modes.CTR(iv[:16]))
        self._crypt = (ctr.encryptor() if out else ctr.decryptor()).update
        self._hmac = _Hmac(HMACS[mac], integ)
        self.mac_size = self._hmac.size
        self._first = None  # the decrypted first block of a packet not yet complete
        self._padding = _RandomPadding().take

    def seal(self, seq: int, parts: list) -> list:
        size = 5 + sum(len(p) for p in parts)
        pad = _padding(size, self.block)
        packet = b"".join([_LENGTH_PAD.pack(size - 4 + pad, pad), *parts, self._padding(pad)])
        return [self._crypt(packet), self._hmac.mac(seq, packet)]

    def open(self, buf: memoryview, seq: int):
        first = self._first
        if first is None:
            if len(buf) < self.block:
                return None, 0, 0, 0
            first = self._first = self._crypt(buf[: self.block])  # the stream moves on: keep it
        length, pad = _LENGTH_PAD.unpack_from(first)
        _check(length, pad, (length + 4) % self.block)
        end = 4 + length
        if len(buf) < end + self.mac_size:
            return None, 0, 0, 0
        self._first = None
        packet = first + self._crypt(buf[self.block : end])
        if not hmac.compare_digest(self._hmac.mac(seq, packet), buf[end : end + self.mac_size]):
            raise PacketError("bad MAC", mac=True)
        return packet, 5, end - pad, end + self.mac_size


class _EncryptThenMac:
    """AES-CTR with an HMAC over the length and the ciphertext (`*-etm@openssh.com`)."""

    block = 16

    def __init__(self, cipher: bytes, mac: bytes, out: bool, iv: bytes, key: bytes, integ: bytes):
        ctr = Cipher(algorithms.AES(key[: CTR[cipher]]), modes.CTR(iv[:16]))
        self._crypt = (ctr.encryptor() if out else ctr.decryptor()).update
        self._hmac = _Hmac(ETM_HMACS[mac], integ)
        self.mac_size = self._hmac.size
        self._padding = _RandomPadding().take

    def seal(self, seq: int, parts: list) -> list:
        size = 1 + sum(len(p) for p in parts)
        pad = _padding(size, self.block)
        head = _LENGTH.pack(size + pad)
        body = self._crypt(b"".join([_BYTE[pad], *parts, self._padding(pad)]))
        return [head, body, self._hmac.mac(seq, head, body)]

    def open(self, buf: memoryview, seq: int):
        if len(buf) < 4:
            return None, 0, 0, 0
        (length,) = _LENGTH.unpack_from(buf)
        _check(length, 4, length % self.block)
        end = 4 + length
        if len(buf) < end + self.mac_size:
            return None, 0, 0, 0
        if not hmac.compare_digest(self._hmac.mac(seq, buf[:end]), buf[end : end + self.mac_size]):
            raise PacketError("bad MAC", mac=True)
        body = self._crypt(buf[4:end])
        pad = body[0]
        _check(length, pad, 0)
        return body, 1, length - pad, end + self.mac_size


class _Gcm:
    """AES-GCM as OpenSSH does it (`aes*-gcm@openssh.com`)."""

    block = 16
    mac_size = 16  # the tag

    def __init__(self, cipher: bytes, iv: bytes, key: bytes):
        self._aead = AESGCM(key[: GCM[cipher]])
        self._fixed = iv[:4]
        self._counter = int.from_bytes(iv[4:12], "big")
        self._padding = _RandomPadding().take

    def _nonce(self) -> bytes:
        counter = self._counter
        self._counter = (counter + 1) & 0xFFFF_FFFF_FFFF_FFFF
        return self._fixed + counter.to_bytes(8, "big")

    def seal(self, seq: int, parts: list) -> list:
        size = 1 + sum(len(p) for p in parts)
        pad = _padding(size, self.block)
        head = _LENGTH.pack(size + pad)
        body = b"".join([_BYTE[pad], *parts, self._padding(pad)])
        return [head, self._aead.encrypt(self._nonce(), body, head)]

    def open(self, buf: memoryview, seq: int):
        if len(buf) < 4:
            return None, 0, 0, 0
        (length,) = _LENGTH.unpack_from(buf)
        _check(length, 4, length % self.block)
        end = 4 + length + 16
        if len(buf) < end:
            return None, 0, 0, 0
        try:
            body = self._aead.decrypt(self._nonce(), buf[4:end], buf[:4])
        except InvalidTag:
            raise PacketError("bad MAC", mac=True) from None
        pad = body[0]
        _check(length, pad, 0)
        return body, 1, length - pad, end


def _check(length: int, pad: int, misalignment: int) -> None:
    if length > MAX_PACKET or length < 8 or misalignment:
        raise PacketError(f"bad packet length {length}")
    if pad < 4 or pad + 2 > length:
        raise PacketError(f"bad padding {pad} in a packet of {length} bytes")


PLAIN = _Plain()


class PacketCiphers:
    """One direction pair's packet protection: conch's `SSHCiphers` interface
    (constructor, `setKeys`, the four type names) plus `seal`/`open`."""

    def __init__(self, outCip: bytes, inCip: bytes, outMac: bytes, inMac: bytes):
        self.outCipType = outCip
        self.inCipType = inCip
        # AEAD ciphers authenticate themselves: whatever MAC was negotiated is not used
        self.outMACType = outCip if is_aead(outCip) else outMac
        self.inMACType = inCip if is_aead(inCip) else inMac
        self.out = self.in_ = PLAIN

    @classmethod
    def plain(cls) -> PacketCiphers:
        return cls(_NONE, _NONE, _NONE, _NONE)

    def setKeys(self, outIV, outKey, inIV, inKey, outInteg, inInteg):
        self.out = _protection(self.outCipType, self.outMACType, True, outIV, outKey, outInteg)
        self.in_ = _protection(self.inCipType, self.inMACType, False, inIV, inKey, inInteg)

    def seal(self, seq: int, parts: list) -> list:
        """The bytes to send for a packet whose payload is the concatenation of `parts`."""
        return self.out.seal(seq, parts)

    def open(self, buf: memoryview, seq: int):
        """The first packet in `buf`: (body, start, stop, bytes used), the message
        (type byte and payload) being body[start:stop]; body is None while the
        packet is incomplete. Raises PacketError for a packet that must end the
        connection. `body` may be a slice of `buf`: copy what is kept."""
        return self.in_.open(buf, seq)


def _protection(cipher: bytes, mac: bytes, out: bool, iv: bytes, key: bytes, integ: bytes):
    if cipher == _NONE:
        return PLAIN
    if cipher in GCM:
        return _Gcm(cipher, iv, key)
    if cipher in CTR and mac in ETM_HMACS:
        return _EncryptThenMac(cipher, mac, out, iv, key, integ)
    if cipher in CTR and mac in HMACS:
        return _EncryptAndMac(cipher, mac, out, iv, key, integ)
    raise ValueError(f"unsupported cipher and MAC: {cipher!r} {mac!r}")
