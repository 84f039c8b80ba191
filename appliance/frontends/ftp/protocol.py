"""The FTP control connection: twisted's FTP protocol interpreter, changed where
it must be for a confined, multi-tenant server.

What differs from twisted.protocols.ftp.FTP:
- UTF-8 on the wire (names round-trip), lines capped, telnet IAC bytes dropped;
- commands run one at a time, but the control connection keeps reading while a
  transfer runs, so ABOR works and a lost control connection is noticed at once
  (an upload whose client died is never committed);
- sign-in through the portal with the peer's address, no anonymous access, and
  a bounded number of failed attempts per connection;
- explicit FTPS (RFC 4217): AUTH TLS starts TLS on this connection with the
  appliance's context, PBSZ/PROT choose TLS for data connections, CCC is refused,
  and [ftp] require_tls refuses USER before AUTH TLS;
- passive ports from the configured range, on the control connection's local
  address, accepting only the control connection's peer; PORT/EPRT only to the
  client's own address and unprivileged ports;
- every path is joined with the working folder here and normalised by the core;
  every core error becomes a reply through errors.ftp_reply.
"""

from __future__ import annotations

import calendar
import contextlib
import fnmatch
import inspect
import ipaddress
import random
import re
import socket
import stat
import time
from collections import deque

from twisted.internet import defer, error
from twisted.internet.interfaces import IConnector, IListeningPort, IOpenSSLContextFactory, ITLSTransport
from twisted.logger import Logger
from twisted.protocols import ftp
from zope.interface import implementer

from ...errors import ApplianceError, NotFound, Unavailable
from ...threads import spawn
from ..credentials import PeerCredentials
from .errors import DataConnectionFailed, TransferAborted, ftp_reply
from .transfer import (
    DataChannelFactory,
    MemoryReader,
    ReadFile,
    Transfer,
    broken_because,
    closed_cleanly,
    describe,
    plain_host,
)

log = Logger()

MAX_LINE = 8192  # bytes in a command line (paths are at most 4096)
MAX_QUEUED = 64  # command lines held while one runs
MAX_LOGIN_FAILURES = 5  # per connection, then it is closed
DATA_CONNECT_TIMEOUT = 30  # seconds for a data connection to be made
# Seconds between an upload's clean EOF and its commit. A killed client closes both
# connections, but its kernel may close the control one a few ms after the data one
# (0.3-3 ms seen on loopback), so a few reactor turns are not enough. 20 ms: about 7
# times the widest gap seen, and 1/6 of a 256 MiB upload's time on loopback (50 ms was
# a third of it once uploads went by splice).
COMMIT_GRACE = 0.02
FAILURE_LINGER = 0.25  # seconds between a failed upload's reply and resetting its data connection
CLOSE_GRACE = 5  # seconds a TLS client gets to answer our close_notify before the connection is dropped
PRE_LOGIN = frozenset({"USER", "PASS", "QUIT", "FEAT", "OPTS", "SYST", "NOOP", "HELP", "AUTH", "PBSZ", "PROT", "CCC"})
# AUTH TLS (RFC 4217) and its aliases; SSL and TLS-P (older drafts) imply PROT P.
AUTH_MECHANISMS = {"TLS": "C", "TLS-C": "C", "SSL": "P", "TLS-P": "P"}
TLS_REQUIRED = "This server requires FTPS: send AUTH TLS before USER (plain-text FTP passwords are refused)."
GLOB = re.compile(r"[*?\[]")
# Telnet commands (IAC + a byte) clients put before ABOR; the urgent DM byte of a
# Synch is dropped by the kernel, which can leave a lone IAC behind.
IAC = re.compile(rb"\xff[\xf0-\xff]?")
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
SIX_MONTHS = 182 * 24 * 3600
FEATURES = (
    "AUTH TLS",
    "EPRT",
    "EPSV",
    "MDTM",
    "MFMT",
    "MLST type*;size*;modify*;perm*;",
    "PASV",
    "PBSZ",
    "PROT",
    "REST STREAM",
    "SIZE",
    "TVFS",
    "UTF8",
)
MLST_FACTS = ("type", "size", "modify", "perm")
# RFC 3659 perm fact letters, each with the profile permission it stands for.
PERM_LETTERS = {
    "dir": (
        ("e", "list"),
        ("l", "list"),
        ("c", "upload"),
        ("m", "mkdir"),
        ("d", "delete"),
        ("f", "rename"),
        ("p", "delete"),
    ),
    "file": (("r", "download"), ("w", "overwrite"), ("a", "overwrite"), ("d", "delete"), ("f", "rename")),
}
ALIASES = {"XCWD": "CWD", "XCUP": "CDUP", "XPWD": "PWD", "XMKD": "MKD", "XRMD": "RMD"}
# A REST holds for the transfer right after it; only these may come between (clients
# set up the data connection before or after REST). Any other command forgets it.
KEEP_REST = frozenset("REST RETR STOR APPE PASV EPSV PORT EPRT TYPE MODE STRU NOOP ALLO PBSZ PROT".split())


