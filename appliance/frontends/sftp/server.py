"""The SFTP subsystem over a core FileSession.

`FilesServer` implements ISFTPServer by calling the core, which confines every
path, checks permissions and quotas, and does disk work off the reactor.
`SftpProtocol` replaces conch's packet loop where it does not hold up: framing
without quadratic copies, a packet size limit, no per-request logging, one bad
packet answered rather than raised, posix-rename answered with a status, and,
when the connection drops, uploads in progress aborted (conch would close, and
so commit, them), and the replies to the requests on one handle sent in the order
the requests came (see `Lane`).
"""

from __future__ import annotations

import functools
import stat as statmod
import struct
import time
from collections import deque

from twisted.conch.interfaces import ISFTPFile, ISFTPServer
from twisted.conch.ssh.common import getNS
from twisted.conch.ssh.filetransfer import (
    FX_BAD_MESSAGE,
    FX_EOF,
    FX_FAILURE,
    FX_OK,
    FX_OP_UNSUPPORTED,
    FX_PERMISSION_DENIED,
    FXF_APPEND,
    FXF_CREAT,
    FXF_EXCL,
    FXF_READ,
    FXF_TRUNC,
    FXF_WRITE,
    FXP_CLOSE,
    FXP_DATA,
    FXP_FSETSTAT,
    FXP_FSTAT,
    FXP_INIT,
    FXP_NAME,
    FXP_READ,
    FXP_READDIR,
    FXP_WRITE,
    FileTransferBase,
    SFTPError,
)
from twisted.internet import defer
from twisted.logger import Logger
from twisted.python.failure import Failure
from zope.interface import implementer

from ...core.files import Entry, FileSession, Reader, Writer
from ...core.files.own import upload_mode
from ...deferreds import as_deferred
from .errors import sftp_error
from .twisted_private import FileTransferServerBase

log = Logger()

MAX_PACKET = 256 * 1024  # larger SFTP packets are refused: the connection is closed
MAX_READ = MAX_PACKET - 1024  # a longer READ gets a short reply, as from OpenSSH's sftp-server
# bytes of replies waiting for the client's window, and of READs started and not answered yet,
# beyond which no further request is started (OpenSSH's sftp-server too reads no request while its
# output queue is full): paramiko's get() asks for a whole file at once, and answering every READ
# at once would hold the file in memory
MAX_UNSENT = 4 << 20
# requests started or held and not answered yet, beyond which no further one is started: each
# costs memory beyond its bytes (a coroutine, a Deferred, work queued), and the window alone
# would let 2 MiB of 13-byte requests in
MAX_PENDING = 1024
_U32 = struct.Struct("!L")
_READ = struct.Struct("!QL")  # offset, length
_WRITE = struct.Struct("!QL")  # offset, data length
_DATA_HEAD = struct.Struct("!LB4sL")  # packet length, FXP_DATA, request id, data length
EXTENSIONS = {b"posix-rename@openssh.com": b"1", b"statvfs@openssh.com": b"2", b"fstatvfs@openssh.com": b"2"}


def _text(path: bytes) -> str:
    try:
        return path.decode("utf-8")
    except UnicodeDecodeError:
        raise SFTPError(FX_FAILURE, "File names must be UTF-8.") from None


def _call(coroutine) -> defer.Deferred:
    """Run a core call for conch, turning domain errors into SFTP statuses."""
    return as_deferred(coroutine).addErrback(_as_status)


def _as_status(failure: Failure):
    raise sftp_error(failure.value)


def run_now(coroutine, done, failed, _result=None) -> None:
    """Run a core coroutine and call `done(result)` or `failed(exception)`.

    Most reads and writes finish without waiting (the bytes are in the
    read-ahead window, the write goes to a buffer): then there is no Deferred
    at all. When the coroutine waits on a Deferred it is resumed from that
    Deferred's callback with the result, or with the failure thrown into it.
    """
    try:
        if isinstance(_result, Failure):
            waiting = _result.throwExceptionIntoGenerator(coroutine)
        else:
            waiting = coroutine.send(_result)
    except StopIteration as finished:
        done(finished.value)
        return
    except Exception as e:  # noqa: BLE001 - handed to the caller's error path
        failed(e)
        return
    if not isinstance(waiting, defer.Deferred):
        coroutine.close()
        failed(TypeError(f"a core coroutine awaited {waiting!r}, not a Deferred"))
        return
    waiting.addBoth(_resume, coroutine, done, failed)


def _resume(result, coroutine, done, failed) -> None:
    # the result goes into the coroutine (a failure is thrown into it, so it is
    # handled there): the Deferred's own chain ends with None
    run_now(coroutine, done, failed, result)


