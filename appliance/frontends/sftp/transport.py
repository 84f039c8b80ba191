"""The SSH layers under SFTP, with conch's per-packet work cut down.

- `PacketTransport`: conch's server transport with packets sealed and opened
  by packets.py (AES-GCM, EtM MACs, no quadratic receive buffer, one join per
  packet sent), and `send_parts` to send a payload given in pieces. It offers
  AES-GCM alone to clients that can take it (see `ssh_KEXINIT`).
- `Connection`: channel data handed on with one copy instead of three.
- `BufferedChannel`: a channel that gathers what is written in one reactor
  turn and sends it in packets as large as the peer allows (to a paramiko client
  on a fast link, less than its whole window: see compat.py). An SFTP read
  reply (13 bytes of header and 32 KiB of data, OpenSSH's default) no longer
  costs two SSH packets, one of them tiny.

Flow control, so that no client makes the daemon hold more than a bounded amount
for it, however fast it sends or however little it reads:
- a `BufferedChannel`'s window is reopened (CHANNEL_WINDOW_ADJUST) for the bytes
  its consumer has released (`consumed`), not for the bytes that arrived: a client
  that sends faster than its requests are handled, or whose requests are held back
  because it does not read the replies, is paused by its window;
- when the socket's send buffer fills (a client that does not read at all), the
  transport stops reading from it and the channels keep their output (counted in
  their `unsent`, which SFTP holds back on), until it drains; channels keep it too
  during a key exchange rather than queueing it in conch's unbounded list;
- `receive_limit` bounds a packet before sign-in (see `ApplianceTransport`).
"""

from __future__ import annotations

import struct
from collections import deque

from twisted.conch.ssh import channel, connection, transport
from twisted.conch.ssh.common import NS, getNS
from twisted.logger import Logger

from ..tcp_send import send_now
from ..tcp_state import least_round_trip
from ..twisted_private import unsent_bytes
from .compat import unread_allowance
from .packets import CTR, ETM_HMACS, GCM, HMACS, PacketCiphers, PacketError, is_aead
from .twisted_private import (
    connection_log,
    held_for_key_exchange,
    key_exchange_idle,
)

log = Logger()

MSG_CHANNEL_DATA = 94
_TYPE = [bytes((n,)) for n in range(256)]
_TWO_U32 = struct.Struct(">2L")
_COMPACT_AT = 1 << 16  # receive-buffer bytes consumed before they are dropped from its front
KEXINIT_WAIT = 1.0  # seconds to wait for the client's first KEXINIT before sending ours regardless
# bytes waiting in Twisted's send buffer beyond which the client is read no more and channels keep
# their output (Twisted asks from its bufferSize, RECEIVE_SIZE, on: a fast download's passing bursts)
SEND_BUFFER_LIMIT = 4 << 20


STRICT_KEX_S = b"kex-strict-s-v00@openssh.com"  # OpenSSH PROTOCOL 1.10: the Terrapin counter-measure
STRICT_KEX_C = b"kex-strict-c-v00@openssh.com"
MSG_NEWKEYS = 21
# What is negotiated, whatever a client asks: AES-GCM. The MAC names are only named (an
# AEAD cipher uses none); EtM ones, which every client that has AES-GCM knows.
MODERN_CIPHERS = list(GCM)
MODERN_MACS = list(ETM_HMACS)
# [sftp] legacy_ciphers adds AES-CTR for clients without AES-GCM (libssh2 before 1.11,
# so curl on Debian 12): with encrypt-and-MAC HMACs, which Terrapin cannot truncate, and
# with EtM HMACs only after a strict key exchange (CTR-EtM without one is open to it).
LEGACY_CIPHERS = list(CTR)
LEGACY_MACS = list(HMACS)


_REFUSE = object()  # see _aead_mac_fallback


def _weak_mac(name: bytes) -> bool:
    return name in (b"", b"none") or any(w in name for w in (b"md5", b"sha1", b"ripemd", b"-96"))


