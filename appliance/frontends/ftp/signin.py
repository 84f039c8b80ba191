"""Sign-in and TLS on the control connection: admission as the client connects,
the access control commands (RFC 959 4.1.1: USER, PASS), the login grace, and
explicit FTPS on the control connection (RFC 4217: AUTH, CCC; data.py has PBSZ and PROT).

- admission: a banned address is refused as it connects (no password check), and
  the core's connection limits hand out a ticket (or refuse);
- sign-in goes through the portal with the peer's address, no anonymous access,
  and the core's bound on refused sign-ins per connection (the ticket's); a client
  that never signs in is closed after [ftp] login_grace_time;
- AUTH TLS starts TLS on this connection with a context of its own (core.tls), which
  its data connections use under PROT P (data.DataChannels); CCC is refused, and [ftp]
  require_tls refuses USER before AUTH TLS.
"""

from __future__ import annotations

import socket

from twisted.internet import defer
from twisted.internet.interfaces import IOpenSSLContextFactory, ITLSTransport
from twisted.logger import Logger
from zope.interface import implementer

from ...core.auth import TOO_MANY_ATTEMPTS
from ...errors import ApplianceError, Unavailable
from ..credentials import PeerCredentials
from .shell import IFilesShell

log = Logger()

# AUTH TLS (RFC 4217) and its aliases; SSL and TLS-P (older drafts) imply PROT P.
AUTH_MECHANISMS = {"TLS": "C", "TLS-C": "C", "SSL": "P", "TLS-P": "P"}
TLS_REQUIRED = "This server requires FTPS: send AUTH TLS before USER (plain-text FTP passwords are refused)."


@implementer(IOpenSSLContextFactory)
class PinnedContext:
    """The TLS context of a control connection and its data connections (one of their
    own, core.tls.ReloadableTLS.isolated_context), kept even if the certificate is
    reloaded meanwhile: sessions resume only within a context."""

    def __init__(self, context):
        self._context = context

    def getContext(self):
        return self._context


