"""The FTP control connection: twisted's FTP protocol interpreter, changed where
it must be for a confined, multi-tenant server. The session holds its parts, each
an object that owns its state and answers its commands (the interpreter asks them
in turn for a command's ftp_ method), each handed only what it needs of the others:

- signin.py: admission, USER/PASS and the login grace, AUTH TLS and CCC;
- data.py: DataChannels, the data connection set-up (PASV, EPSV, PORT, EPRT, PBSZ,
  PROT), from the connection's start; Transfers, the transfers (REST, RETR, STOR,
  APPE, ABOR, ALLO) over transfer.py's data channel, from the sign-in;
- commands.py: FileCommands, the working folder and the file commands (CWD, MKD,
  RMD, DELE, RNFR/RNTO, SIZE, MDTM, MFMT), from the sign-in;
- listing.py: Listings, LIST, NLST, MLSD and MLST and their line formats, from the
  sign-in.

This module holds the connection itself, the interpreter and the informational
commands (FEAT, OPTS, HELP, SITE, STAT, QUIT, TYPE): UTF-8 on the wire
(names round-trip), lines capped, telnet IAC bytes dropped; commands run one at a
time, but the control connection keeps reading while a transfer runs (ABOR, STAT);
every reply is one line of printable text or a multi-line reply, and every core
error becomes a reply through errors.ftp_reply.
"""

from __future__ import annotations

import functools
import inspect
import math
import re
import socket
from collections import deque

from twisted.internet import defer
from twisted.internet.interfaces import ITLSTransport
from twisted.logger import Logger
from twisted.protocols import ftp

from ..tcp_send import send_now
from ..tcp_state import peer_has_closed
from .commands import ALIASES, FEATURES, FileCommands, quote_path
from .data import CLOSE_GRACE, KEEP_REST, DataChannels, Transfers
from .errors import BadArgument, ftp_reply
from .listing import MLST_FACTS, Listings, ls_line
from .signin import SignIn
from .transfer import plain_host

__all__ = ["FTPFactory", "FTPSession", "ls_line", "quote_path"]

log = Logger()

MAX_LINE = 8192  # bytes in a command line (paths are at most 4096)
MAX_QUEUED = 64  # command lines held while one runs
PRE_LOGIN = frozenset({"USER", "PASS", "QUIT", "FEAT", "OPTS", "SYST", "NOOP", "HELP", "AUTH", "PBSZ", "PROT", "CCC"})
# Telnet commands (IAC + a byte) clients put before ABOR; the urgent DM byte of a
# Synch is dropped by the kernel, which can leave a lone IAC behind.
IAC = re.compile(rb"\xff[\xf0-\xff]?")
# The session's parts (the attribute that holds each), each answering its own commands.
PARTS = {"signin": SignIn, "data": DataChannels, "files": FileCommands, "transfers": Transfers, "listings": Listings}
# Which part answers a command (the others are the session's own): each command has one.
ANSWERED_BY = {name[4:]: attr for attr, part in PARTS.items() for name in dir(part) if name.startswith("ftp_")}


@functools.cache  # one per command method: inspect.signature costs ~30 us, Signature.bind ~10 us
def _arity(cls: type, name: str) -> tuple[int, float]:
    """(fewest, most) arguments a command method takes after self."""
    params = list(inspect.signature(getattr(cls, name)).parameters.values())[1:]
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    fewest = sum(1 for p in positional if p.default is p.empty)
    most = math.inf if any(p.kind is p.VAR_POSITIONAL for p in params) else len(positional)
    return fewest, most


def printable(text: str) -> str:
    """Reply text on one line: control characters (CR, LF, ...) replaced."""
    if text.isprintable():  # nearly every reply: no new string
        return text
    return "".join(ch if ch.isprintable() else "?" for ch in text)