class PacketTransport(transport.SSHServerTransport):
    _inbuf: bytearray | None = None
    _inpos = 0
    _failed = False
    clock = None  # the reactor (the global one unless set)
    _held: list | None = None  # sealed packets gathered for one write (see hold)
    _soon: list | None = None  # what runs after the packets of one dataReceived (see call_soon)
    _kexinit_wait = None  # while the first KEXINIT waits for the client's
    _first_offer_made = False
    supportedCiphers = MODERN_CIPHERS
    supportedMACs = MODERN_MACS
    legacy_ciphers = False  # also AES-CTR for clients without AES-GCM ([sftp] legacy_ciphers)
    _strict = False  # strict key exchange agreed (the client's first KEXINIT asked for it)
    _initial_kex = True  # until the client's first NEWKEYS
    _peer_kexinit_seen = False
    receive_limit: int | None = None  # the largest packet taken (None: packets.MAX_PACKET)
    _socket_full = False  # the socket's send buffer is full: reading and channel output wait

    def connectionMade(self):
        super().connectionMade()
        tcp = self.transport
        if getattr(tcp, "producer", True) is None:  # Twisted's TCP transport (a test's may not be)
            tcp.registerProducer(self, True)

    # ---- flow control toward the client (see the module's docstring)

    def pauseProducing(self):
        """Twisted's send buffer is full (asked at each write while it holds more than its
        bufferSize): past SEND_BUFFER_LIMIT (the client is not reading), read nothing more
        from it, and let the channels keep their output, until it has drained."""
        tcp = self.transport
        if not self._socket_full and unsent_bytes(tcp) >= SEND_BUFFER_LIMIT:
            self._socket_full = True
            tcp.pauseProducing()

    def resumeProducing(self):
        """Twisted's send buffer is empty."""
        tcp = self.transport
        if tcp.disconnecting:
            tcp.unregisterProducer()  # a loseConnection waits for that (see FileDescriptor.loseConnection)
            return
        if self._socket_full:
            self._socket_full = False
            tcp.resumeProducing()
            self._output_reopened()

    def stopProducing(self):
        pass

    @property
    def output_open(self) -> bool:
        """Whether channel data may be sent now: not while the socket's buffer is full,
        nor during a key exchange (conch would queue it in memory, without bound)."""
        return not self._socket_full and key_exchange_idle(self)

    def _output_reopened(self) -> None:
        reopened = getattr(self.service, "output_reopened", None)
        if reopened is not None:
            reopened()

    # ---- key exchange: our packet protection in place of conch's SSHCiphers

    def sendKexInit(self):
        """The first KEXINIT waits (up to KEXINIT_WAIT) for the client's, which
        every common client sends at once: the cipher offer depends on it. It
        offers strict key exchange (only the first KEXINIT may)."""
        if self.sessionID is None and not self._first_offer_made:
            if self._kexinit_wait is None:
                self._kexinit_wait = self._clock().callLater(KEXINIT_WAIT, self._kexinit_timeout)
            return
        if self.sessionID is None:
            self.supportedKeyExchanges = [*type(self).supportedKeyExchanges, STRICT_KEX_S]
        try:
            super().sendKexInit()
        finally:
            self.__dict__.pop("supportedKeyExchanges", None)  # never negotiated as a key exchange

    def _kexinit_timeout(self) -> None:
        self._kexinit_wait = None
        if not self._first_offer_made and key_exchange_idle(self):
            self._first_offer_made = True  # a client waiting for us: offer everything
            self.sendKexInit()

    def ssh_KEXINIT(self, packet):
        """Negotiate with our packet protection in place of conch's SSHCiphers.

        The cipher is the client's first choice among those offered (RFC 4253
        7.1), and clients list AES-CTR before AES-GCM (OpenSSH up to 9.x,
        paramiko): the offer is made for the client's KEXINIT (see `_offer`),
        and what was negotiated is checked against the policy (`_allowed`)
        whatever the client asked.
        """
        lists = _name_lists(packet)
        if not self._peer_kexinit_seen:
            self._peer_kexinit_seen = True
            self._strict = lists is not None and STRICT_KEX_C in lists[0]
            if self._strict and self.incomingPacketSequence != 1:
                self._violation(b"the client's KEXINIT was not its first packet")
                return None
        if not self._first_offer_made:
            self._first_offer_made = True
            if self._kexinit_wait is not None and self._kexinit_wait.active():
                self._kexinit_wait.cancel()
            self._kexinit_wait = None
            if key_exchange_idle(self):  # ours not sent yet: choose the offer
                if lists is not None:
                    self.supportedCiphers, self.supportedMACs = self._offer(lists)
                # sent before negotiating, so that a client with nothing in common
                # still reads our lists and can say what did not match
                self.sendKexInit()
        fallback = self._aead_mac_fallback(lists)
        if fallback is _REFUSE:
            self._failed = True
            self.sendDisconnect(transport.DISCONNECT_KEY_EXCHANGE_FAILED, self._no_match())
            return None
        before = self.supportedMACs
        if fallback is not None:
            # an AEAD cipher needs no MAC, but conch refuses a key exchange where
            # none matches (OpenSSH's server ignores the MACs): accept the peer's first
            self.supportedMACs = [*before, fallback]
        try:
            result = super().ssh_KEXINIT(packet)
        finally:
            self.supportedMACs = before
        proposed = getattr(self, "nextEncryptions", None)
        if not isinstance(proposed, transport.SSHCiphers) or None in proposed.__dict__.values():
            return result  # not negotiated (conch disconnected) or already ours
        pairs = ((proposed.outCipType, proposed.outMACType), (proposed.inCipType, proposed.inMACType))
        if not all(self._allowed(cipher, mac) for cipher, mac in pairs):
            self._failed = True
            self.sendDisconnect(transport.DISCONNECT_KEY_EXCHANGE_FAILED, self._no_match())
            return None
        self.nextEncryptions = PacketCiphers(
            proposed.outCipType, proposed.inCipType, proposed.outMACType, proposed.inMACType
        )
        return result

    def _allowed(self, cipher: bytes, mac: bytes) -> bool:
        """The policy, whatever was offered: AES-GCM; AES-CTR only with legacy_ciphers on, with
        an encrypt-and-MAC HMAC, or an EtM one after a strict key exchange."""
        if is_aead(cipher):
            return True
        if not self.legacy_ciphers or cipher not in CTR:
            return False
        return mac in HMACS or (mac in ETM_HMACS and self._strict)

    def _offer(self, lists: list[list[bytes]]) -> tuple[list[bytes], list[bytes]]:
        """(ciphers, MACs) offered to this client: AES-GCM alone to one that takes it both
        ways; AES-CTR too (legacy_ciphers) to one that does not, with only the MACs the
        policy allows it (EtM ones only when it asked for a strict key exchange)."""
        ciphers_in, ciphers_out = lists[2:4]
        if all(any(is_aead(c) for c in ciphers) for ciphers in (ciphers_in, ciphers_out)) or not self.legacy_ciphers:
            return MODERN_CIPHERS, MODERN_MACS
        return MODERN_CIPHERS + LEGACY_CIPHERS, (MODERN_MACS if self._strict else []) + LEGACY_MACS

    def _no_match(self) -> bytes:
        ours = b", ".join(self.supportedCiphers)
        return (
            b"no matching cipher and MAC: this server takes "
            + ours
            + (b" (AES-GCM needs no MAC; a client insisting on a weak MAC such as hmac-sha1 is refused)")
        )

    def _aead_mac_fallback(self, lists: list[list[bytes]] | None):
        """The peer's first MAC when an AEAD cipher will be chosen in a direction
        whose MACs match none of ours, else None; _REFUSE when that MAC is a weak
        one (a client insisting on hmac-sha1 is refused, not let in through AES-GCM)."""
        if lists is None:
            return None
        ciphers_in, ciphers_out, macs_in, macs_out = lists[2:6]
        ours = self.supportedCiphers
        for ciphers, macs in ((ciphers_in, macs_in), (ciphers_out, macs_out)):
            cipher = next((c for c in ciphers if c in ours), None)
            if cipher is not None and is_aead(cipher) and not any(m in self.supportedMACs for m in macs):
                return _REFUSE if _weak_mac(macs[0]) else macs[0]
        return None

    def _violation(self, what: bytes) -> None:
        """A strict key exchange broken by the client: the connection ends (OpenSSH PROTOCOL 1.10)."""
        self._failed = True
        self.sendDisconnect(transport.DISCONNECT_PROTOCOL_ERROR, b"strict key exchange violated: " + what)

    def ssh_NEWKEYS(self, packet):
        if self._strict:
            self.incomingPacketSequence = 0  # after every NEWKEYS, in both directions
        self._initial_kex = False
        super().ssh_NEWKEYS(packet)
        if key_exchange_idle(self):
            self._output_reopened()  # channel output kept during the key exchange goes out

    def _ciphers(self) -> PacketCiphers:
        current = self.currentEncryptions
        if not isinstance(current, PacketCiphers):  # conch's "none" set up in connectionMade
            current = self.currentEncryptions = PacketCiphers.plain()
        return current

    # ---- sending

    def sendPacket(self, messageType, payload):
        self.send_parts(messageType, (payload,))

    def send_parts(self, messageType: int, parts) -> None:
        """Send one packet whose payload is the concatenation of `parts` (bytes or memoryviews)."""
        if held_for_key_exchange(self, messageType, parts):
            return
        seq = self.outgoingPacketSequence
        sealed = self._ciphers().out.seal(seq, [_TYPE[messageType], *parts])
        self.outgoingPacketSequence = 0 if messageType == MSG_NEWKEYS and self._strict else (seq + 1) & 0xFFFF_FFFF
        if self._held is not None:
            self._held += sealed
        else:
            self._write(sealed)

    def hold(self) -> None:
        """Gather the packets sent from now until release() into one write."""
        if self._held is None:
            self._held = []

    def release(self) -> None:
        pieces, self._held = self._held, None
        if pieces:
            self._write(pieces)

    def _write(self, pieces: list) -> None:
        """Hand sealed pieces to the socket at once, with one sendmsg() and without
        joining them (tcp_send.send_now)."""
        send_now(self.transport, pieces)

    # ---- receiving

    def dataReceived(self, data):
        if self._failed:
            return
        if not self.gotVersion:
            # conch reads the version line and hands what follows to getPacket()
            super().dataReceived(data)
            return
        self._append(data)
        self._soon = soon = []
        try:
            self._read_packets()
            self._check_limit()
        finally:
            self._soon = None
            for fn in soon:
                fn()

    def getPacket(self):
        """Conch's entry after the version line: read every packet in what came with it."""
        if self.buf:
            self._append(self.buf)
            self.buf = b""
        self._read_packets()
        self._check_limit()
        return None

    def _check_limit(self) -> None:
        """What is left once every whole packet is read is the start of one packet: more
        than `receive_limit` of it means a packet larger than that (refused, not buffered)."""
        limit = self.receive_limit
        if limit is not None and not self._failed and self._inbuf is not None:
            if len(self._inbuf) - self._inpos > limit:
                self._too_large(limit)

    def _too_large(self, limit: int) -> None:
        self._failed = True
        self._inbuf = None
        self.sendDisconnect(
            transport.DISCONNECT_PROTOCOL_ERROR,
            b"packet too large: at most %d bytes before sign-in" % limit,
        )

    def _append(self, data: bytes) -> None:
        buf = self._inbuf
        if buf is None:
            self._inbuf = bytearray(data)
            return
        try:
            if self._inpos >= _COMPACT_AT or self._inpos == len(buf):
                del buf[: self._inpos]
                self._inpos = 0
            buf += data
        except BufferError:  # a view of it is still alive somewhere: start a new one
            self._inbuf = buf[self._inpos :] + data
            self._inpos = 0

    def _read_packets(self) -> None:
        buf = self._inbuf
        while buf is not None and not self._failed and len(buf) > self._inpos:
            seq = self.incomingPacketSequence
            with memoryview(buf) as view:
                try:
                    body, start, stop, used = self._ciphers().in_.open(view[self._inpos :], seq)
                except PacketError as e:
                    self._failed = True
                    reason = transport.DISCONNECT_MAC_ERROR if e.mac else transport.DISCONNECT_PROTOCOL_ERROR
                    self.sendDisconnect(reason, str(e).encode())
                    return
                if body is None:
                    return
                limit = self.receive_limit
                if limit is not None and used > limit:  # it came whole in one read: as refused
                    del body
                    self._too_large(limit)
                    return
                kind = body[start]
                payload = bytes(body[start + 1 : stop])
                del body
            self._inpos += used
            self.incomingPacketSequence = (seq + 1) & 0xFFFF_FFFF
            if self._strict and self._initial_kex and not (kind == MSG_NEWKEYS or 30 <= kind <= 49):
                # during a strict initial key exchange only its own messages (not even IGNORE)
                self._violation(b"message %d during the initial key exchange" % kind)
                return
            if kind >= 50 and self.service is not None:  # a service's message, as conch's dispatchMessage does
                self.service.packetReceived(kind, payload)
            else:
                self.dispatchMessage(kind, payload)

    def _clock(self):
        if self.clock is None:
            from twisted.internet import reactor

            return reactor
        return self.clock

    def call_soon(self, fn) -> None:
        """Run `fn` once the packets at hand are handled: at the end of
        dataReceived when called from within it, else at the end of this reactor turn."""
        if self._soon is not None:
            self._soon.append(fn)
        else:
            self._clock().callLater(0, fn)

    def connectionLost(self, reason=None):
        if self._kexinit_wait is not None and self._kexinit_wait.active():
            self._kexinit_wait.cancel()
        self._kexinit_wait = None
        super().connectionLost(reason)


