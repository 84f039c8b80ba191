"""The SFTP front end: twisted.conch over the core.

`sftp_factory(core)` is what the composition root listens with, `core` the four
things SFTP uses of the core (SftpCore). The pieces:
this module (transport: admission through core.signin, algorithms, limits,
login grace; user-auth service: the client's address and ticket, refusal messages
as banners), login.py (the avatar over the shared cred adapter, the session that
serves only SFTP and legacy scp), scp.py (the rcp protocol of `scp -t` and `scp -f`
over the same FileSession; nothing is executed), server.py
(ISFTPServer over a core FileSession and the SFTP packet loop), errors.py (the
one mapping of core errors to SFTP status codes), transport.py and packets.py
(the SSH layers under SFTP: AES-GCM and EtM MACs, packet framing, channel
output in large packets; see bench/README.md for what they gained), and
twisted_private.py (the one place that uses Conch's private names).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass

from twisted.conch.error import IgnoreAuthentication
from twisted.conch.ssh import factory, keys
from twisted.conch.ssh import transport as ssh_transport  # the name `transport` is our submodule
from twisted.conch.ssh.common import NS
from twisted.cred.error import UnauthorizedLogin
from twisted.logger import Logger
from twisted.python.failure import Failure

from ...config import Settings
from ...core.auth import ATTEMPTS_PER_CONNECTION, INVALID_CREDENTIALS, TOO_MANY_ATTEMPTS
from ...core.signin import SignIn
from ...errors import ApplianceError, AuthenticationFailed, PermissionDenied, Unavailable
from .login import SftpSession, SftpUser, sftp_portal
from .server import SftpProtocol
from .transport import LEGACY_CIPHERS, LEGACY_MACS, MODERN_CIPHERS, MODERN_MACS, Connection, PacketTransport
from .twisted_private import UserAuthServer

log = Logger()


@dataclass(frozen=True)
class SftpCore:
    """What the SFTP front end uses of the core, handed in by the composition root."""

    settings: Settings  # [sftp]: login grace, handles, legacy ciphers
    reactor: object  # the clock of grace periods and pacing
    signin: SignIn  # admission as a connection arrives, then every sign-in
    host_keys: Callable[[], dict[str, bytes]]  # the SSH host keys offered, by kind


MSG_USERAUTH_BANNER = 53
# Only modern algorithms (no SHA-1, 3DES, MD5, DSS, CBC; no compression).
KEX = [b"mlkem768x25519-sha256", b"curve25519-sha256", b"curve25519-sha256@libssh.org"]
RECEIVE_SIZE = 256 * 1024  # bytes read per recv() (Twisted's 64 KiB is two upload packets)
HOST_KEY_ALGORITHMS = [b"ssh-ed25519", b"rsa-sha2-512", b"rsa-sha2-256"]  # no NIST curves (see datadir)
REFUSAL_LINGER = 2.0  # seconds a refused client gets to read why before the connection is cut
MAX_LINGERING = 100  # refused connections left to linger at once (more are cut at once: a flood)
HANDSHAKE_GRACE = 10.0  # seconds to finish the key exchange (a real client needs well under one)
# the largest packet taken before sign-in (a KEXINIT, a sign-in with a key or certificate: a few
# KiB); after it, packets.MAX_PACKET. With RECEIVE_SIZE, what a connection that never signs in
# can make the daemon hold; ConnectionSettings caps how many such connections there are
MAX_PACKET_BEFORE_SIGN_IN = 64 * 1024
MAX_SIGN_INS_WAITING = 8  # sign-in requests sent without waiting for the answers (RFC 4252 allows it)


class ApplianceTransport(PacketTransport):
    supportedKeyExchanges = KEX
    supportedCompressions = [b"none"]
    ourVersionString = b"SSH-2.0-Appliance"

    ticket = None
    receive_limit = MAX_PACKET_BEFORE_SIGN_IN  # None once signed in
    _grace = None
    _sign_in_by = 0.0  # when the login grace ends
    _keyed = False  # the first key exchange is done
    _lingering = False  # refused, waiting for the client to read why (see _refuse)

    @property
    def address(self) -> str:
        return getattr(self.transport.getPeer(), "host", "")

    def connectionMade(self):
        core = self.factory.core
        address = self.address
        try:
            self.ticket = core.signin.admit(address, "sftp", drop=self._evicted, end=self._ended)
        except ApplianceError as e:
            reason = ssh_transport.DISCONNECT_HOST_NOT_ALLOWED_TO_CONNECT  # banned
            if isinstance(e, PermissionDenied):
                reason = ssh_transport.DISCONNECT_TOO_MANY_CONNECTIONS
            log.info("SFTP connection from {address} refused: {why}", address=address, why=e.message)
            self._refuse(reason, e.message, core.reactor)
            return
        self.clock = core.reactor
        self.transport.setTcpNoDelay(True)  # otherwise Nagle stalls the request/reply rhythm
        self.transport.bufferSize = RECEIVE_SIZE
        # A connection that has not finished the key exchange (a version string trickled
        # a byte at a time) holds a sign-in slot for a short grace, not the whole login grace.
        grace = core.settings.sftp.login_grace_time
        self._sign_in_by = core.reactor.seconds() + grace
        self._grace = core.reactor.callLater(min(HANDSHAKE_GRACE, grace), self._grace_over)
        super().connectionMade()

    def _refuse(self, reason: int, why: str, reactor) -> None:
        """Say why before hanging up, as FTP's 421 does: our version line, then a
        DISCONNECT in the clear, which OpenSSH's client prints. Only our side is closed:
        the client's KEXINIT arriving after a full close would reset the connection, and
        the client often lost the reason with it ("Broken pipe"). The client hangs up
        once it has read it, or is cut off after REFUSAL_LINGER; in a flood of refusals,
        those beyond MAX_LINGERING are cut off at once."""
        self._failed = True  # what the client sends is not read
        payload = bytes([ssh_transport.MSG_DISCONNECT]) + struct.pack(">L", reason) + NS(why.encode()) + NS(b"")
        padding = 8 - (5 + len(payload)) % 8
        padding += 8 if padding < 4 else 0
        packet = struct.pack(">LB", 1 + len(payload) + padding, padding) + payload + bytes(padding)
        self.transport.write(self.ourVersionString + b"\r\n" + packet)
        factory = self.factory
        if factory.lingering >= MAX_LINGERING or not hasattr(self.transport, "loseWriteConnection"):
            self.transport.loseConnection()
            return
        factory.lingering += 1
        self._lingering = True
        self.transport.loseWriteConnection()
        self._grace = reactor.callLater(REFUSAL_LINGER, self.transport.abortConnection)

    def ssh_NEWKEYS(self, packet):
        super().ssh_NEWKEYS(packet)
        if not self._keyed:
            self._keyed = True
            if self._grace is not None and self._grace.active():
                self._grace.reset(max(0.0, self._sign_in_by - self.factory.core.reactor.seconds()))

    def _grace_over(self) -> None:
        self._grace = None
        if not self._keyed:
            log.info("SFTP connection from {address} did not finish the key exchange in time", address=self.address)
            self.transport.loseConnection()
            return
        log.info("SFTP connection from {address} did not sign in in time", address=self.address)
        self.sendDisconnect(ssh_transport.DISCONNECT_PROTOCOL_ERROR, b"sign-in took too long")

    def _evicted(self) -> None:
        """A full sign-in pool makes room for a newcomer from a quieter address."""
        log.info("SFTP connection from {address} hung up to make room for others", address=self.address)
        self.transport.loseConnection()

    def _ended(self, message: str) -> None:
        """The core ends this session (say, the profile was deactivated): the reason in
        a DISCONNECT, which OpenSSH's client prints; uploads in flight are aborted."""
        log.info("SFTP connection from {address} ended: {why}", address=self.address, why=message)
        self.sendDisconnect(ssh_transport.DISCONNECT_BY_APPLICATION, message.encode())

    def signed_in(self) -> None:
        self.receive_limit = None
        if self._grace is not None and self._grace.active():
            self._grace.cancel()
        self._grace = None

    def receiveError(self, reasonCode, description):
        # A client disconnecting normally is not an error worth a line at error level.
        log.debug("SFTP client disconnected: {code} {why}", code=reasonCode, why=description)

    def connectionLost(self, reason=None):
        if self._grace is not None and self._grace.active():
            self._grace.cancel()
        if self._lingering:
            self._lingering = False
            self.factory.lingering -= 1
        if self.ticket is not None:
            self.ticket.close()
        super().connectionLost(reason)