class FTPSession(ftp.FTP):
    """One FTP control connection. Its parts hold their own state: `signin` (SignIn)
    and `data` (DataChannels) from the connection's start; once signed in, `files`
    (FileCommands), `transfers` (Transfers) and `listings` (Listings)."""

    MAX_LENGTH = MAX_LINE
    PUBLIC_COMMANDS = sorted(PRE_LOGIN)

    # set by FTPFactory.buildProtocol
    clock = None
    masquerade: str | None = None
    transfer_timeout = 300
    admission = None  # core.signin: admit(address, protocol, drop=, end=) -> ticket, or ApplianceError
    tls = None  # the appliance's TLS context factory (core.tls), or None: no AUTH TLS
    require_tls = False  # [ftp] require_tls: no USER before AUTH TLS
    require_tls_session_reuse = True  # [ftp] require_tls_session_reuse: TLS data connections resume the control's
    login_grace = 60  # [ftp] login_grace_time: seconds to sign in before 421 and the connection closed

    def __init__(self):
        self.signin: SignIn | None = None  # from connectionMade
        self.data: DataChannels | None = None  # from connectionMade
        self.files: FileCommands | None = None  # from the sign-in
        self.transfers: Transfers | None = None  # from the sign-in
        self.listings: Listings | None = None  # from the sign-in
        self._queue: deque[bytes] = deque()
        self._busy = False
        self._draining = False
        self._lost = False
        self._control_socket = None  # set by connectionMade
        self._mlst_facts = MLST_FACTS
        self._command = ""
        self._hang_up_timer = None
        self._local: str | None = None  # the control connection's own address, once asked

    # -- connection ------------------------------------------------------------------

    def connectionMade(self):
        try:
            self.transport.setTcpNoDelay(True)  # replies are small and wait for the client
        except (AttributeError, OSError):
            pass
        # the control connection's socket (before AUTH TLS replaces getHandle): whether
        # the client is still there is asked of it when an upload ends (_client_there)
        self._control_socket = getattr(self.transport, "getHandle", lambda: None)()
        try:
            # Urgent data stays in the stream. Clients send ABOR (or the Telnet DM before
            # it) as urgent data; without this the kernel takes that byte out, and for
            # Python's ftplib, which sends "ABOR\r\n" so, it is the line's LF: the ABOR
            # never ended and the transfer ran on until its stall timeout.
            self._control_socket.setsockopt(socket.SOL_SOCKET, socket.SO_OOBINLINE, 1)
        except (AttributeError, OSError):
            pass
        peer = self._peer_host()
        self.data = DataChannels(
            self.clock,
            ports=self.passivePortRange,
            masquerade=self.masquerade,
            peer_host=peer,
            local_host=self._local_host,
            control_tls=self._control_tls,
            require_tls_session_reuse=self.require_tls_session_reuse,
        )
        self.signin = SignIn(
            self.clock,
            self.portal,
            peer_host=peer,
            admission=self.admission,
            tls=self.tls,
            require_tls=self.require_tls,
            login_grace=self.login_grace,
            reply=self.reply_code,
            close=self._close,
            start_tls=self._start_tls,
            secure_data=self.data.secure,
            signed_in=self._signed_in,
            ended=self._ended,
            can_start_tls=lambda: ITLSTransport.providedBy(self.transport),
        )
        if self.signin.admit(self.factory.welcomeMessage):
            self.setTimeout(self.timeOut)

    def _signed_in(self, shell, logout) -> bool:
        """The sign-in succeeded: the parts that work on the profile's files start
        (False, and the shell let go, if the connection was lost meanwhile)."""
        if self._lost:
            logout()
            return False
        self.shell = shell
        self.files = FileCommands(shell, lambda: self._command)
        self.transfers = Transfers(
            shell,
            self.files.resolve,
            self.data,
            self.clock,
            timeout=self.transfer_timeout,
            reply=self.reply_code,
            idle=self._watch_idle,
            client_there=self._client_there,
        )
        self.listings = Listings(
            shell,
            self.files.resolve,
            lambda: self.files.cwd,
            self.data,
            self.transfers,
            self.clock,
            facts=lambda: self._mlst_facts,
            reply=self.reply_code,
            reply_lines=self.reply_lines,
        )
        return True

    def _start_tls(self, context) -> bytes:
        """Start TLS on the control connection (AUTH TLS): what was read ahead of the
        handshake, sent in plain text, is dropped and returned."""
        ahead = self.clearLineBuffer() + b"".join(self._queue)
        self._queue.clear()
        self.transport.startTLS(context)
        return ahead

    def _close(self, code: int, text: str) -> None:
        """A last reply, then the connection closes (commands waiting are dropped)."""
        if self._lost or self.disconnected:
            return
        self._queue.clear()
        self.reply_code(code, text)
        self._hang_up()

    def _ended(self, message: str) -> None:
        """The core ends this session (say, the profile was deactivated): a transfer in
        flight is aborted (an upload is not saved), then 421 with the reason."""
        if self._lost or self.disconnected:
            return
        if self.transfers is not None:
            self.transfers.abort(message)
        self._close(421, message)

    def _watch_idle(self, on: bool) -> None:
        """The idle timeout on (no transfer runs), or off (one does: it has its own stall timer)."""
        if not on:
            self.setTimeout(None)
        elif not self._lost:
            self.setTimeout(self.timeOut)

    def _client_there(self) -> bool:
        """Whether the client is still connected. Asked of the kernel, which has the
        client's FIN or reset as soon as it comes, not of the reactor, which may
        deliver that end a turn or a few ms later (data.Transfers' upload commit)."""
        return not (self._lost or peer_has_closed(self._control_socket))

    def connectionLost(self, reason):
        self._lost = True
        self.signin.connection_lost()
        if self._hang_up_timer is not None and self._hang_up_timer.active():
            self._hang_up_timer.cancel()
        self._queue.clear()
        if self.transfers is not None:
            self.transfers.abort("The control connection was lost.")
        self.data.close()
        self.setTimeout(None)
        if self.shell is not None:
            self.shell.logout()
        self.shell = None
        self.files = self.transfers = self.listings = None

    def callLater(self, period, func):  # TimeoutMixin: the injected clock
        return self.clock.callLater(period, func)

    def timeoutConnection(self):
        self.reply_code(421, f"No command for {self.timeOut} seconds: closing the connection.")
        self._hang_up()

    def lineLengthExceeded(self, line):
        self.reply_code(500, f"Command line too long (more than {self.MAX_LENGTH} bytes): closing the connection.")
        self._queue.clear()
        self._hang_up()

    def _hang_up(self) -> None:
        """Close the control connection after what was written. Under TLS that sends a
        close_notify and waits for the client's, which a client may never send (or a
        stalled handshake never allows): drop the connection after CLOSE_GRACE."""
        self.disconnected = True
        self.transport.loseConnection()
        if self.signin.secure and self._hang_up_timer is None and not self._lost:
            self._hang_up_timer = self.clock.callLater(CLOSE_GRACE, self._drop)

    def _drop(self) -> None:
        if not self._lost:
            self.transport.abortConnection()

    def _peer_host(self) -> str:
        return plain_host(self.transport.getPeer().host)

    def _control_tls(self):
        """The control connection's OpenSSL connection (after AUTH TLS), None once it is gone."""
        return None if self._lost else self.transport.getHandle()

    def _local_host(self) -> str:
        """The control connection's own address (asked of the kernel once: it never changes)."""
        if self._local is None:
            self._local = self.transport.getHost().host
        return self._local

    # -- replies ---------------------------------------------------------------------

    def sendLine(self, line):
        if self._lost or self.transport is None:
            return
        if isinstance(line, str):
            line = line.encode("utf-8", "replace")
        send_now(self.transport, [line + self.delimiter])  # not on the reactor's next turn: tcp_send.py

    def reply_code(self, code: int, text: str) -> None:
        self.sendLine(f"{code} {printable(text)}")

    def reply_lines(self, code: int, first: str, lines: list[str], last: str) -> None:
        """A multi-line reply: 'code-first', ' line'..., 'code last'."""
        self.sendLine(f"{code}-{printable(first)}")
        for line in lines:
            self.sendLine(" " + printable(line))
        self.sendLine(f"{code} {printable(last)}")

    # -- command dispatch ---------------------------------------------------------------

    def lineReceived(self, line: bytes):
        line = IAC.sub(b"", line)
        if self.disconnected:
            return
        if self._busy:
            if len(self._queue) >= MAX_QUEUED:
                self.reply_code(421, "Too many commands sent ahead: closing the connection.")
                self._hang_up()
                return
            command = line.strip().upper()
            if command == b"ABOR" and self.transfers is not None:
                self.transfers.client_abort()
            elif command == b"STAT" and self.transfers is not None and self.transfers.running and not self._queue:
                # RFC 959: STAT during a transfer is answered at once, with its state
                self._reply_result(self.ftp_STAT())
                return
            self._queue.append(line)
            if not self._busy:  # the command ended meanwhile (ABOR's cancel can end it at once)
                self._drain()
            return
        self._run(line)
        self._drain()

    def _drain(self) -> None:
        if self._draining:
            return
        self._draining = True
        try:
            while self._queue and not self._busy and not self.disconnected and not self._lost:
                self._run(self._queue.popleft())
        finally:
            self._draining = False

    def _run(self, line: bytes) -> None:
        self.resetTimeout()
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            self.reply_code(501, "Commands must be UTF-8 text.")
            return
        cmd, space, arg = text.partition(" ")
        cmd = cmd.strip().upper()
        self._command = cmd
        self._busy = True
        params = (arg,) if space else ()
        d = defer.maybeDeferred(self.processCommand, cmd, *params)
        d.addCallbacks(self._reply_result, self._reply_failure)
        d.addErrback(lambda f: log.failure("replying to an FTP command", f))
        d.addBoth(self._command_done)

    @property
    def busy(self) -> bool:
        """A command is running (those that arrive meanwhile wait in order)."""
        return self._busy

    def _command_done(self, _):
        self._busy = False
        if not self._lost and not self.disconnected:
            self._drain()

    def _reply_result(self, result) -> None:
        if result is None:
            return
        if isinstance(result, tuple) and result and isinstance(result[0], int):
            self.reply_code(result[0], result[1])
        elif isinstance(result, tuple):
            self.reply(*result)
        else:
            self.reply(result)

    def _reply_failure(self, failure) -> None:
        if failure.check(ftp.FTPCmdError):
            self.sendLine(printable(failure.value.response()))  # twisted's echo the argument as sent
        elif failure.check(BadArgument):
            self.reply_code(501, str(failure.value))
        else:
            self.reply_code(*ftp_reply(failure))

    def processCommand(self, cmd, *params):
        cmd = ALIASES.get(cmd, cmd)
        if self.files is not None:
            if cmd not in KEEP_REST:
                self.transfers.forget_rest()
            if cmd != "RNTO":
                self.files.forget_rename()  # RNFR not followed by RNTO
        if cmd in PRE_LOGIN:
            pass
        elif not self.signin.signed_in:
            return 530, "Please sign in with USER and PASS."
        owner = self._owner(cmd) if cmd.isalpha() else None
        if owner is None:
            return 502, f"Command {cmd[:20]!r} is not implemented."
        method = getattr(owner, "ftp_" + cmd)
        fewest, most = _arity(type(owner), "ftp_" + cmd)
        if not fewest <= len(params) <= most:
            return 501, f"{cmd}: wrong number of arguments." if params else f"{cmd} needs an argument."
        return method(*params)

    def _owner(self, cmd: str):
        """Whose ftp_<cmd> answers `cmd`: its part (ANSWERED_BY), else the session itself
        (the informational commands, and twisted's SYST, NOOP, MODE, STRU); None if none."""
        attr = ANSWERED_BY.get(cmd)
        owner = self if attr is None else getattr(self, attr)
        return owner if owner is not None and hasattr(owner, "ftp_" + cmd) else None

    # -- information and the end -----------------------------------------------------------

    def ftp_TYPE(self, code):
        # twisted's answers an empty type with a reply it cannot format (and so none at all)
        if not code:
            return 501, "TYPE needs an argument: A (text) or I (binary)."
        return super().ftp_TYPE(code)

    def ftp_FEAT(self):
        self.reply_lines(211, "Features:", list(FEATURES), "End")

    def ftp_OPTS(self, option=""):
        name, _, value = option.partition(" ")
        name = name.upper()
        if name in ("UTF8", "UTF-8"):
            if value.strip().upper() in ("ON", ""):
                return 200, "UTF-8 is always on."
            return 504, "UTF-8 cannot be turned off."
        if name == "MLST":
            wanted = [f for f in value.lower().split(";") if f in MLST_FACTS]
            self._mlst_facts = tuple(wanted)
            return 200, "MLST OPTS " + "".join(f + ";" for f in wanted)
        return 501, f"Option {name[:20]!r} is not supported."

    def ftp_HELP(self, arg=""):
        # what is answered: the ftp_ methods of the parts and their X aliases, less SITE
        # (whose every command is refused, 502, as a command not in HELP is)
        answered = {name[4:] for part in (*PARTS.values(), type(self)) for name in dir(part) if name.startswith("ftp_")}
        commands = sorted(answered - {"SITE"} | set(ALIASES))
        self.reply_lines(214, "Commands recognised:", [" ".join(commands)], "Help OK.")

    def ftp_SITE(self, arg=""):
        # File modes are the appliance's business (SITE CHMOD and friends are not offered).
        return 502, "SITE commands are not supported."

    def ftp_STAT(self, arg=""):
        if arg:
            return 502, "STAT with a path is not supported: use LIST or MLST."
        who = self.shell.session.account.profile.username
        running = f"a {self._command} is" if self.transfers.running else "no transfer"
        return 211, f"Signed in as {who}; folder {self.files.cwd}; {running} running."

    async def ftp_QUIT(self):
        ended = self.shell.end() if self.shell is not None else None
        if ended is not None:
            await ended  # a client that signs off finds its downloads' rows in the log
        self.reply_code(221, "Goodbye.")
        self._hang_up()