def _name_lists(packet: bytes) -> list[list[bytes]] | None:
    """The name-lists of a KEXINIT payload (after the cookie), or None if it is malformed."""
    try:
        return [names.split(b",") for names in getNS(packet[16:], 10)[:10]]
    except Exception:  # noqa: BLE001 - conch's own parsing reports a malformed KEXINIT
        return None


class Connection(connection.SSHConnection):
    def ssh_CHANNEL_OPEN(self, packet):
        """A channel the avatar refuses (port forwarding, too many sessions) is answered
        with its reason; conch would log a critical traceback for every attempt."""
        refuse = getattr(self.transport.avatar, "channel_refusal", None)
        kind, rest = getNS(packet)
        refusal = refuse(kind) if refuse is not None and len(rest) >= 4 else None
        if refusal is None:
            super().ssh_CHANNEL_OPEN(packet)
            return
        reason, text = refusal
        (sender,) = struct.unpack_from(">L", rest)
        log.info("{kind!r} channel refused: {why}", kind=kind, why=text)
        self.transport.sendPacket(
            connection.MSG_CHANNEL_OPEN_FAILURE, struct.pack(">2L", sender, reason) + NS(text.encode()) + NS(b"")
        )

    def packetReceived(self, messageNum, packet):
        if messageNum == MSG_CHANNEL_DATA:  # the bulk of the traffic, without conch's name lookups
            self.ssh_CHANNEL_DATA(packet)
        else:
            super().packetReceived(messageNum, packet)

    def ssh_CHANNEL_DATA(self, packet):
        local, size = _TWO_U32.unpack_from(packet)
        chan = self.channels[local]
        if size > chan.localWindowLeft or size > chan.localMaxPacket or len(packet) < 8 + size:
            connection_log(self).error("too much data")
            self.sendClose(chan)
            return
        chan.localWindowLeft -= size
        arrived = getattr(chan, "data_arrived", None)
        if arrived is not None:  # the channel reopens its window as its consumer goes (see BufferedChannel)
            arrived(packet[8 : 8 + size])
            return
        if chan.localWindowLeft < chan.localWindowSize // 2:
            self.adjustWindow(chan, chan.localWindowSize - chan.localWindowLeft)
        chan.dataReceived(packet[8 : 8 + size])

    def output_reopened(self) -> None:
        """The transport may send channel data again: the channels send what they kept."""
        for chan in list(self.channels.values()):
            resume = getattr(chan, "resume_output", None)
            if resume is not None:
                resume()


