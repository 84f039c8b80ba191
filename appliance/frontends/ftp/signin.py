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

from collections.abc import Callable

from twisted.internet import defer
from twisted.internet.interfaces import IOpenSSLContextFactory
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
    """The sign-in of one FTP control connection: admission as it connects, USER and
    PASS with the core's bound on refused sign-ins (the ticket's), the login grace,
    and TLS on the control connection (AUTH TLS, CCC).

    It owns the core's connection ticket, the grace timer, USER's name until PASS,
    whether the client signed in, and the connection's TLS context. What it does to
    the connection is handed in as calls: `reply` (a reply line), `close` (a last
    reply, then the connection closes; nothing if it is closed already),
    `can_start_tls` (whether the connection's transport can), `start_tls` (start TLS
    on the connection with a context, dropping what was read ahead; the bytes
    dropped), `secure_data` (the context and PROT level for data connections),
    `signed_in` (the profile's shell and logout: the session's parts start; False if
    the connection is gone meanwhile) and `ended` (the core ends the session).
    """

    def __init__(
        self,
        clock,
        portal,
        *,
        peer_host: str,
        admission,
        tls,
        require_tls: bool,
        login_grace: float,
        reply: Callable[[int, str], None],
        close: Callable[[int, str], None],
        start_tls: Callable[[PinnedContext], bytes],
        secure_data: Callable[[PinnedContext, str], None],
        signed_in: Callable[[object, Callable[[], None]], bool],
        ended: Callable[[str], None],
        can_start_tls: Callable[[], bool],
    ):
        self._clock = clock
        self._portal = portal
        self._peer = peer_host
        self._admission = admission  # core.signin: admit(address, protocol, drop=, end=) -> ticket, or ApplianceError
        self._tls_source = tls  # the appliance's TLS context factory (core.tls), or None: no AUTH TLS
        self._require_tls = require_tls
        self._login_grace = login_grace
        self._reply = reply
        self._close = close
        self._start_tls = start_tls
        self._secure_data = secure_data
        self._on_signed_in = signed_in
        self._ended = ended
        self._can_start_tls = can_start_tls
        self._ticket = None
        self._grace = None  # until the sign-in: the connection closes when it runs out
        self._username: str | None = None  # USER's, until PASS
        self._signed_in = False
        self._tls: PinnedContext | None = None  # set by AUTH TLS

    @property
    def signed_in(self) -> bool:
        return self._signed_in

    @property
    def secure(self) -> bool:
        """The control connection is in TLS (AUTH TLS ran)."""
        return self._tls is not None

    # -- admission ---------------------------------------------------------------------

    def admit(self, welcome: str) -> bool:
        """The client connected: refused (421, False) if the core says so, else welcomed
        (220) with the login grace started."""
        # A banned address costs no password check: refused as it connects (core.signin.admit).
        if self._admission is not None:
            try:
                self._ticket = self._admission.admit(self._peer, "ftp", drop=self._evicted, end=self._ended)
            except ApplianceError as e:
                self._close(421, str(e))
                return False
        # the idle timeout restarts with every command: a client that never signs in
        # (USER after USER, NOOP) would otherwise hold a sign-in slot for ever
        self._grace = self._clock.callLater(self._login_grace, self._grace_over)
        self._reply(220, welcome)
        return True

    def connection_lost(self) -> None:
        self._end_grace()
        if self._ticket is not None:
            self._ticket.close()

    def _grace_over(self) -> None:
        self._grace = None
        if self._signed_in:
            return
        self._close(
            421, f"Not signed in within {self._login_grace} seconds: closing the connection. Connect again and sign in."
        )

    def _end_grace(self) -> None:
        if self._grace is not None and self._grace.active():
            self._grace.cancel()
        self._grace = None

    def _evicted(self) -> None:
        """A full sign-in pool makes room for a newcomer from a quieter address."""
        self._close(421, "Too many connections are signing in from your address; try again shortly.")

    # -- sign-in (RFC 959 4.1.1) -----------------------------------------------------------

    def ftp_USER(self, username):
        if self._signed_in:
            return 503, "Already signed in; open a new connection to sign in as someone else."
        if not username.strip():
            return 501, "USER needs a username."
        if self._require_tls and self._tls is None:
            return 530, TLS_REQUIRED
        self._username = username
        return 331, f"Password required for {username}."

    def ftp_PASS(self, password=""):
        if self._signed_in:
            return 503, "Already signed in."
        if self._username is None:
            return 503, "Send USER first."
        username, self._username = self._username, None
        return defer.Deferred.fromCoroutine(self._login(username, password))

    async def _login(self, username: str, password: str):
        address = self._peer
        try:
            credentials = PeerCredentials(username, password, address, self._tls is not None, self._ticket)
            _interface, shell, logout = await self._portal.login(credentials, address, IFilesShell)
        except ApplianceError as e:
            if isinstance(e, Unavailable):  # not the password's fault (a full data disk): say so, not 530
                self._close(421, str(e))
                return None
            if self._ticket is not None and self._ticket.sign_in_refused() == 0:
                self._reply(530, str(e))
                self._close(421, TOO_MANY_ATTEMPTS)
                return None
            return 530, str(e)
        if not self._on_signed_in(shell, logout):
            return None
        self._signed_in = True
        self._end_grace()
        return 230, f"Signed in as {username}."

    # -- FTPS (RFC 4217) ---------------------------------------------------------------------

    def ftp_AUTH(self, mechanism=""):
        name = mechanism.strip().upper()
        if self._tls is not None:
            return 503, "TLS is already on for this connection."
        if self._signed_in:
            return 503, "AUTH must come before signing in: open a new connection and send AUTH TLS first."
        if name not in AUTH_MECHANISMS:
            return 504, f"AUTH {name[:20]} is not supported: use AUTH TLS."
        if self._tls_source is None or not self._can_start_tls():
            return 502, "FTPS is not available on this listener: use SFTP."
        context = PinnedContext(self._tls_source.isolated_context())
        self._reply(234, f"AUTH {name} accepted: start the TLS handshake.")
        # Whatever came after the AUTH line was sent in plain text, before the
        # handshake: a man in the middle could have put it there (as in the STARTTLS
        # injection attacks). Commands after AUTH are read only from inside TLS.
        ahead = self._start_tls(context)
        if ahead:
            log.warn(
                "FTP: dropped {count} bytes sent in plain text after AUTH {name} from {peer}",
                count=len(ahead),
                name=name,
                peer=self._peer,
            )
        self._tls = context
        self._secure_data(context, AUTH_MECHANISMS[name])
        self._username = None  # a USER sent in plain text is forgotten: send it again
        return None

    def ftp_CCC(self):
        if self._tls is None:
            return 503, "CCC: this connection is not encrypted."
        return 534, "CCC refused: the control connection stays encrypted."