def attributes(entry: Entry) -> dict:
    return {
        "size": entry.size,
        "uid": 0,
        "gid": 0,
        "permissions": entry.mode,
        "atime": int(entry.atime),
        "mtime": int(entry.mtime),
    }


def long_name(entry: Entry, now: float | None = None, stamps: dict | None = None) -> bytes:
    """An `ls -l` line, as OpenSSH's sftp shows it. A listing passes `now` and a dict
    `stamps` that keeps the time stamps it made (files of one minute share one)."""
    mode = statmod.filemode(entry.mode)
    recent = (time.time() if now is None else now) - entry.mtime < 180 * 86400
    key = (int(entry.mtime) // 60, recent)
    stamp = stamps.get(key) if stamps is not None else None
    if stamp is None:
        stamp = time.strftime("%b %d %H:%M" if recent else "%b %d  %Y", time.localtime(entry.mtime))
        if stamps is not None:
            stamps[key] = stamp
    line = f"{mode} 1 owner group {entry.size:>10} {stamp} {entry.name}"
    return line.encode("utf-8", "surrogateescape")


_NAME_ATTRS = struct.Struct("!LQLLLLL")  # flags, size, uid, gid, permissions, atime, mtime
_ATTR_FLAGS = 0x1 | 0x2 | 0x4 | 0x8  # size, uid/gid, permissions, access and modification times
NAME_PACKET = 64 << 10  # bytes of names in one READDIR reply, about (OpenSSH takes up to 256 KiB)
NAME_ENTRIES = 1000  # ... and names in one reply, at most


def _u32_time(seconds: float) -> int:
    """A time as SFTP v3 carries it (32 bits, unsigned): out-of-range times are clamped."""
    value = int(seconds)
    return value if 0 <= value <= 0xFFFFFFFF else min(max(value, 0), 0xFFFFFFFF)


@implementer(ISFTPFile)
class ReadFile:
    def __init__(self, reader: Reader, entry: Entry):
        self.reader = reader
        self.entry = entry

    def readChunk(self, offset, length):
        return _call(self.reader.read(offset, length))

    def read(self, offset, length):
        return self.reader.read(offset, length)

    def writeChunk(self, offset, data):
        raise SFTPError(FX_PERMISSION_DENIED, "This file was opened for reading.")

    def getAttrs(self):
        return attributes(self.entry)

    def setAttrs(self, attrs):
        raise SFTPError(FX_PERMISSION_DENIED, "This file was opened for reading.")

    def close(self):
        return _call(self.reader.close())

    def abort(self):
        return as_deferred(self.reader.close())


@implementer(ISFTPFile)
class WriteFile:
    """An upload (a file opened for writing, or reading and writing): the session
    sees it as it is written, others only once CLOSE commits it."""

    def __init__(self, writer: Writer, append: bool, readable: bool = False, chmod=None):
        self.writer = writer
        self.append = append
        self.readable = readable
        self.chmod = chmod  # mode -> None: the core's chmod of this upload (FileSession.set_upload_mode)

    def readChunk(self, offset, length):
        return _call(self.read(offset, length))

    async def read(self, offset, length):
        if not self.readable:
            raise SFTPError(FX_PERMISSION_DENIED, "This file was opened for writing only.")
        return await self.writer.read(offset, length)

    def writeChunk(self, offset, data):
        return _call(self.write(offset, data))

    def write(self, offset, data):
        return self.writer.write(self.writer.size if self.append else offset, data)

    def getAttrs(self):
        now = int(time.time())
        atime, mtime = self.writer.times or (now, now)
        return {
            "size": self.writer.size,
            "uid": 0,
            "gid": 0,
            "permissions": upload_mode(self.writer),
            "atime": int(atime),
            "mtime": int(mtime),
        }

    def setAttrs(self, attrs):
        return _call(self._set_attrs(attrs))

    async def _set_attrs(self, attrs: dict) -> None:
        # a size truncates or extends (ftruncate, sshfs); scp and `put -p` stamp times and
        # modes (the core says which modes it applies: checked before anything changes);
        # owners are not the client's to set
        if "permissions" in attrs and self.chmod is not None:
            self.chmod(attrs["permissions"])
        if "size" in attrs:
            await self.writer.truncate(attrs["size"])
        if "mtime" in attrs:
            self.writer.set_times(attrs.get("atime", attrs["mtime"]), attrs["mtime"])

    def close(self):
        return _call(self.writer.commit())

    def abort(self):
        return as_deferred(self.writer.abort())


class Listing:
    """An open directory: READDIR takes its names a packet at a time (`next_names`),
    each made only when it is sent; conch may iterate it too."""

    def __init__(self, entries: list[Entry]):
        self._entries = entries
        self._next = 0
        self._now = time.time()
        self._stamps: dict = {}  # time stamps made, by minute
        self._modes: dict = {}  # `ls -l` mode strings made, by mode

    def __iter__(self):
        return self

    def __next__(self):
        if self._next >= len(self._entries):
            raise StopIteration
        e = self._entries[self._next]
        self._next += 1
        return e.name.encode("utf-8", "surrogateescape"), long_name(e, self._now, self._stamps), attributes(e)

    def next_names(self) -> tuple[int, bytes] | None:
        """The next names as a NAME reply's count and body (up to about NAME_PACKET
        bytes); None once every name was sent."""
        entries, start = self._entries, self._next
        if start >= len(entries):
            return None
        parts, size, count = [], 0, 0
        pack, u32, now, stamps, modes = _NAME_ATTRS.pack, _U32.pack, self._now, self._stamps, self._modes
        for e in entries[start : start + NAME_ENTRIES]:
            mode, mtime = e.mode, e.mtime
            filemode = modes.get(mode)
            if filemode is None:
                filemode = modes[mode] = statmod.filemode(mode)
            recent = now - mtime < 180 * 86400
            key = (int(mtime) // 60, recent)
            stamp = stamps.get(key)
            if stamp is None:
                stamp = stamps[key] = time.strftime("%b %d %H:%M" if recent else "%b %d  %Y", time.localtime(mtime))
            name = e.name.encode("utf-8", "surrogateescape")
            line = f"{filemode} 1 owner group {e.size:>10} {stamp} ".encode() + name
            parts.append(u32(len(name)) + name + u32(len(line)) + line)
            parts.append(pack(_ATTR_FLAGS, e.size, 0, 0, mode, _u32_time(e.atime), _u32_time(mtime)))
            count += 1
            size += 2 * len(name) + 90
            if size >= NAME_PACKET:
                break
        self._next = start + count
        return count, b"".join(parts)

    def close(self):
        self._entries, self._next = [], 0


@implementer(ISFTPServer)
class FilesServer:
    """ISFTPServer over one connection's FileSession."""

    def __init__(self, session: FileSession, max_open_handles: int):
        self.session = session
        self.max_open_handles = max_open_handles
        self.open_handles = 0

    def gotVersion(self, otherVersion, extData):
        return dict(EXTENSIONS)

    # -- files ----------------------------------------------------------------------

    def openFile(self, filename, flags, attrs):
        return self._counted(self._open, _text(filename), flags)

    def _counted(self, opener, *args) -> defer.Deferred:
        """Open a handle (file or folder), counted from the moment it is asked for, so
        pipelined OPENs cannot all pass the check before the first one is counted."""
        if self.open_handles >= self.max_open_handles:
            raise SFTPError(FX_FAILURE, f"Too many open files (at most {self.max_open_handles} per session).")
        self.open_handles += 1
        return _call(opener(*args)).addErrback(self._open_failed)

    def _open_failed(self, failure: Failure):
        self.closed_handle()
        return failure

    async def _open(self, path: str, flags: int):
        if flags & (FXF_WRITE | FXF_APPEND):
            # as OpenSSH's open(2): CREAT makes a missing file, TRUNC empties, EXCL refuses an
            # existing one, APPEND writes at the end, READ too reads back (an existing file is a
            # private copy, committed when closed)
            readable = bool(flags & FXF_READ)
            writer = await self.session.open_write(
                path,
                truncate=bool(flags & FXF_TRUNC),
                exclusive=bool(flags & FXF_EXCL),
                create=bool(flags & FXF_CREAT),
                readable=readable,
            )
            chmod = functools.partial(self.session.set_upload_mode, writer, path)
            handle = WriteFile(writer, append=bool(flags & FXF_APPEND), readable=readable, chmod=chmod)
        elif flags & FXF_READ:
            reader = await self.session.open_read(path)
            entry = getattr(reader, "entry", None)  # a local file's, taken as it was opened
            if entry is None:
                try:
                    entry = await self.session.stat(path)
                except BaseException:
                    await reader.discard()
                    raise
            handle = ReadFile(reader, entry)
        else:
            raise SFTPError(FX_BAD_MESSAGE, "Open for neither reading nor writing.")
        return handle

    def closed_handle(self) -> None:
        self.open_handles = max(0, self.open_handles - 1)

    def removeFile(self, filename):
        return _call(self.session.remove(_text(filename)))

    def renameFile(self, oldpath, newpath):
        # SFTP v3 RENAME must not replace an existing file (posix-rename does)
        return _call(self.session.rename(_text(oldpath), _text(newpath), overwrite=False))

    def makeDirectory(self, path, attrs):
        return _call(self.session.mkdir(_text(path)))  # the client's mode (OpenSSH sends 0777) is ignored

    def removeDirectory(self, path):
        return _call(self.session.rmdir(_text(path)))

    def openDirectory(self, path):
        return self._counted(self._list, _text(path))  # a listing is held in memory: it counts too

    async def _list(self, path: str) -> Listing:
        return Listing(await self.session.list(path))

    def getAttrs(self, path, followLinks):
        return _call(self._attrs(_text(path), bool(followLinks)))

    async def _attrs(self, path: str, follow: bool) -> dict:
        return attributes(await self.session.stat(path, follow=follow))

    def setAttrs(self, path, attrs):
        return _call(self._set_attrs(_text(path), attrs))

    async def _set_attrs(self, path: str, attrs: dict) -> None:
        """A size truncates or extends the file (`truncate -s`, sshfs); times are set;
        a mode is applied as the core allows (core/files/service.py mode_check), else
        SSH_FX_OP_UNSUPPORTED before anything changes; owners accepted, not applied (the
        appliance owns every file: an OK for uid/gid alone is what sshfs and rsync need)."""
        if "permissions" in attrs:
            await self.session.set_mode(path, attrs["permissions"])
        if "size" in attrs:
            await self.session.resize(path, attrs["size"])
        if "mtime" in attrs:
            await self.session.set_times(path, attrs.get("atime", attrs["mtime"]), attrs["mtime"])
        elif "size" not in attrs and "permissions" not in attrs:
            await self.session.stat(path)  # it must exist

    def readLink(self, path):
        raise SFTPError(FX_OP_UNSUPPORTED, "Symbolic links are not shown over SFTP.")

    def makeLink(self, linkPath, targetPath):
        raise SFTPError(FX_PERMISSION_DENIED, "Creating symbolic links is not allowed.")

    def realPath(self, path):
        try:
            return self.session.normalise(_text(path)).encode("utf-8", "surrogateescape")
        except Exception as e:  # noqa: BLE001 - mapped to a status
            raise sftp_error(e) from None

    def extendedRequest(self, extendedName, extendedData):
        if extendedName == b"posix-rename@openssh.com":
            old, rest = getNS(extendedData)
            new, _ = getNS(rest)
            return _call(self.session.rename(_text(old), _text(new), overwrite=True))
        if extendedName == b"statvfs@openssh.com":
            path, _ = getNS(extendedData)
            return _call(self._statvfs(_text(path)))
        raise NotImplementedError(f"{extendedName.decode(errors='replace')} is not supported")

    async def _statvfs(self, path: str) -> bytes:
        await self.session.stat(path)
        space = await self.session.space()
        return struct.pack(
            "!11Q",
            space.block_size,
            space.block_size,
            space.total_blocks,
            space.free_blocks,
            space.free_blocks,
            space.total_files,
            space.free_files,
            space.free_files,
            0,
            0,
            255,
        )


def _cost(kind: int, data: bytes) -> int:
    """What a request weighs for the Pacer: a READ its length, others their size."""
    if kind == FXP_READ and len(data) >= 8:
        (size,) = _U32.unpack_from(data, 4)
        if len(data) >= 20 + size:
            return min(_READ.unpack_from(data, 8 + size)[1], MAX_READ)
    return len(data)


class Pacer:
    """Bounds the SFTP work one reactor turn does across every session.

    An SFTP client keeps dozens of reads in flight; with hundreds of sessions, a turn
    that answered every request it read would carry hundreds of MiB and keep the HTTP
    API (and new sign-ins) waiting for seconds. Sessions draw on `budget` bytes per
    turn (a READ costs its length, a WRITE its data, anything else a little); a
    session that finds the budget spent keeps its requests, in order, and is resumed
    first in the next turn, before sessions that have not waited."""

    MIN_COST = 1024

    def __init__(self, reactor, budget: int = 256 << 10):
        self._reactor = reactor
        self._budget = budget
        self._spent = 0
        self._turn_pending = False
        self._waiting: deque[SftpProtocol] = deque()

    def spend(self, cost: int) -> bool:
        """Count `cost` against this turn; False once the turn's budget is spent."""
        if not self._turn_pending:
            self._turn_pending = True
            self._reactor.callLater(0, self._next_turn)
        self._spent += max(cost, self.MIN_COST)
        return self._spent < self._budget

    def exhausted(self) -> bool:
        return self._spent >= self._budget or bool(self._waiting)

    def wait(self, protocol: SftpProtocol) -> None:
        self._waiting.append(protocol)

    def _next_turn(self) -> None:
        self._turn_pending = False
        self._spent = 0
        waiting, self._waiting = self._waiting, deque()
        while waiting:
            protocol = waiting.popleft()
            protocol.resume()
            if self._spent >= self._budget:
                self._waiting = deque([*waiting, *self._waiting])  # the rest first, next turn
                break


# requests that name a handle (its first field after the request id); their replies go out in request order
HANDLE_REQUESTS = frozenset((FXP_CLOSE, FXP_READ, FXP_WRITE, FXP_FSTAT, FXP_FSETSTAT, FXP_READDIR))
# ... of which these start only once every earlier request on their handle is answered, and the later
# ones only once they are: a CLOSE commits after the last WRITE before it, an FSTAT sees them all
ALONE = frozenset((FXP_CLOSE, FXP_FSTAT, FXP_FSETSTAT))


class Reply:
    """The reply to one request on a handle: its bytes once made (None until then)."""

    __slots__ = ("lane", "parts", "reading", "size")

    def __init__(self, lane: Lane, reading: int, size: int):
        self.lane = lane
        self.parts: list[bytes] | None = None
        self.reading = reading  # a READ's length: counted in SftpProtocol._reading until sent
        self.size = size  # the request's bytes: released to the channel's window once the reply is sent


class Lane:
    """The requests in flight on one handle, so that their replies go out in the order
    the requests came, as from OpenSSH's sftp-server (which answers one request after
    another). Clients count on it: paramiko waits for its pipelined WRITEs' replies in
    order and never sees one that came early (its put() of a few MiB then hangs);
    OpenSSH's scp truncates a download at a READ reply out of order. The work itself
    still overlaps: READs and WRITEs start as they arrive (the core's reader and writer
    keep them in order on the file); only their replies wait for the earlier ones.
    A request in ALONE starts after every earlier one is answered, and holds back the
    later ones until it is answered itself."""

    __slots__ = ("alone", "draining", "handle", "held", "replies")

    def __init__(self, handle: bytes):
        self.handle = handle
        self.replies: deque[Reply] = deque()  # in request order, the unsent ones
        self.held: deque[tuple[Reply, int, bytes]] = deque()  # requests not started yet
        self.alone: Reply | None = None  # the ALONE request running, if any
        self.draining = False

    def busy(self) -> bool:
        """Whether a new request must be held: one is held already, or an ALONE one runs."""
        return bool(self.held) or (self.alone is not None and self.alone.parts is None)


_ANY = object()  # SftpProtocol._inline for INIT, whose reply (VERSION) carries no request id


def _handle_of(data: bytes) -> bytes | None:
    """The handle a request names, or None when it is too short to name one."""
    if len(data) < 8:
        return None
    (size,) = _U32.unpack_from(data, 4)
    return data[8 : 8 + size] if len(data) >= 8 + size else None


class SftpProtocol(FileTransferServerBase):
    """The SFTP packet loop for one session channel."""

    STATUS_EXTENSIONS = (b"posix-rename@openssh.com",)  # answered with a status, not a reply

    def __init__(self, server: FilesServer, pacer: Pacer | None = None):
        # FileTransferServer.__init__ would adapt an avatar through the global
        # component registry; the server is handed in instead.
        FileTransferBase.__init__(self)
        self.client = server
        self.openFiles = {}
        self.openDirs = {}
        self.buf = bytearray()
        self._pacer = pacer
        self._paced = False  # waiting for the pacer's next turn, requests kept in self.buf
        self._lanes: dict[bytes, Lane] = {}  # handle -> its requests not answered yet
        self._awaited: dict[bytes, deque[Reply]] = {}  # request id -> its Reply (a deque: ids may repeat)
        self._inline: bytes | None = None  # the id of the request being started (on an idle handle)
        self._inline_answered = False
        self._owed: dict[bytes, deque[int]] = {}  # request id -> sizes of requests outside lanes, unanswered
        self._pending = 0  # requests started or held and not answered yet (see MAX_PENDING)
        self._reading = 0  # bytes asked for by READs started and not answered yet
        self._channel = None  # the SSH channel, whose unsent output holds back new requests
        self._consumed = None  # the channel's `consumed`: a request's bytes, once answered, reopen its window
        self._unreleased = 0  # bytes answered during _work, released to the channel once it ends
        self._stalled = False  # too much output pending (see MAX_UNSENT): requests wait in self.buf
        self._draining = False  # the channel will call _drained once it has sent what it holds
        self._working = False  # in _work (a resumption then is left to its loop)

    def connectionMade(self):
        super().connectionMade()
        # conch's subsystem transport (SSHSessionProcessProtocol) keeps the channel as `session`
        channel = getattr(self.transport, "session", None)
        self._channel = channel if hasattr(channel, "unsent") else None
        self._consumed = getattr(channel, "consumed", None)

    def dataReceived(self, data):
        self.buf += data
        if self._paced or self._stalled:
            return  # requests already waiting go first: these wait behind them
        if self._pacer is not None and self._pacer.exhausted():
            self._paced = True
            self._pacer.wait(self)
            return
        self._work()

    def resume(self) -> None:
        """The pacer's turn: carry on with the requests kept back."""
        self._paced = False
        if self.connected:
            self._work()

    def _output_full(self) -> bool:
        """Whether replies waiting for the client's window, or READs not answered yet,
        reach MAX_UNSENT, or MAX_PENDING requests are unanswered; then requests stay in
        self.buf until the channel has sent its output (_drained) or replies are sent
        (_drain, _answered). What waits in self.buf is not released to the channel, whose
        window then closes: the client is paused by SSH itself."""
        channel = self._channel
        unsent = channel.unsent if channel is not None else 0
        if unsent < MAX_UNSENT and self._reading < MAX_UNSENT and self._pending < MAX_PENDING:
            self._stalled = False
            return False
        self._stalled = True
        if unsent >= MAX_UNSENT and not self._draining:
            self._draining = True
            channel.when_drained(self._drained)  # may run at once, when the window has room for it all
            return channel.unsent >= MAX_UNSENT or self._reading >= MAX_UNSENT
        return True

    def _drained(self) -> None:
        self._draining = False
        self._carry_on()

    def _carry_on(self) -> None:
        """Output went out: start the requests kept back, unless _work or the pacer will."""
        if self._stalled and self.connected and not self._paced and not self._working:
            self._work()

    def _work(self) -> None:
        self._working = True
        try:
            self._work_through()
        finally:
            self._working = False
            if self._unreleased:
                self._release(0)

    def _work_through(self) -> None:
        buf = self.buf
        start = 0
        pacer = self._pacer
        while len(buf) - start >= 9 and not self._output_full():
            length, kind = struct.unpack_from("!LB", buf, start)
            if length > MAX_PACKET or length < 1:  # an empty packet has not even a type
                log.warn("SFTP packet of {length} bytes refused; closing the session", length=length)
                self.buf = bytearray()
                self.transport.loseConnection()
                return
            if len(buf) - start < 4 + length:
                break
            data = bytes(buf[start + 5 : start + 4 + length])
            start += 4 + length
            self._dispatch(kind, data, 4 + length)
            if pacer is not None and not pacer.spend(_cost(kind, data)):
                if len(buf) - start >= 9:
                    self._paced = True
                    pacer.wait(self)
                break
        del buf[:start]

    def _dispatch(self, kind: int, data: bytes, size: int) -> None:
        """Start (or hold) one request of `size` bytes; its bytes are released to the
        channel's window once its reply is sent (at once, for most)."""
        handle = _handle_of(data) if kind in HANDLE_REQUESTS else None
        lane = self._lanes.get(handle) if handle is not None else None
        if lane is None:
            # nothing in flight on this handle, or no handle: most requests (a READ from the
            # read-ahead window, a WRITE into the buffer) are answered before _start returns,
            # and then their reply goes straight out, with no Lane made for them
            request_id = data[:4] if len(data) >= 4 else data.ljust(4, b"\0")
            self._inline = _ANY if kind == FXP_INIT else request_id  # VERSION has no id
            self._inline_answered = False
            try:
                self._start(kind, data)
            finally:
                self._inline, answered = None, self._inline_answered
            if answered:
                self._release(size)
                return
            self._pending += 1
            if handle is None:
                self._owed.setdefault(request_id, deque()).append(size)
                return
            lane = self._lanes[handle] = Lane(handle)
            reply = self._await(lane, kind, data, size)
            if kind in ALONE:
                lane.alone = reply
            return
        self._pending += 1
        reply = self._await(lane, kind, data, size)
        if lane.busy() or (kind in ALONE and lane.replies[0] is not reply):
            lane.held.append((reply, kind, data))
            return
        if kind in ALONE:
            lane.alone = reply
        self._start(kind, data)

    def _await(self, lane: Lane, kind: int, data: bytes, size: int) -> Reply:
        reply = Reply(lane, _cost(kind, data) if kind == FXP_READ else 0, size)
        self._reading += reply.reading
        lane.replies.append(reply)
        self._awaited.setdefault(data[:4], deque()).append(reply)
        return reply

    def _reply(self, request_id: bytes, parts: list[bytes]) -> None:
        """Send a reply, or keep it until the replies to the earlier requests on its handle are sent."""
        owed = None
        inline = self._inline
        if inline is not None and not self._inline_answered and (request_id == inline or inline is _ANY):
            self._inline_answered = True
        else:
            waiting = self._awaited.get(request_id)
            if waiting:
                reply = waiting.popleft()
                if not waiting:
                    del self._awaited[request_id]
                reply.parts = parts
                self._drain(reply.lane)
                return
            owed = self._owed.get(request_id)
        write = self.transport.write
        for part in parts:
            write(part)
        if owed:
            size = owed.popleft()
            if not owed:
                del self._owed[request_id]
            self._answered(size)

    def _release(self, size: int) -> None:
        """Give `size` bytes of answered requests back to the channel's window (gathered while in _work)."""
        if self._working:
            self._unreleased += size
            return
        size += self._unreleased
        self._unreleased = 0
        if self._consumed is not None:
            self._consumed(size)

    def _answered(self, size: int) -> None:
        """A request that was pending is answered: its bytes reopen the window; requests
        kept back for MAX_PENDING may start."""
        self._pending -= 1
        self._release(size)
        self._carry_on()

    def _drain(self, lane: Lane) -> None:
        """Send the lane's replies that are next in order; start what was held for them."""
        if lane.draining:
            return  # a request started below answered at once: the loop below sends it
        lane.draining = True
        sent = answered = released = 0
        try:
            replies, write = lane.replies, self.transport.write
            while True:
                while replies and replies[0].parts is not None:
                    reply = replies.popleft()
                    sent += reply.reading
                    answered += 1
                    released += reply.size
                    for part in reply.parts:
                        write(part)
                if not lane.held or (lane.alone is not None and lane.alone.parts is None):
                    break  # nothing held, or held behind an ALONE request still running
                reply, kind, data = lane.held[0]
                if kind in ALONE and replies[0] is not reply:
                    break  # earlier requests are still running
                lane.held.popleft()
                lane.alone = reply if kind in ALONE else None
                self._start(kind, data)
        finally:
            lane.draining = False
        if not replies and not lane.held and self._lanes.get(lane.handle) is lane:
            del self._lanes[lane.handle]
        if answered:
            self._reading -= sent
            self._pending -= answered
            self._release(released)
            self._carry_on()

    def sendPacket(self, kind, data):
        # every reply conch makes comes here; data starts with the request id
        self._reply(data[:4], [struct.pack("!LB", len(data) + 1, kind) + data])

    def _start(self, kind: int, data: bytes) -> None:
        name = self.packetTypes.get(kind)
        handler = getattr(self, f"packet_{name}", None) if name else None
        request_id = data[:4]
        if len(request_id) < 4:  # too short for a request id: answered with a zero id, not a shifted reply
            self.send_status(request_id.ljust(4, b"\0"), FX_BAD_MESSAGE, b"Malformed request.")
            return
        if handler is None:
            self.send_status(request_id, FX_OP_UNSUPPORTED, b"Unsupported request.")
            return
        try:
            handler(data)
        except (SFTPError, EOFError, NotImplementedError) as e:
            self.request_failed(Failure(e), request_id)
        except Exception:  # noqa: BLE001 - a malformed packet gets an answer, not a traceback up the stack
            log.failure("malformed SFTP request of type {kind}", kind=kind)
            self.send_status(request_id, FX_BAD_MESSAGE, b"Malformed request.")

    # READ and WRITE, the requests of a transfer, go straight to the core's
    # coroutines (see run_now); a reply goes out as header and data, uncopied.

    def packet_READ(self, data):
        request_id = data[:4]
        try:
            (size,) = _U32.unpack_from(data, 4)
            handle = data[8 : 8 + size]
            offset, length = _READ.unpack_from(data, 8 + size)
        except struct.error:
            self.send_status(request_id, FX_BAD_MESSAGE, b"Malformed request.")
            return
        file = self.openFiles.get(handle)
        if not isinstance(file, (ReadFile, WriteFile)):
            self._not_for(file, request_id, b"Invalid handle.")
            return
        run_now(
            file.read(offset, min(length, MAX_READ)),
            lambda chunk: self._send_data(request_id, chunk),
            lambda error: self._failed(error, request_id),
        )

    def _send_data(self, request_id: bytes, chunk: bytes) -> None:
        if not chunk:
            self.send_status(request_id, FX_EOF, b"End of file")
            return
        self._reply(request_id, [_DATA_HEAD.pack(9 + len(chunk), FXP_DATA, request_id, len(chunk)), chunk])

    def packet_WRITE(self, data):
        request_id = data[:4]
        try:
            (size,) = _U32.unpack_from(data, 4)
            handle = data[8 : 8 + size]
            offset, length = _WRITE.unpack_from(data, 8 + size)
        except struct.error:
            length, size = -1, 0
        start = 20 + size
        if length < 0 or len(data) < start + length:
            self.send_status(request_id, FX_BAD_MESSAGE, b"Malformed request.")
            return
        file = self.openFiles.get(handle)
        if not isinstance(file, WriteFile):
            self._not_for(file, request_id, b"This file was opened for reading.")
            return
        run_now(
            file.write(offset, data[start : start + length]),
            lambda _: self.send_status(request_id, FX_OK, b""),
            lambda error: self._failed(error, request_id),
        )

    def _not_for(self, file, request_id: bytes, message: bytes) -> None:
        if file is None:
            self.send_status(request_id, FX_FAILURE, b"Invalid handle.")
        else:
            self.send_status(request_id, FX_PERMISSION_DENIED, message)

    def _failed(self, error: BaseException, request_id: bytes) -> None:
        self.request_failed(Failure(sftp_error(error)), request_id)

    def packet_CLOSE(self, data):
        request_id = data[:4]
        handle, _ = getNS(data[4:])
        if handle in self.openFiles:
            file = self.openFiles.pop(handle)
            self.client.closed_handle()
            d = defer.maybeDeferred(file.close)  # a download's audit row is written behind the reply (FileSession)
            d.addCallback(self.status_ok, request_id, b"closed")
            d.addErrback(self.request_failed, request_id, b"close failed")
        elif handle in self.openDirs:
            directory, _ = self.openDirs.pop(handle)
            self.client.closed_handle()
            directory.close()
            self.send_status(request_id, 0, b"closed")
        else:
            self.send_status(request_id, FX_FAILURE, b"Invalid handle.")

    def packet_EXTENDED(self, data):
        request_id = data[:4]
        name, payload = getNS(data[4:])
        d = defer.maybeDeferred(self.client.extendedRequest, name, payload)
        if name in self.STATUS_EXTENSIONS:
            d.addCallback(self.status_ok, request_id)
        else:
            d.addCallback(self.extended_reply, request_id)
        d.addErrback(self.request_failed, request_id, b"extended request failed")

    def request_failed(self, reason, requestId, msg=b"request failed"):
        """Twisted's, except that refusals are not logged (they are routine) and our
        messages (which may name a file) go out as UTF-8, as the protocol says,
        instead of failing on the first non-ASCII letter."""
        error = reason.value
        if isinstance(error, SFTPError):
            code, message = error.code, error.message
        elif isinstance(error, EOFError):
            code, message = FX_EOF, error.args[0] if error.args else msg
        elif isinstance(error, NotImplementedError):
            code, message = FX_OP_UNSUPPORTED, error.args[0] if error.args else msg
        else:
            return super().request_failed(reason, requestId, msg)
        if isinstance(message, str):
            message = message.encode("utf-8", "replace")
        self.send_status(requestId, code, message)
        return None

    # Conch answers a request on an unknown handle by logging a KeyError: refuse it as CLOSE does.

    def packet_READDIR(self, data):
        if not self._known(data, self.openDirs):
            return
        handle, _ = getNS(data[4:])
        directory = self.openDirs[handle][0]
        if not isinstance(directory, Listing):
            super().packet_READDIR(data)
            return
        names = directory.next_names()  # in memory: answered at once, many names per reply
        if names is None:
            self.send_status(data[:4], FX_EOF, b"End of folder")
        else:
            self.sendPacket(FXP_NAME, data[:4] + _U32.pack(names[0]) + names[1])

    def packet_FSTAT(self, data):
        if self._known(data, self.openFiles):
            super().packet_FSTAT(data)

    def packet_FSETSTAT(self, data):
        if self._known(data, self.openFiles):
            super().packet_FSETSTAT(data)

    def _known(self, data: bytes, handles: dict) -> bool:
        handle, _ = getNS(data[4:])
        if handle in handles:
            return True
        self.send_status(data[:4], FX_FAILURE, b"Invalid handle.")
        return False

    def file_opened(self, fileObj, requestId):
        if not self.connected:  # opened after the client went away: nobody will close it
            self._discard(fileObj.abort())
            return
        super().file_opened(fileObj, requestId)

    def directory_opened(self, dirObj, requestId):
        if not self.connected:
            self.client.closed_handle()
            dirObj.close()
            return
        super().directory_opened(dirObj, requestId)

    def _discard(self, aborted: defer.Deferred) -> None:
        self.client.closed_handle()
        aborted.addErrback(lambda f: log.failure("cleaning up after a lost SFTP session", f))

    def connectionLost(self, reason):
        """The client went away: uploads in progress are aborted (never committed)."""
        self.connected = False
        self._lanes, self._awaited, self._owed = {}, {}, {}  # held requests are dropped; late replies go nowhere
        self._consumed = None
        files, self.openFiles = self.openFiles, {}
        for file in files.values():
            self._discard(file.abort())
        for _ in self.openDirs:
            self.client.closed_handle()
        self.openDirs = {}