class _AddressPortal:
    """The factory's portal, telling the checker where the client is and which
    connection (its ticket, which the core's sign-in marks signed in)."""

    def __init__(self, portal, transport):
        self._portal = portal
        self._transport = transport

    def listCredentialsInterfaces(self):
        return self._portal.listCredentialsInterfaces()

    def login(self, credentials, mind, *interfaces):
        credentials.address = self._transport.address
        credentials.ticket = self._transport.ticket
        return self._portal.login(credentials, credentials.address, *interfaces)


class ApplianceUserAuth(UserAuthServer):
    """Conch's, with sign-in requests answered one at a time, in order: conch starts each
    as it arrives, so a client that sends thousands without waiting would have them all
    checked (bcrypt) and held at once. Up to MAX_SIGN_INS_WAITING wait their turn; more
    end the connection."""

    passwordDelay = 0  # the core slows repeated failures itself, per address and user
    # The core's ticket decides when a connection has tried enough (refused, below); conch's
    # own count, which runs one failure behind it, never gets there.
    attemptsBeforeDisconnect = ATTEMPTS_PER_CONNECTION

    def serviceStarted(self):
        super().serviceStarted()
        self.portal = _AddressPortal(self.transport.factory.portal, self.transport)
        self._checking = False
        self._waiting: list[bytes] = []

    def ssh_USERAUTH_REQUEST(self, packet):
        if self._checking:
            if len(self._waiting) >= MAX_SIGN_INS_WAITING:
                self._waiting = []
                self.transport.sendDisconnect(
                    ssh_transport.DISCONNECT_PROTOCOL_ERROR,
                    b"too many sign-in requests at once: send the next one after the answer to the last",
                )
                return None
            self._waiting.append(packet)
            return None
        self._checking = True
        checked = super().ssh_USERAUTH_REQUEST(packet)
        if checked is None:
            self._next_sign_in(None)
        else:
            checked.addBoth(self._next_sign_in)
        return None

    def _next_sign_in(self, result) -> None:
        self._checking = False
        ssh = self.transport
        if ssh is None or ssh.service is not self or getattr(ssh.transport, "disconnecting", True):
            self._waiting = []  # signed in, or hung up: what was sent after it is not an attempt
            return
        if self._waiting:
            self.ssh_USERAUTH_REQUEST(self._waiting.pop(0))

    def signed_in(self) -> None:
        self.transport.signed_in()

    def refused(self, reason):
        if reason.check(Unavailable):  # not the password's fault (a full data disk): say so and hang up
            self.transport.sendDisconnect(ssh_transport.DISCONNECT_SERVICE_NOT_AVAILABLE, reason.value.message.encode())
            return None
        if reason.check(IgnoreAuthentication) or self.method == b"none":
            return reason  # answered already (a key the profile has), or the "none" probe: no attempt
        if reason.check(AuthenticationFailed):
            message = reason.value.message
            if reason.value.code != INVALID_CREDENTIALS:
                # why, when it is not a wrong password (say, "Organisation payment missing"):
                # OpenSSH's client prints banners
                self.transport.sendPacket(MSG_USERAUTH_BANNER, NS(message.encode() + b"\r\n") + NS(b""))
            reason = Failure(UnauthorizedLogin(message))
        if self.transport.ticket.sign_in_refused() == 0:
            self.transport.sendDisconnect(
                ssh_transport.DISCONNECT_NO_MORE_AUTH_METHODS_AVAILABLE, TOO_MANY_ATTEMPTS.encode()
            )
            return None
        return reason