class FTPFactory(ftp.FTPFactory):
    """Builds FTPSession protocols configured from the settings."""

    protocol = FTPSession
    noisy = False  # "Starting factory <...>": the service says "FTP listening on ..."
    allowAnonymous = False
    welcomeMessage = "File transfer appliance ready."
    connectionLimit = 1000

    def __init__(
        self,
        portal,
        reactor,
        *,
        passive_ports: range,
        idle_timeout: int,
        transfer_timeout: int,
        masquerade: str | None,
        admission=None,
        tls=None,
        require_tls: bool = False,
        require_tls_session_reuse: bool = True,
        login_grace: int = 60,
    ):
        super().__init__(portal)
        self.login_grace = login_grace
        self.admission = admission
        self.reactor = reactor
        self.passivePortRange = passive_ports
        self.timeOut = idle_timeout
        self.transfer_timeout = transfer_timeout
        self.masquerade = masquerade
        self.tls = tls
        self.require_tls = require_tls
        self.require_tls_session_reuse = require_tls_session_reuse

    def buildProtocol(self, addr):
        wrapper = super().buildProtocol(addr)
        if wrapper is not None and isinstance(wrapper.wrappedProtocol, FTPSession):
            session = wrapper.wrappedProtocol
            session.clock = self.reactor
            session.transfer_timeout = self.transfer_timeout
            session.masquerade = self.masquerade
            session.admission = self.admission
            session.tls = self.tls
            session.require_tls = self.require_tls
            session.require_tls_session_reuse = self.require_tls_session_reuse
            session.login_grace = self.login_grace
        return wrapper
