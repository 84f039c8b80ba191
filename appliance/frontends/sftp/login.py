"""Sign-in for SFTP and what a signed-in connection may do.

One credentials checker sends passwords and verified keys to core.auth.login;
the realm gives an avatar whose only channel is a session that serves the
`sftp` subsystem and refuses shell, exec and pty cleanly.
"""

from __future__ import annotations

import functools
import struct

from twisted.conch import avatar
from twisted.conch.error import ConchError, ValidPublicKey
from twisted.conch.interfaces import IConchUser
from twisted.conch.ssh import keys, session
from twisted.conch.ssh.common import getNS
from twisted.conch.ssh.connection import EXTENDED_DATA_STDERR, OPEN_ADMINISTRATIVELY_PROHIBITED
from twisted.cred.checkers import ICredentialsChecker
from twisted.cred.credentials import ISSHPrivateKey, IUsernamePassword
from twisted.cred.error import UnauthorizedLogin
from twisted.cred.portal import IRealm, Portal
from twisted.logger import Logger
from zope.interface import implementer

from ...core.files import FileSession
from ...errors import ApplianceError, AuthenticationFailed
from ...threads import as_deferred
from .server import FilesServer, Pacer, SftpProtocol
from .transport import BufferedChannel

log = Logger()

# the session channel's window: Twisted's 128 KiB halves upload speed. It is reopened as requests
# are answered (see transport.BufferedChannel), so it also bounds the requests one session holds:
# 4 MiB, so that OpenSSH's sftp (64 WRITEs of 32 KiB in flight) still has room while WRITEs
# wait behind one that waits for the disk
WINDOW = 4 * 1024 * 1024
MAX_CHANNEL_PACKET = 256 * 1024
FORWARDING = (b"direct-tcpip", b"forwarded-tcpip", b"direct-streamlocal@openssh.com")


def _text(value: bytes) -> str:
    return value.decode("utf-8", "replace")


@implementer(ICredentialsChecker)
class CoreChecker:
    """The one checker: passwords and (signature-checked) keys go to core.auth.login.

    Credentials carry `address` (set by the user-auth service); core refusals
    (AuthenticationFailed) pass through so the service can show their message.
    """

    credentialInterfaces = (IUsernamePassword, ISSHPrivateKey)

    def __init__(self, auth):
        self._auth = auth

    def requestAvatarId(self, credentials):
        return as_deferred(self._check(credentials))

    async def _check(self, credentials):
        username = _text(credentials.username)
        address = getattr(credentials, "address", "")
        if ISSHPrivateKey.providedBy(credentials):
            if credentials.signature is None:
                # "may I use this key?": answer without signing in or logging
                if await self._auth.accepts_key(username, credentials.blob):
                    raise ValidPublicKey()
                raise UnauthorizedLogin("key not accepted")
            try:
                key = keys.Key.fromString(credentials.blob)
                verified = key.verify(credentials.signature, credentials.sigData)
            except (keys.BadKeyError, ValueError):
                verified = False
            if not verified:
                raise UnauthorizedLogin("bad signature")
            return await self._auth.login(username, protocol="sftp", address=address, public_key=credentials.blob)
        return await self._auth.login(username, protocol="sftp", address=address, password=_text(credentials.password))


class SftpSession(BufferedChannel, session.SSHSession):
    """A session channel: the sftp subsystem and nothing else."""

    def request_subsystem(self, data):
        name, _ = getNS(data)
        if name != b"sftp":
            self._refuse(f"The subsystem {_text(name)!r} is not offered; this server offers SFTP only.")
            return 0
        return super().request_subsystem(data)

    def request_shell(self, data):
        self._refuse("This server offers SFTP only: no shell.")
        return 0

    def request_exec(self, data):
        self._refuse("This server offers SFTP only: commands cannot be run.")
        return 0

    def request_pty_req(self, data):
        return 0

    def request_env(self, data):
        return 0

    def eofReceived(self):
        """The client is done (scp waits for an exit status, as from OpenSSH's sftp-server)."""
        if self.client is not None:
            self.client.transport.loseConnection()
        self.when_drained(self._exit)

    def _exit(self) -> None:
        """The exit status after the last reply, then the close."""
        self.conn.sendRequest(self, b"exit-status", struct.pack(">L", 0))
        self.loseConnection()

    def _refuse(self, message: str) -> None:
        self.writeExtended(EXTENDED_DATA_STDERR, message.encode() + b"\r\n")

    def closed(self):
        self.avatar.channel_closed()
        super().closed()


class SftpUser(avatar.ConchUser):
    """A signed-in profile on one SSH connection, with its files opened."""

    def __init__(self, files: FileSession, settings, pacer: Pacer | None = None):
        super().__init__()
        self.files = files
        self._settings = settings
        self._pacer = pacer
        self.channels = 0
        self.channelLookup[b"session"] = functools.partial(
            SftpSession, localWindow=WINDOW, localMaxPacket=MAX_CHANNEL_PACKET
        )
        self.subsystemLookup[b"sftp"] = self._sftp

    def channel_refusal(self, channelType: bytes) -> tuple[int, str] | None:
        """Why a channel of this type is not opened now (reason code, text), or None."""
        if channelType != b"session":
            what = "port forwarding" if channelType in FORWARDING else f"{_text(channelType)!r} channels"
            return OPEN_ADMINISTRATIVELY_PROHIBITED, f"This server offers SFTP only: no {what}."
        if self.channels >= self._settings.max_sessions_per_connection:
            limit = self._settings.max_sessions_per_connection
            return OPEN_ADMINISTRATIVELY_PROHIBITED, f"Too many sessions on one connection (at most {limit})."
        return None

    def lookupChannel(self, channelType, windowSize, maxPacket, data):
        refusal = self.channel_refusal(channelType)
        if refusal is not None:
            raise ConchError(*refusal)
        channel = super().lookupChannel(channelType, windowSize, maxPacket, data)
        self.channels += 1
        return channel

    def channel_closed(self) -> None:
        self.channels -= 1

    def _sftp(self, data, avatar):
        return SftpProtocol(FilesServer(self.files, self._settings.max_open_handles), self._pacer)


@implementer(IRealm)
class FilesRealm:
    """Opens the signed-in profile's files; a failure (say, no source assigned)
    refuses the sign-in with its message, which the client shows."""

    def __init__(self, files, settings, pacer: Pacer | None = None):
        self._files = files
        self._settings = settings
        self._pacer = pacer  # one for every session of the daemon

    def requestAvatar(self, account, address, *interfaces):
        if IConchUser not in interfaces:
            raise NotImplementedError("only SSH users are offered")
        return as_deferred(self._avatar(account, address or ""))

    async def _avatar(self, account, address: str):
        try:
            files = await self._files.session(account, "sftp", address)
        except ApplianceError as e:
            raise AuthenticationFailed(e.message) from None
        return IConchUser, SftpUser(files, self._settings, self._pacer), lambda: None


def sftp_portal(core) -> Portal:
    return Portal(FilesRealm(core.files, core.settings.sftp, Pacer(core.reactor)), [CoreChecker(core.auth)])
