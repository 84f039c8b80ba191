"""The SFTP subsystem over a core FileSession.

`FilesServer` implements ISFTPServer by calling the core, which confines every
path, checks permissions and quotas, and does disk work off the reactor.
`SftpProtocol` replaces conch's packet loop where it does not hold up: framing
without quadratic copies, a packet size limit, no per-request logging, one bad
packet answered rather than raised, posix-rename answered with a status, and,
when the connection drops, uploads in progress aborted (conch would close, and
so commit, them).
"""

from __future__ import annotations

import stat as statmod
import struct
import time

from twisted.conch.interfaces import ISFTPFile, ISFTPServer
from twisted.conch.ssh.common import getNS
from twisted.conch.ssh.filetransfer import (
    FX_BAD_MESSAGE,
    FX_FAILURE,
    FX_OP_UNSUPPORTED,
    FX_PERMISSION_DENIED,
    FXF_APPEND,
    FXF_CREAT,
    FXF_EXCL,
    FXF_READ,
    FXF_TRUNC,
    FXF_WRITE,
    FileTransferBase,
    FileTransferServer,
    SFTPError,
)
from twisted.internet import defer
from twisted.logger import Logger
from twisted.python.failure import Failure
from zope.interface import implementer

from ...core.files import Entry, FileSession, Reader, Writer
from ...threads import as_deferred
from .errors import sftp_error

log = Logger()

MAX_PACKET = 256 * 1024  # larger SFTP packets are refused: the connection is closed
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


def attributes(entry: Entry) -> dict:
    return {
        "size": entry.size,
        "uid": 0,
        "gid": 0,
        "permissions": entry.mode,
        "atime": int(entry.atime),
        "mtime": int(entry.mtime),
    }


def long_name(entry: Entry) -> bytes:
    """An `ls -l` line, as OpenSSH's sftp shows it."""
    mode = statmod.filemode(entry.mode)
    when = time.localtime(entry.mtime)
    recent = time.time() - entry.mtime < 180 * 86400
    stamp = time.strftime("%b %d %H:%M" if recent else "%b %d  %Y", when)
    line = f"{mode} 1 owner group {entry.size:>10} {stamp} {entry.name}"
    return line.encode("utf-8", "surrogateescape")


@implementer(ISFTPFile)
class ReadFile:
    def __init__(self, reader: Reader, entry: Entry):
        self.reader = reader
        self.entry = entry

    def readChunk(self, offset, length):
        return _call(self.reader.read(offset, length))

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
    """An upload: invisible under its name until CLOSE commits it."""

    def __init__(self, writer: Writer, append: bool):
        self.writer = writer
        self.append = append

    def readChunk(self, offset, length):
        raise SFTPError(FX_OP_UNSUPPORTED, "Reading a file opened for upload is not supported.")

    def writeChunk(self, offset, data):
        return _call(self.writer.write(self.writer.size if self.append else offset, data))

    def getAttrs(self):
        now = int(time.time())
        return {"size": self.writer.size, "uid": 0, "gid": 0, "permissions": 0o100640, "atime": now, "mtime": now}

    def setAttrs(self, attrs):
        # scp and `put -p` stamp times through FSETSTAT; modes and owners are not the client's to set
        if "mtime" in attrs:
            self.writer.set_times(attrs.get("atime", attrs["mtime"]), attrs["mtime"])

    def close(self):
        return _call(self.writer.commit())

    def abort(self):
        return as_deferred(self.writer.abort())


class Listing:
    """An open directory: conch iterates it for READDIR."""

    def __init__(self, entries: list[Entry]):
        self._items = iter([(e.name.encode("utf-8", "surrogateescape"), long_name(e), attributes(e)) for e in entries])

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._items)

    def close(self):
        self._items = iter(())


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
        if self.open_handles >= self.max_open_handles:
            raise SFTPError(FX_FAILURE, f"Too many open files (at most {self.max_open_handles} per session).")
        return _call(self._open(_text(filename), flags))

    async def _open(self, path: str, flags: int):
        if flags & (FXF_WRITE | FXF_APPEND):
            if not flags & FXF_CREAT:
                await self.session.stat(path)  # must exist: raises NotFound otherwise
            writer = await self.session.open_write(
                path, truncate=bool(flags & FXF_TRUNC), exclusive=bool(flags & FXF_EXCL)
            )
            handle = WriteFile(writer, append=bool(flags & FXF_APPEND))
        elif flags & FXF_READ:
            entry = await self.session.stat(path)
            handle = ReadFile(await self.session.open_read(path), entry)
        else:
            raise SFTPError(FX_BAD_MESSAGE, "Open for neither reading nor writing.")
        self.open_handles += 1
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
        return _call(self._list(_text(path)))

    async def _list(self, path: str) -> Listing:
        return Listing(await self.session.list(path))

    def getAttrs(self, path, followLinks):
        return _call(self._attrs(_text(path), bool(followLinks)))

    async def _attrs(self, path: str, follow: bool) -> dict:
        return attributes(await self.session.stat(path, follow=follow))

    def setAttrs(self, path, attrs):
        if "mtime" in attrs:
            return _call(self.session.set_times(_text(path), attrs.get("atime", attrs["mtime"]), attrs["mtime"]))
        return _call(self._exists(_text(path)))  # modes and owners: accepted, not applied

    async def _exists(self, path: str) -> None:
        await self.session.stat(path)

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


