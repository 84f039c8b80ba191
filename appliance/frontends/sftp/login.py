"""Sign-in for SFTP and what a signed-in connection may do.

The shared cred adapter (frontends/credentials.py) signs in through core.signin;
the avatar it is wrapped in here has one channel only: a session that serves the
`sftp` subsystem and legacy scp's `scp -t` / `scp -f` (scp.py, nothing executed),
and refuses shell, any other exec and pty cleanly.
"""

from __future__ import annotations

import functools
import struct

from twisted.conch import avatar
from twisted.conch.error import ConchError
from twisted.conch.interfaces import IConchUser
from twisted.conch.ssh import session
from twisted.conch.ssh.common import getNS
from twisted.conch.ssh.connection import EXTENDED_DATA_STDERR, OPEN_ADMINISTRATIVELY_PROHIBITED
from twisted.cred.portal import Portal
from twisted.logger import Logger

from ...core.files import FileSession
from ..credentials import core_portal
from .scp import ScpProtocol, scp_request
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
        command, _ = getNS(data)
        scp = self.avatar.scp(command) if self.client is None else None
        if scp is None:
            self._refuse("This server offers SFTP only: commands cannot be run.")
            return 0
        # wired as conch wires a subsystem: the channel's data to the protocol and back
        self.client = session.SSHSessionProcessProtocol(self)
        scp.makeConnection(self.client)
        self.client.makeConnection(session.wrapProtocol(scp))
        return 1

    def request_pty_req(self, data):
        return 0

    def request_env(self, data):
        return 0

    exit_after = None  # set by scp: a Deferred of what the exit waits for, or None
    exit_status = 0  # scp's: 1 when a file failed, as from OpenSSH's scp
    _exited = False

    def eofReceived(self):
        """The client is done (scp waits for an exit status, as from OpenSSH's sftp-server)."""
        if self.client is not None:
            self.client.transport.loseConnection()
        self.when_drained(self._exit)

    def exited(self, status: int) -> None:
        """The exec'd command (scp) is done: `status` once its output is sent, then the close."""
        self.exit_status = status
        self.when_drained(self._exit)

    def _exit(self) -> None:
        """The exit status after the last reply and the session's last audit rows (the
        downloads' rows, written after their replies), then the close: a client that
        waits for the end of the session (OpenSSH's) finds every row written."""
        waiting = self.exit_after() if self.exit_after is not None else None
        if waiting is None:
            waiting = self.avatar.files.end()
        if waiting is not None:
            waiting.addBoth(lambda _: self._exit())
            return
        if self._exited:  # the client's EOF and scp's end both lead here
            return
        self._exited = True
        self.conn.sendRequest(self, b"exit-status", struct.pack(">L", self.exit_status))
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

    def scp(self, command: bytes) -> ScpProtocol | None:
        """Legacy scp for an exec'd `scp -t` or `scp -f` command line; None for any other."""
        request = scp_request(command)
        return None if request is None else ScpProtocol(self.files, request, self._pacer)


def sftp_portal(core) -> Portal:
    """The shared cred adapter over core.signin; the avatar is an SftpUser over the files,
    and the connection's end ends the files session (the SFTP server closes its handles)."""
    settings, pacer = core.settings.sftp, Pacer(core.reactor)  # one pacer for every session of the daemon
    return core_portal(
        core.signin, "sftp", IConchUser, lambda live: (SftpUser(live.files, settings, pacer), live.files.end)
    )