def quote_path(path: str) -> str:
    """A path inside a 257 reply: in double quotes, quotes doubled (RFC 959)."""
    return '"' + path.replace('"', '""') + '"'


def printable(text: str) -> str:
    """Reply text on one line: control characters (CR, LF, ...) replaced."""
    return "".join(ch if ch.isprintable() else "?" for ch in text)


def wire_name(name: str) -> bytes:
    # Names the disk holds in another encoding were decoded with surrogateescape: send their bytes.
    return name.encode("utf-8", "surrogateescape")


def mdtm(seconds: float) -> str:
    return time.strftime("%Y%m%d%H%M%S", time.gmtime(seconds))


def ls_line(name: str, kind: str, size: int, mode: int, mtime: float, now: float) -> bytes:
    """One `ls -l` line."""
    if kind == "link":
        mode = stat.S_IFLNK | 0o777
    t = time.gmtime(mtime)
    when = f"{t.tm_hour:02d}:{t.tm_min:02d}" if abs(now - mtime) < SIX_MONTHS else f"{t.tm_year:5d}"
    head = f"{stat.filemode(mode)}   1 ftp      ftp      {size:>13d} {MONTHS[t.tm_mon - 1]} {t.tm_mday:2d} {when} "
    return head.encode("ascii") + wire_name(name)


def mlst_facts(name_kind: str, size: int, mtime: float, perms: frozenset[str], facts) -> str:
    """The facts part of an MLSD/MLST line (RFC 3659), ending with ';'."""
    out = []
    if "type" in facts:
        out.append("type=" + {"dir": "dir", "file": "file", "link": "OS.unix=slink"}.get(name_kind, "OS.unix=other"))
    if "size" in facts and name_kind == "file":
        out.append(f"size={size}")
    if "modify" in facts:
        out.append("modify=" + mdtm(mtime))
    if "perm" in facts:
        letters = PERM_LETTERS.get(name_kind, ())
        out.append("perm=" + "".join(letter for letter, need in letters if need in perms))
    return "".join(fact + ";" for fact in out)


def _stop_listening(port) -> None:
    """Close a passive port, unless it is closed or closing already."""
    if getattr(port, "connected", True) and not getattr(port, "disconnecting", False):
        spawn(defer.maybeDeferred(port.stopListening), "closing a passive FTP port")


class BadArgument(Exception):
    """A malformed argument: 501 with this message."""


@implementer(IOpenSSLContextFactory)
class PinnedContext:
    """One TLS context for a control connection and its data connections, even if
    the certificate is reloaded meanwhile: sessions resume only within a context."""

    def __init__(self, context):
        self._context = context

    def getContext(self):
        return self._context