class SftpProtocol(FileTransferServer):
    """The SFTP packet loop for one session channel."""

    STATUS_EXTENSIONS = (b"posix-rename@openssh.com",)  # answered with a status, not a reply

    def __init__(self, server: FilesServer):
        # FileTransferServer.__init__ would adapt an avatar through the global
        # component registry; the server is handed in instead.
        FileTransferBase.__init__(self)
        self.client = server
        self.openFiles = {}
        self.openDirs = {}
        self.buf = bytearray()

    def dataReceived(self, data):
        self.buf += data
        buf = self.buf
        start = 0
        while len(buf) - start >= 9:
            length, kind = struct.unpack_from("!LB", buf, start)
            if length > MAX_PACKET:
                log.warn("SFTP packet of {length} bytes refused; closing the session", length=length)
                self.buf = bytearray()
                self.transport.loseConnection()
                return
            if len(buf) - start < 4 + length:
                break
            data = bytes(buf[start + 5 : start + 4 + length])
            start += 4 + length
            self._dispatch(kind, data)
        del buf[:start]

    def _dispatch(self, kind: int, data: bytes) -> None:
        name = self.packetTypes.get(kind)
        handler = getattr(self, f"packet_{name}", None) if name else None
        request_id = data[:4]
        if handler is None:
            self._sendStatus(request_id, FX_OP_UNSUPPORTED, b"Unsupported request.")
            return
        try:
            handler(data)
        except (SFTPError, EOFError, NotImplementedError) as e:
            self._ebStatus(Failure(e), request_id)
        except Exception:  # noqa: BLE001 - a malformed packet gets an answer, not a traceback up the stack
            log.failure("malformed SFTP request of type {kind}", kind=kind)
            self._sendStatus(request_id, FX_BAD_MESSAGE, b"Malformed request.")

    def packet_WRITE(self, data):
        request_id = data[:4]
        handle, rest = getNS(data[4:])
        (offset,) = struct.unpack("!Q", rest[:8])
        payload, _ = getNS(rest[8:])
        file = self.openFiles.get(handle)
        if file is None:
            self._sendStatus(request_id, FX_FAILURE, b"Invalid handle.")
            return
        d = defer.maybeDeferred(file.writeChunk, offset, payload)
        d.addCallback(self._cbStatus, request_id, b"write succeeded")
        d.addErrback(self._ebStatus, request_id, b"write failed")

    def packet_CLOSE(self, data):
        request_id = data[:4]
        handle, _ = getNS(data[4:])
        if handle in self.openFiles:
            file = self.openFiles.pop(handle)
            self.client.closed_handle()
            d = defer.maybeDeferred(file.close)
            d.addCallback(self._cbStatus, request_id, b"closed")
            d.addErrback(self._ebStatus, request_id, b"close failed")
        elif handle in self.openDirs:
            directory, _ = self.openDirs.pop(handle)
            directory.close()
            self._sendStatus(request_id, 0, b"closed")
        else:
            self._sendStatus(request_id, FX_FAILURE, b"Invalid handle.")

    def packet_EXTENDED(self, data):
        request_id = data[:4]
        name, payload = getNS(data[4:])
        d = defer.maybeDeferred(self.client.extendedRequest, name, payload)
        if name in self.STATUS_EXTENSIONS:
            d.addCallback(self._cbStatus, request_id)
        else:
            d.addCallback(self._cbExtended, request_id)
        d.addErrback(self._ebStatus, request_id, b"extended request failed")

    def _ebStatus(self, reason, requestId, msg=b"request failed"):
        # Conch logs every failure; a refusal by the core is routine, not an error to log.
        value = reason.value
        if isinstance(value, SFTPError):
            message = value.message
            self._sendStatus(requestId, value.code, message.encode("utf-8") if isinstance(message, str) else message)
            return
        super()._ebStatus(reason, requestId, msg)

    def connectionLost(self, reason):
        """The client went away: uploads in progress are aborted (never committed)."""
        self.connected = False
        files, self.openFiles = self.openFiles, {}
        for file in files.values():
            self.client.closed_handle()
            d = file.abort()
            d.addErrback(lambda f: log.failure("cleaning up after a lost SFTP session", f))
        self.openDirs = {}