class BufferedChannel(channel.SSHChannel):
    """Output gathered and sent in packets of the peer's maximum size; input paced by
    the window: the bytes that arrived count against it until the consumer says it is
    done with them (`consumed`), so what the consumer holds back stays within the window.
    A consumer must release every byte it takes (SftpProtocol does, as it answers)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._out: deque = deque()
        self._out_size = 0
        self._flush_pending = False
        self._when_drained: list = []
        self._backlog = 0  # bytes received that the consumer has not released yet
        self._held_back = 0  # of the peer's window, what is left unused (see compat.py)

    def channelOpen(self, specificData):
        transport = self.conn.transport
        handle = transport.transport.getHandle() if transport.transport is not None else None
        allowance = unread_allowance(
            transport.otherVersionString or b"", self.remoteWindowLeft, least_round_trip(handle) if handle else None
        )
        if allowance is not None:
            self._held_back = self.remoteWindowLeft - allowance
        super().channelOpen(specificData)

    # ---- input

    def data_arrived(self, data: bytes) -> None:
        """Data from the client, already counted against the window (by Connection)."""
        self._backlog += len(data)
        self.dataReceived(data)
        self._reopen()

    def consumed(self, size: int) -> None:
        """The consumer is done with `size` bytes of what arrived: they may be sent again."""
        self._backlog = max(0, self._backlog - size)
        self._reopen()

    def _reopen(self) -> None:
        """Reopen the window by what was released: the client may have in flight, plus
        what is held here, no more than the window. Once an eighth is free, not at half as
        conch does: what is held shrinks the window, and a fast client must not run dry."""
        room = self.localWindowSize - self.localWindowLeft - self._backlog
        if room >= self.localWindowSize >> 3 and not self.localClosed:
            self.conn.adjustWindow(self, room)

    # ---- output

    def write(self, data):
        if not data or self.localClosed:
            return
        self._out.append(data)
        self._out_size += len(data)
        if self._out_size >= self.remoteMaxPacket:
            self._send(whole_packets=True)
        if self._out_size and not self._flush_pending:
            self._flush_pending = True
            self.conn.transport.call_soon(self._flush)

    def writeSequence(self, data):
        for piece in data:
            self.write(piece)

    def _flush(self) -> None:
        self._flush_pending = False
        self._send(whole_packets=False)

    def _send(self, whole_packets: bool) -> None:
        transport = self.conn.transport
        transport.hold()
        try:
            self._send_held(whole_packets)
        finally:
            transport.release()
        if not self._out_size and self._when_drained:
            actions, self._when_drained = self._when_drained, []
            for action in actions:
                action()

    def _send_held(self, whole_packets: bool) -> None:
        most = self.remoteMaxPacket
        out = self._out
        if not getattr(self.conn.transport, "output_open", True):
            return  # kept (and counted in `unsent`) until the transport calls resume_output
        while self._out_size and self.remoteWindowLeft > self._held_back and not self.localClosed:
            size = min(self._out_size, most, self.remoteWindowLeft - self._held_back)
            if whole_packets and size < most:
                break
            parts, taken = [], 0
            while taken < size:
                piece = out[0]
                room = size - taken
                if len(piece) <= room:
                    parts.append(out.popleft())
                    taken += len(piece)
                else:
                    view = memoryview(piece)
                    parts.append(view[:room])
                    out[0] = view[room:]
                    taken = size
            recipient = self.conn.channelsToRemoteChannel[self]
            self.conn.transport.send_parts(MSG_CHANNEL_DATA, [_TWO_U32.pack(recipient, size), *parts])
            self._out_size -= size
            self.remoteWindowLeft -= size

    @property
    def unsent(self) -> int:
        """Bytes written and not sent yet: the peer's window has no room for them."""
        return self._out_size

    def when_drained(self, action) -> None:
        """Call `action` once everything written so far has been sent."""
        self._send(whole_packets=False)
        if self._out_size and not self.localClosed:
            self._when_drained.append(action)
        else:
            action()

    def addWindowBytes(self, data):
        super().addWindowBytes(data)
        self._send(whole_packets=False)

    def resume_output(self) -> None:
        if self._out_size:
            self._send(whole_packets=False)

    def loseConnection(self):
        self.when_drained(super().loseConnection)