class FTPSession(ftp.FTP):
    """One FTP control connection."""

    _encoding = "utf-8"
    MAX_LENGTH = MAX_LINE
    PUBLIC_COMMANDS = sorted(PRE_LOGIN)

    # set by FTPFactory.buildProtocol
    clock = None
    masquerade: str | None = None
    transfer_timeout = 300
    banned = None  # address -> why it is refused now, or None (core.auth.banned)
    connections = None  # core.connections: limits per address and while signing in
    tls = None  # the appliance's TLS context factory (core.tls), or None: no AUTH TLS
    require_tls = False  # [ftp] require_tls: no USER before AUTH TLS
    login_grace = 60  # [ftp] login_grace_time: seconds to sign in before 421 and the connection closed

    def __init__(self):
        self.cwd = "/"
        self._queue: deque[bytes] = deque()
        self._busy = False
        self._draining = False
        self._lost = False
        self._rest = 0
        self._rename_from: str | None = None
        self._transfer: Transfer | None = None
        self._aborted = False
        self._login_failures = 0
        self._mlst_facts = MLST_FACTS
        self._command = ""
        self._ticket = None
        self._tls: PinnedContext | None = None  # set by AUTH TLS
        self._protection = "C"  # PROT: C (clear) or P (TLS) data connections
        self._hang_up_timer = None
        self._grace = None  # until the sign-in: the connection closes when it runs out

    # -- connection ------------------------------------------------------------------

    def connectionMade(self):
        self.state = self.UNAUTH
        try:
            self.transport.setTcpNoDelay(True)  # replies are small and wait for the client
        except (AttributeError, OSError):
            pass
        try:
            # Urgent data stays in the stream. Clients send ABOR (or the Telnet DM before
            # it) as urgent data; without this the kernel takes that byte out, and for
            # Python's ftplib, which sends "ABOR\r\n" so, it is the line's LF: the ABOR
            # never ended and the transfer ran on until its stall timeout.
            self.transport.getHandle().setsockopt(socket.SOL_SOCKET, socket.SO_OOBINLINE, 1)
        except (AttributeError, OSError):
            pass
        address = self._peer_host()
        # A banned address costs no password check: refused as it connects.
        refusal = self.banned(address) if self.banned is not None else None
        if refusal is None and self.connections is not None:
            try:
                self._ticket = self.connections.open(address, "ftp", drop=self._evicted, end=self._ended)
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

    def connectionLost(self, reason):
        self._lost = True
        self._end_grace()
        if self._hang_up_timer is not None and self._hang_up_timer.active():
            self._hang_up_timer.cancel()
        if self._ticket is not None:
            self._ticket.close()
        self._queue.clear()
        self._abort_transfer("The control connection was lost.")
        self._reset_data()
        self.setTimeout(None)
        if self.shell is not None:
            self.shell.logout()
        self.shell = None
        self._epsvAll = False

    def callLater(self, period, func):  # TimeoutMixin: the injected clock
        return self.clock.callLater(period, func)

    def timeoutConnection(self):
        self.reply_code(421, f"No command for {self.timeOut} seconds: closing the connection.")
        self._hang_up()

    def _grace_over(self) -> None:
        self._grace = None
        if self._lost or self.disconnected or self.state in (self.AUTHED, self.RENAMING):
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

    def lineLengthExceeded(self, line):
        self.reply_code(500, f"Command line too long (more than {self.MAX_LENGTH} bytes): closing the connection.")
        self._queue.clear()
        self._hang_up()

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
        self._abort_transfer(message)
        self.reply_code(421, message)
        self._hang_up()

    def _hang_up(self) -> None:
        """Close the control connection after what was written. Under TLS that sends a
        close_notify and waits for the client's, which a client may never send (or a
        stalled handshake never allows): drop the connection after CLOSE_GRACE."""
        self.disconnected = True
        self.transport.loseConnection()
        if self._tls is not None and self._hang_up_timer is None and not self._lost:
            self._hang_up_timer = self.clock.callLater(CLOSE_GRACE, self._drop)

    def _drop(self) -> None:
        if not self._lost:
            self.transport.abortConnection()

    def _peer_host(self) -> str:
        return plain_host(self.transport.getPeer().host)

    def _local_host(self) -> str:
        return self.transport.getHost().host

    # -- replies ---------------------------------------------------------------------

    def sendLine(self, line):
        if self._lost or self.transport is None:
            return
        if isinstance(line, str):
            line = line.encode("utf-8", "replace")
        self.transport.write(line + self.delimiter)

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
            if command == b"ABOR":
                self._aborted = self._abort_transfer("Transfer aborted by the client.") or self._aborted
            elif command == b"STAT" and self._transfer is not None and not self._queue:
                # RFC 959: STAT during a transfer is answered at once, with its state
                self._reply_result(self.ftp_STAT())
                return
            self._queue.append(line)
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
        d = defer.maybeDeferred(self.processCommand, cmd, *((arg,) if space else ()))
        d.addCallbacks(self._reply_result, self._reply_failure)
        d.addErrback(lambda f: log.failure("replying to an FTP command", f))
        d.addBoth(self._command_done)

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
        if cmd not in KEEP_REST:
            self._rest = 0
        if self.state == self.RENAMING and cmd != "RNTO":
            self.state = self.AUTHED  # RNFR not followed by RNTO: forget it
            self._rename_from = None
        if cmd in PRE_LOGIN:
            pass
        elif self.state in (self.UNAUTH, self.INAUTH):
            return 530, "Please sign in with USER and PASS."
        method = getattr(self, "ftp_" + cmd, None)
        if method is None or not cmd.isalpha():
            return 502, f"Command {cmd[:20]!r} is not implemented."
        try:
            inspect.signature(method).bind(*params)
        except TypeError:
            return 501, f"{cmd}: wrong number of arguments." if params else f"{cmd} needs an argument."
        return method(*params)

    # -- sign-in ---------------------------------------------------------------------------

    def ftp_USER(self, username):
        if self.state in (self.AUTHED, self.RENAMING):
            return 503, "Already signed in; open a new connection to sign in as someone else."
        if not username.strip():
            return 501, "USER needs a username."
        if self.require_tls and self._tls is None:
            return 530, TLS_REQUIRED
        self._user = username
        self.state = self.INAUTH
        return 331, f"Password required for {username}."

    def ftp_PASS(self, password=""):
        if self.state in (self.AUTHED, self.RENAMING):
            return 503, "Already signed in."
        if self.state != self.INAUTH:
            return 503, "Send USER first."
        return defer.Deferred.fromCoroutine(self._login(self._user, password))

    async def _login(self, username: str, password: str):
        self.state = self.UNAUTH
        address = self._peer_host()
        try:
            credentials = PeerCredentials(username, password, address, self._tls is not None, self._ticket)
            _interface, shell, logout = await self.portal.login(credentials, address, ftp.IFTPShell)
        except ApplianceError as e:
            if isinstance(e, Unavailable):  # not the password's fault (a full data disk): say so, not 530
                self.reply_code(421, str(e))
                self._hang_up()
                return None
            self._login_failures += 1
            if self._login_failures >= MAX_LOGIN_FAILURES:
                self.reply_code(530, str(e))
                self.reply_code(421, "Too many failed sign-ins: closing the connection.")
                self._hang_up()
                return None
            return 530, str(e)
        if self._lost:
            logout()
            return None
        self.shell = shell
        self.logout = logout
        self.cwd = "/"
        self.state = self.AUTHED
        self._end_grace()  # the core's sign-in marked the ticket signed in
        return 230, f"Signed in as {username}."

    # -- FTPS (RFC 4217) ---------------------------------------------------------------------

    def ftp_AUTH(self, mechanism=""):
        name = mechanism.strip().upper()
        if self._tls is not None:
            return 503, "TLS is already on for this connection."
        if self.state in (self.AUTHED, self.RENAMING):
            return 503, "AUTH must come before signing in: open a new connection and send AUTH TLS first."
        if name not in AUTH_MECHANISMS:
            return 504, f"AUTH {name[:20]} is not supported: use AUTH TLS."
        if self.tls is None or not ITLSTransport.providedBy(self.transport):
            return 502, "FTPS is not available on this listener: use SFTP."
        context = PinnedContext(self.tls.getContext())
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
        self._protection = AUTH_MECHANISMS[name]
        if self.state == self.INAUTH:
            self.state = self.UNAUTH  # a USER sent in plain text is forgotten: send it again
        return None

    def ftp_PBSZ(self, size=""):
        if self._tls is None:
            return 503, "PBSZ needs AUTH TLS first."
        if not size.strip().isdigit():
            raise BadArgument("PBSZ needs a buffer size (0 for TLS).")
        return 200, "PBSZ=0"

    def ftp_PROT(self, level=""):
        level = level.strip().upper()
        if self._tls is None:
            return 503, "PROT needs AUTH TLS first."
        if level == "P":
            self._protection = "P"
            return 200, "PROT P: data connections use TLS."
        if level == "C":
            self._protection = "C"
            return 200, "PROT C: data connections are not encrypted."
        if level in ("S", "E"):
            return 536, f"PROT {level} is not supported: use PROT P (TLS) or PROT C (clear)."
        return 504, "PROT needs P (TLS) or C (clear)."

    def ftp_CCC(self):
        if self._tls is None:
            return 503, "CCC: this connection is not encrypted."
        return 534, "CCC refused: the control connection stays encrypted."

    def data_tls(self) -> PinnedContext | None:
        """The TLS context for a data connection made now (PROT P), or None (clear)."""
        return self._tls if self._protection == "P" else None

    # -- paths -----------------------------------------------------------------------------

    def _resolve(self, path: str) -> str:
        """The absolute virtual path for a client's path (the core normalises)."""
        if not path:
            raise BadArgument(f"{self._command} needs a path.")
        joined = path if path.startswith("/") else self.cwd.rstrip("/") + "/" + path
        return self.shell.normalise(joined)

    @staticmethod
    def _segments(path: str) -> list[str]:
        return [part for part in path.split("/") if part]

    def ftp_TYPE(self, code):
        # twisted's answers an empty type with a reply it cannot format (and so none at all)
        if not code:
            return 501, "TYPE needs an argument: A (text) or I (binary)."
        return super().ftp_TYPE(code)

    def ftp_PWD(self):
        return 257, f"{quote_path(self.cwd)} is the current folder."

    async def ftp_CWD(self, path):
        target = self._resolve(path)
        await self.shell.access(self._segments(target))
        self.cwd = target
        return 250, f"Folder changed to {target}."

    def ftp_CDUP(self):
        return self.ftp_CWD("..")

    async def ftp_MKD(self, path):
        target = self._resolve(path)
        await self.shell.makeDirectory(self._segments(target))
        return 257, f"{quote_path(target)} created."

    async def ftp_RMD(self, path):
        target = self._resolve(path)
        await self.shell.removeDirectory(self._segments(target))
        return 250, f"Folder {target} removed."

    async def ftp_DELE(self, path):
        target = self._resolve(path)
        await self.shell.removeFile(self._segments(target))
        return 250, f"{target} deleted."

    async def ftp_RNFR(self, path):
        target = self._resolve(path)
        await self.shell.stat(self._segments(target), ("kind",))
        self._rename_from = target
        self.state = self.RENAMING
        return 350, f"{target} exists; send RNTO with the new name."

    async def ftp_RNTO(self, path):
        source, self._rename_from = self._rename_from, None
        self.state = self.AUTHED
        if source is None:
            return 503, "Send RNFR first."
        target = self._resolve(path)
        await self.shell.rename(self._segments(source), self._segments(target))
        return 250, f"Renamed {source} to {target}."

    async def ftp_SIZE(self, path):
        target = self._resolve(path)
        kind, size = await self.shell.stat(self._segments(target), ("kind", "size"))
        if kind != "file":
            return 550, f"{target} is not a file."
        return 213, str(size)

    async def ftp_MDTM(self, path):
        target = self._resolve(path)
        (modified,) = await self.shell.stat(self._segments(target), ("modified",))
        return 213, mdtm(modified)

    async def ftp_MFMT(self, arg):
        stamp, _, path = arg.partition(" ")
        try:
            mtime = calendar.timegm(time.strptime(stamp[:14], "%Y%m%d%H%M%S"))
        except ValueError:
            raise BadArgument("MFMT needs a time as YYYYMMDDHHMMSS and a path.") from None
        target = self._resolve(path)
        await self.shell.setModified(self._segments(target), float(mtime))
        return 213, f"Modify={stamp[:14]}; {target}"

    # -- listings ----------------------------------------------------------------------------

    @staticmethod
    def _strip_options(arg: str) -> str:
        """Drop `ls` options clients send (LIST -la, LIST -a dir)."""
        while arg.startswith("-"):
            _, _, arg = arg.partition(" ")
        return arg

    async def _entries(self, arg: str, glob_ok: bool = True):
        """(what, [(name, kind, size, mode, mtime)]) for a LIST/NLST/MLSD argument; what
        the argument named: "dir", "file" or "glob" (a pattern matched in its folder)."""
        keys = ("name", "kind", "size", "mode", "modified")
        target = self._resolve(arg or self.cwd)
        segments = self._segments(target)
        shell = self.shell  # a lost connection sets self.shell to None while we wait
        try:
            kind, *rest = await shell.stat(segments, keys[1:])
        except NotFound:
            name = segments[-1] if segments else ""
            if not (glob_ok and GLOB.search(name)):
                raise
            listed = await shell.list(segments[:-1], keys)
            return "glob", [tuple(values) for _, values in listed if fnmatch.fnmatchcase(values[0], name)]
        if kind != "dir":
            return "file", [(arg, kind, *rest)]
        listed = await shell.list(segments, keys)
        return "dir", [tuple(values) for _, values in listed]

    @staticmethod
    def _listable(name: str) -> bool:
        return "\r" not in name and "\n" not in name

    async def ftp_LIST(self, arg=""):
        self._need_data_setup()
        async with self._data_command():
            path = self._strip_options(arg)
            options = arg[: len(arg) - len(path)]
            if re.search(r"(^|\s)-\w*d", options):  # ls -d: the folder itself, not what is in it
                target = self._resolve(path or self.cwd)
                kind, size, mode, mtime = await self.shell.stat(
                    self._segments(target), ("kind", "size", "mode", "modified")
                )
                entries = [(path or ".", kind, size, mode, mtime)]
            else:
                _, entries = await self._entries(path)
            now = self.clock.seconds()
            lines = [ls_line(*entry, now) for entry in sorted(entries) if self._listable(entry[0])]
            return await self._send_listing(lines)

    async def ftp_NLST(self, arg=""):
        self._need_data_setup()
        async with self._data_command():
            arg = self._strip_options(arg)
            what, entries = await self._entries(arg)
            # A pattern's matches are paths, as the shell expands them: "sub/*.txt" gives
            # "sub/a.txt", which a client (mget, ftplib) can then RETR from where it is.
            folder = arg.rpartition("/")[0] + "/" if what == "glob" and "/" in arg else ""
            lines = [wire_name(folder + entry[0]) for entry in sorted(entries) if self._listable(entry[0])]
            return await self._send_listing(lines)

    async def ftp_MLSD(self, arg=""):
        self._need_data_setup()
        async with self._data_command():
            perms = self.shell.permissions()  # before awaiting: a lost connection takes the shell away
            what, entries = await self._entries(arg, glob_ok=False)
            if what != "dir":
                return 501, f"{arg} is not a folder."
            lines = [
                mlst_facts(kind, size, mtime, perms, self._mlst_facts).encode("ascii") + b" " + wire_name(name)
                for name, kind, size, _mode, mtime in sorted(entries)
                if self._listable(name)
            ]
            return await self._send_listing(lines)

    async def ftp_MLST(self, arg=""):
        target = self._resolve(arg or self.cwd)
        perms = self.shell.permissions()  # before awaiting: a lost connection takes the shell away
        kind, size, mtime = await self.shell.stat(self._segments(target), ("kind", "size", "modified"))
        facts = mlst_facts(kind, size, mtime, perms, self._mlst_facts)
        self.reply_lines(250, f"Listing {target}", [f"{facts} {target}"], "End.")
        return None

    async def _send_listing(self, lines: list[bytes]):
        payload = b"".join(line + b"\r\n" for line in lines)
        self.reply_code(150, "Here comes the listing.")
        await self._send(ReadFile(MemoryReader(payload)))
        return 226, "Listing sent."

    @contextlib.asynccontextmanager
    async def _data_command(self):
        """A data command uses up the data connection set-up, whatever its outcome."""
        try:
            yield
        finally:
            self._reset_data()

    # -- transfers ---------------------------------------------------------------------------

    def ftp_REST(self, arg):
        try:
            offset = int(arg)
        except ValueError:
            offset = -1
        if offset < 0:
            raise BadArgument("REST needs a byte offset (a whole number, 0 or more).")
        self._rest = offset
        return 350, f"Restarting at {offset}. Send RETR, STOR or APPE."

    async def ftp_RETR(self, path):
        rest, self._rest = self._rest, 0  # used up by this RETR, even a refused one
        self._need_data_setup()
        async with self._data_command():
            target = self._resolve(path)
            source = await self.shell.openForReading(self._segments(target))
            sent = None
            try:
                if rest > source.size:
                    return 554, f"Cannot restart at byte {rest}: {target} has only {source.size} bytes."
                self.reply_code(150, f"Opening data connection for {target} ({source.size - rest} bytes).")
                sent = await self._send(source, rest)
            finally:
                if sent is None:
                    await source.close()
            # The client has every byte: tell it now, then write the download's audit
            # row. The session's next command (QUIT too) waits for that row.
            self.reply_code(226, f"Transfer complete: {sent} bytes sent.")
            try:
                await source.close()
            except Exception:  # noqa: BLE001 - the reply is gone: log it, do not reply twice
                log.failure("closing a finished FTP download of {path}", path=target)
            return None

    async def ftp_STOR(self, path):
        rest, self._rest = self._rest, 0  # used up by this STOR, even a refused one
        self._need_data_setup()
        async with self._data_command():
            return await self._receive(path, rest, append=False)

    async def ftp_APPE(self, path):
        rest, self._rest = self._rest, 0
        self._need_data_setup()
        async with self._data_command():
            return await self._receive(path, rest, append=True)

    async def _receive(self, path: str, rest: int, append: bool):
        target = self._resolve(path)
        upload = await self.shell.openForWriting(self._segments(target), resume=append or rest > 0)
        committed = False
        try:
            offset = upload.size if append else rest
            if offset > upload.size:
                return 554, f"Cannot restart at byte {rest}: {target} has only {upload.size} bytes."
            self.reply_code(150, f"Ok to send data for {target}.")
            channel = await self._open_channel()
            consumer = await upload.receive(offset)
            transfer = self._begin(channel)
            consumer.on_data = transfer.progress
            consumer.on_error = transfer.fail
            try:
                if not consumer.take_over(channel):
                    channel.attach(consumer)
                outcome = await transfer.ended()
                if outcome[0] == "failed":
                    # Say why before the data connection goes: a client that sees
                    # the reset first takes it for a network error and retries.
                    consumer.stop()
                    channel.pauseProducing()
                    self.reply_code(*ftp_reply(outcome[1]))
                    await self._sleep(FAILURE_LINGER)
                    channel.abort()
                    await consumer.drained()
                    return None
                if not closed_cleanly(outcome):
                    log.info("FTP upload of {path} not saved: {why}", path=target, why=describe(outcome))
                    channel.abort()
                    consumer.stop()
                    await consumer.drained()
                    raise TransferAborted(
                        transfer.cancelled
                        or broken_because(outcome)
                        or "The data connection broke before the upload finished."
                    )
                await consumer.drained()
                # A killed client closes both connections at once, and the data side
                # may look clean: commit only if the control connection outlives it.
                # The disk's flush and fsync run meanwhile; nothing is visible before both end.
                syncing = upload.sync()
                await self._settle()
                await syncing
                if self._lost:
                    return None
                await upload.close()
                committed = True
            finally:
                self._end(transfer)
        finally:
            if not committed:
                await upload.abort()
        return 226, f"Transfer complete: {consumer.received} bytes received."

    async def _settle(self) -> None:
        """Give a dying client's control connection time to show it is gone."""
        await self._sleep(COMMIT_GRACE)

    async def _sleep(self, seconds: float) -> None:
        d = defer.Deferred()
        self.clock.callLater(seconds, d.callback, None)
        await d

    async def _send(self, source: ReadFile, offset: int = 0) -> int:
        """Send `source` over the data connection; return the bytes sent."""
        channel = await self._open_channel()
        transfer = self._begin(channel)
        try:
            try:
                sent = await source.send(channel, offset, transfer.progress)
            except BaseException:
                channel.abort()
                raise
            if transfer.cancelled is None:
                channel.finish()
            outcome = await transfer.ended()
            if transfer.cancelled is not None:
                raise TransferAborted(transfer.cancelled)
            if not closed_cleanly(outcome):
                log.info("FTP download not complete: {why}", why=describe(outcome))
                raise TransferAborted(
                    broken_because(outcome) or "The data connection broke before the download finished."
                )
            return sent
        finally:
            self._end(transfer)

    def _begin(self, channel) -> Transfer:
        self.setTimeout(None)  # the transfer has its own stall timer
        self._transfer = Transfer(channel, self.clock, self.transfer_timeout)
        return self._transfer

    def _end(self, transfer: Transfer) -> None:
        transfer.stop()
        if self._transfer is transfer:
            self._transfer = None
        if not self._lost:
            self.setTimeout(self.timeOut)

    def _abort_transfer(self, why: str) -> bool:
        """End the running transfer (or the wait for its connection); True if there was one."""
        if self._transfer is not None:
            self._transfer.cancel(why)
            return True
        if self.dtpFactory is not None and self.dtpFactory.channel is None:
            self.dtpFactory.close(why)
            return self._busy
        return False

    def ftp_ABOR(self):
        aborted, self._aborted = self._aborted, False
        self._reset_data()
        if aborted:
            return 226, "Abort successful."
        return 225, "No transfer to abort."

    def ftp_ALLO(self, arg=""):
        return 202, "No storage allocation necessary."

    # -- data connections ----------------------------------------------------------------------

    def _need_data_setup(self) -> None:
        if self.dtpFactory is None:
            raise DataConnectionFailed("Use PASV, EPSV, PORT or EPRT first.")

    async def _open_channel(self):
        factory = self.dtpFactory
        if factory is None:
            raise DataConnectionFailed("The data connection was closed; use PASV or PORT again.")
        d = factory.when_connected()
        d.addTimeout(DATA_CONNECT_TIMEOUT, self.clock)
        try:
            return await d
        except defer.TimeoutError:
            raise DataConnectionFailed(f"No data connection within {DATA_CONNECT_TIMEOUT} seconds.") from None

    def _reset_data(self) -> None:
        """Forget the data connection set-up (listening port, connector, channel)."""
        factory, port, channel = self.dtpFactory, self.dtpPort, self.dtpInstance
        self.dtpFactory = self.dtpPort = self.dtpInstance = None
        if IListeningPort.providedBy(port):
            # a tick later: at shutdown the reactor is closing every port itself meanwhile,
            # and a Twisted Port closed twice in one tick fails (a traceback in the log)
            self.clock.callLater(0, _stop_listening, port)
        elif IConnector.providedBy(port):
            port.disconnect()
        if factory is not None:
            factory.close("The data connection set-up was replaced or closed.")
            channel = channel or factory.channel
        if channel is not None and channel.isConnected:
            channel.close_idle(self.clock, CLOSE_GRACE)

    def getDTPPort(self, factory, interface=""):
        """Listen on a free port of the passive range, trying from a random point."""
        ports = self.passivePortRange
        start = random.randrange(len(ports))
        for i in range(len(ports)):
            try:
                return self.clock.listenTCP(ports[(start + i) % len(ports)], factory, interface=interface)
            except error.CannotListenError:
                continue
        raise DataConnectionFailed("No passive port is free right now; try again later.")

    def _passive(self) -> int:
        self._reset_data()
        factory = DataChannelFactory(self, self._peer_host(), self.clock)
        # On the control connection's own address: never on every interface.
        port = self.getDTPPort(factory, interface=self._local_host())
        self.dtpFactory, self.dtpPort = factory, port
        return port.getHost().port

    def _local_family(self) -> int:
        host = self._local_host()
        return 1 if ":" not in host or plain_host(host) != host else 2

    def ftp_PASV(self):
        if self._epsvAll:
            return 503, "PASV is not allowed after EPSV ALL."
        host = self.masquerade or plain_host(self._local_host())
        if ":" in host:
            return 502, "PASV works only over IPv4: use EPSV."
        port = self._passive()
        return 227, f"Entering Passive Mode ({ftp.encodeHostPort(host, port)})."

    def ftp_EPSV(self, protocol=""):
        if protocol.upper() == "ALL":
            self._epsvAll = True
            return 200, "EPSV ALL ok: only EPSV from now on."
        if protocol and protocol != str(self._local_family()):
            return 522, f"Network protocol not supported, use ({self._local_family()})."
        port = self._passive()
        return 229, f"Entering Extended Passive Mode (|||{port}|)."

    def ftp_PORT(self, address):
        if self._epsvAll:
            return 503, "PORT is not allowed after EPSV ALL."
        try:
            numbers = [int(n) for n in address.split(",")]
            if len(numbers) != 6 or not all(0 <= n <= 255 for n in numbers):
                raise ValueError
        except ValueError:
            raise BadArgument("PORT needs h1,h2,h3,h4,p1,p2.") from None
        host = ".".join(str(n) for n in numbers[:4])
        return self._active("PORT", host, numbers[4] << 8 | numbers[5])

    def ftp_EPRT(self, address):
        if self._epsvAll:
            return 503, "EPRT is not allowed after EPSV ALL."
        try:
            protocol, host, port = ftp.decodeExtendedAddress(address)
            ip = ipaddress.ip_address(host)
            if protocol not in ("1", "2") or ip.version != int(protocol) * 2 + 2 or not 0 < port < 65536:
                raise ValueError
        except (ValueError, IndexError):
            raise BadArgument("EPRT needs |1|address|port| or |2|address|port|.") from None
        return self._active("EPRT", str(ip), port)

    def _active(self, command: str, host: str, port: int):
        peer = self._peer_host()
        # The bounce defence: data goes only back to the client, never to a third party.
        if plain_host(host) != peer:
            return 504, f"{command} refused: data connections go only to your own address ({peer})."
        if port < 1024:
            return 504, f"{command} refused: ports below 1024 are not allowed."
        self._reset_data()
        factory = DataChannelFactory(self, peer, self.clock)
        local = self._local_host()
        self.dtpPort = self.clock.connectTCP(host, port, factory, timeout=DATA_CONNECT_TIMEOUT, bindAddress=(local, 0))
        self.dtpFactory = factory
        return 200, f"{command} command successful."

    # -- the rest ---------------------------------------------------------------------------------

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
        # what is answered: the ftp_ methods and their X aliases, less SITE (whose every
        # command is refused, 502, as a command not in HELP is)
        commands = sorted({name[4:] for name in dir(self) if name.startswith("ftp_")} - {"SITE"} | set(ALIASES))
        self.reply_lines(214, "Commands recognised:", [" ".join(commands)], "Help OK.")

    def ftp_SITE(self, arg=""):
        # File modes are the appliance's business (SITE CHMOD and friends are not offered).
        return 502, "SITE commands are not supported."

    def ftp_STAT(self, arg=""):
        if arg:
            return 502, "STAT with a path is not supported: use LIST or MLST."
        who = self.shell.session.account.profile.username
        running = f"a {self._command} is" if self._transfer else "no transfer"
        return 211, f"Signed in as {who}; folder {self.cwd}; {running} running."

    def ftp_QUIT(self):
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
        banned=None,
        connections=None,
        tls=None,
        require_tls: bool = False,
        login_grace: int = 60,
    ):
        super().__init__(portal)
        self.login_grace = login_grace
        self.banned = banned
        self.connections = connections
        self.reactor = reactor
        self.passivePortRange = passive_ports
        self.timeOut = idle_timeout
        self.transfer_timeout = transfer_timeout
        self.masquerade = masquerade
        self.tls = tls
        self.require_tls = require_tls

    def buildProtocol(self, addr):
        wrapper = super().buildProtocol(addr)
        if wrapper is not None and isinstance(wrapper.wrappedProtocol, FTPSession):
            session = wrapper.wrappedProtocol
            session.clock = self.reactor
            session.transfer_timeout = self.transfer_timeout
            session.masquerade = self.masquerade
            session.banned = self.banned
            session.connections = self.connections
            session.tls = self.tls
            session.require_tls = self.require_tls
            session.login_grace = self.login_grace
        return wrapper