class SignIn:
    """Admission, USER/PASS and FTPS for FTPSession.

    State (set in FTPSession.__init__): `_ticket` (the core's connection ticket),
    `_grace` (the login grace timer), `_username` (USER's) and
    `_tls` (the PinnedContext once AUTH TLS ran, handed to the data connections).
    """

    # -- admission ---------------------------------------------------------------------

    def connectionMade(self):
        self.state = self.UNAUTH
        try:
            self.transport.setTcpNoDelay(True)  # replies are small and wait for the client
        except (AttributeError, OSError):
            pass
        # the control connection's socket (before AUTH TLS replaces getHandle): whether
        # the client is still there is asked of it when an upload ends (data.py)
        self._control_socket = getattr(self.transport, "getHandle", lambda: None)()
        try:
            # Urgent data stays in the stream. Clients send ABOR (or the Telnet DM before
            # it) as urgent data; without this the kernel takes that byte out, and for
            # Python's ftplib, which sends "ABOR\r\n" so, it is the line's LF: the ABOR
            # never ended and the transfer ran on until its stall timeout.
            self._control_socket.setsockopt(socket.SOL_SOCKET, socket.SO_OOBINLINE, 1)
        except (AttributeError, OSError):
            pass
        address = self._peer_host()
        # A banned address costs no password check: refused as it connects (core.signin.admit).
        refusal = None
        if self.admission is not None:
            try:
                self._ticket = self.admission.admit(address, "ftp", drop=self._evicted, end=self._ended)
            except ApplianceError as e:
                refusal = str(e)
        if refusal is not None:
            self.reply_code(421, refusal)
            self._hang_up()
            return
        self.setTimeout(self.timeOut)
        # the idle timeout restarts with every command: a client that never signs in
        # (USER after USER, NOOP) would otherwise hold a sign-in slot for ever
        self._grace = self.clock.callLater(self.login_grace, self._grace_over)
        self.reply_code(220, self.factory.welcomeMessage)

    def _grace_over(self) -> None:
        self._grace = None
        if self._lost or self.disconnected or self.state == self.AUTHED:
            return
        self._queue.clear()
        self.reply_code(
            421, f"Not signed in within {self.login_grace} seconds: closing the connection. Connect again and sign in."
        )
        self._hang_up()

    def _end_grace(self) -> None:
        if self._grace is not None and self._grace.active():
            self._grace.cancel()
        self._grace = None

    def _evicted(self) -> None:
        """A full sign-in pool makes room for a newcomer from a quieter address."""
        if not self._lost and not self.disconnected:
            self.reply_code(421, "Too many connections are signing in from your address; try again shortly.")
            self._hang_up()

    def _ended(self, message: str) -> None:
        """The core ends this session (say, the profile was deactivated): a transfer in
        flight is aborted (an upload is not saved), then 421 with the reason."""
        if self._lost or self.disconnected:
            return
        self._queue.clear()
        if self.transfers is not None:
            self.transfers.abort(message)
        self.reply_code(421, message)
        self._hang_up()

    # -- sign-in (RFC 959 4.1.1) -----------------------------------------------------------

    def ftp_USER(self, username):
        if self.state == self.AUTHED:
            return 503, "Already signed in; open a new connection to sign in as someone else."
        if not username.strip():
            return 501, "USER needs a username."
        if self.require_tls and self._tls is None:
            return 530, TLS_REQUIRED
        self._username = username
        self.state = self.INAUTH
        return 331, f"Password required for {username}."

    def ftp_PASS(self, password=""):
        if self.state == self.AUTHED:
            return 503, "Already signed in."
        if self.state != self.INAUTH:
            return 503, "Send USER first."
        return defer.Deferred.fromCoroutine(self._login(self._username, password))

    async def _login(self, username: str, password: str):
        self.state = self.UNAUTH
        address = self._peer_host()
        try:
            credentials = PeerCredentials(username, password, address, self._tls is not None, self._ticket)
            _interface, shell, logout = await self.portal.login(credentials, address, IFilesShell)
        except ApplianceError as e:
            if isinstance(e, Unavailable):  # not the password's fault (a full data disk): say so, not 530
                self.reply_code(421, str(e))
                self._hang_up()
                return None
            if self._ticket is not None and self._ticket.sign_in_refused() == 0:
                self.reply_code(530, str(e))
                self.reply_code(421, TOO_MANY_ATTEMPTS)
                self._hang_up()
                return None
            return 530, str(e)
        if self._lost:
            logout()
            return None
        self.shell = shell
        self.logout = logout
        self._signed_in(shell)
        self.state = self.AUTHED
        self._end_grace()
        return 230, f"Signed in as {username}."

    # -- FTPS (RFC 4217) ---------------------------------------------------------------------

    def ftp_AUTH(self, mechanism=""):
        name = mechanism.strip().upper()
        if self._tls is not None:
            return 503, "TLS is already on for this connection."
        if self.state == self.AUTHED:
            return 503, "AUTH must come before signing in: open a new connection and send AUTH TLS first."
        if name not in AUTH_MECHANISMS:
            return 504, f"AUTH {name[:20]} is not supported: use AUTH TLS."
        if self.tls is None or not ITLSTransport.providedBy(self.transport):
            return 502, "FTPS is not available on this listener: use SFTP."
        context = PinnedContext(self.tls.isolated_context())
        self.reply_code(234, f"AUTH {name} accepted: start the TLS handshake.")
        # Whatever came after the AUTH line was sent in plain text, before the
        # handshake: a man in the middle could have put it there (as in the STARTTLS
        # injection attacks). Commands after AUTH are read only from inside TLS.
        ahead = self.clearLineBuffer() + b"".join(self._queue)
        self._queue.clear()
        if ahead:
            log.warn(
                "FTP: dropped {count} bytes sent in plain text after AUTH {name} from {peer}",
                count=len(ahead),
                name=name,
                peer=self._peer_host(),
            )
        self.transport.startTLS(context)
        self._tls = context
        self.data.secure(context, AUTH_MECHANISMS[name])
        if self.state == self.INAUTH:
            self.state = self.UNAUTH  # a USER sent in plain text is forgotten: send it again
        return None

    def ftp_CCC(self):
        if self._tls is None:
            return 503, "CCC: this connection is not encrypted."
        return 534, "CCC refused: the control connection stays encrypted."