class ApplianceSSHFactory(factory.SSHFactory):
    protocol = ApplianceTransport
    services = {b"ssh-userauth": ApplianceUserAuth, b"ssh-connection": Connection}
    noisy = False
    lingering = 0  # refused connections waiting for their client to read why

    def __init__(self, core: SftpCore):
        self.core = core
        self.portal = sftp_portal(core)
        self.privateKeys = {}
        self.publicKeys = {}
        for data in core.host_keys().values():
            key = keys.Key.fromString(data)
            self.privateKeys[key.sshType()] = key
            self.publicKeys[key.sshType()] = key.public()
        self.primes = None

    def getPrimes(self):
        return None

    def buildProtocol(self, addr):
        built = super().buildProtocol(addr)
        built.supportedPublicKeys = [a for a in HOST_KEY_ALGORITHMS if a in built.supportedPublicKeys]
        if self.core.settings.sftp.legacy_ciphers:  # AES-CTR too, for clients without AES-GCM
            built.legacy_ciphers = True
            built.supportedCiphers = MODERN_CIPHERS + LEGACY_CIPHERS
            built.supportedMACs = MODERN_MACS + LEGACY_MACS
        return built


# Conch's classes log per connection and per channel under the names of our
# subclasses; the daemon's log filter keeps these to warnings and errors.
LIBRARY_LOG_NAMESPACES = tuple(
    f"{cls.__module__}.{cls.__name__}"
    for cls in (
        ApplianceTransport,
        ApplianceUserAuth,
        ApplianceSSHFactory,
        Connection,
        SftpSession,
        SftpUser,
        SftpProtocol,
    )
)


def sftp_factory(core: SftpCore) -> ApplianceSSHFactory:
    return ApplianceSSHFactory(core)
