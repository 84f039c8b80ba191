"""Open files: a reader with read-ahead and a writer that uploads to a temporary
name and renames it into place only when the upload completes.

Both keep per-request work on the reactor to slicing and appending bytes: disk
I/O happens in large chunks on the bulk pool, so one thread hop serves many
protocol packets; opening, syncing and renaming on the work pool (threads.py).
"""

from __future__ import annotations

import errno
import fcntl
import os
import select
import socket
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable

from twisted.internet.defer import Deferred, DeferredLock
from twisted.internet.threads import blockingCallFromThread

from ...errors import AlreadyExists, ApplianceError, Invalid, QuotaExceeded, Unavailable
from ...threads import Threads
from ..commit import SharedCommit, last_look
from ..interface import Budget as Limits
from .socket_send import ReactorSend, SocketError, StopFlag
from .tree import Location, os_error

READ_AHEAD = 1 << 20  # bytes fetched per disk read for a sequential reader, at most
READ_AHEAD_LEAST = 128 << 10  # ... and at least, however many downloads are open
READ_AHEAD_TOTAL = 256 << 20  # read-ahead memory shared by every open download
WRITE_BUFFER = 1 << 20  # bytes gathered before a disk write
IOV_MAX = 1024  # buffers per pwritev() (Linux's limit)
MAX_OFFSET = (1 << 63) - 1  # the largest file offset the kernel takes (off_t)
SPLICE_CHUNK = 1 << 20  # bytes per splice() from a socket (and the pipe's size, when the kernel allows it)
SENDFILE_CHUNK = 256 << 10  # bytes per sendfile() from a transfer thread: shorter holds of the socket let its ACKs in
SPLICE_GRANT = 16 << 20  # bytes of quota a socket upload takes from the reactor at a time
SPLICE_TICK = 0.5  # seconds between a socket upload's progress reports (its stall timer)
SPLICE_POLL = 200  # ms a transfer thread waits for data before it looks at its stop flag again
F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)


def _check_range(offset: int, length: int) -> None:
    if offset < 0 or length < 0:
        raise Invalid("A negative offset or length.")
    if offset + length > MAX_OFFSET:
        raise Invalid("The offset is beyond the largest possible file size.")


class ReadAhead:
    """How far each open download reads ahead: READ_AHEAD while few are open, less as
    more are, so that hundreds of downloads at once hold READ_AHEAD_TOTAL between them
    (a window and the next one each) rather than 2 MiB apiece."""

    def __init__(self, total: int = READ_AHEAD_TOTAL, most: int = READ_AHEAD, least: int = READ_AHEAD_LEAST):
        self._total = total
        self._most = most
        self._least = least
        self.readers = 0

    def chunk(self) -> int:
        share = self._total // (2 * max(1, self.readers))
        share -= share % (64 << 10)
        return max(self._least, min(self._most, share))


class Reader:
    """A download of a file on the local disk; it has the socket fast path (sendfile)."""

    @property
    def socket_sender(self) -> Reader | None:
        # a small file read whole when it was opened goes out from memory: one write
        # costs less than setting up sendfile (and its end-of-file probe) on the reactor
        return None if self._at_end and self._window_start == 0 else self

    def __init__(
        self,
        threads: Threads,
        fd: int,
        path: str,
        size: int,
        on_close: Callable[[int, int], Awaitable[None]],
        read_ahead: ReadAhead | None = None,
        memory_check: str | None = None,
        whole: bytes | None = None,
    ):
        self._threads = threads
        self.entry = None  # what the file was when it was opened (its backend fills it in)
        self.mtime: float | None = None  # the same's change time (its backend fills it in)
        self._read_ahead = read_ahead if read_ahead is not None else ReadAhead()
        self._read_ahead.readers += 1
        self._fd = fd
        self.path = path
        self.size = size
        self._on_close = on_close
        self._queue: deque = deque()  # reads waiting for their turn: (offset, length, reply)
        self._pumping = False
        self._window = b""
        self._window_start = 0
        self._window_full = False  # the window holds all it asked for (not the file's end)
        self._at_end = False  # the window holds the whole file: a read past it is at its end
        if whole is not None:  # a small file, read whole when it was opened
            self._window, self._at_end = whole, True
        self._next = None  # the following window, being read in the background
        self._next_start = 0
        self._next_size = 0
        self.bytes_read = 0
        self.reads = 0
        self._closed = False
        self._memory_check = memory_check  # socket_send.memory_check's answer: None sends from a thread

    def fileno(self) -> int:
        return self._fd

    async def read(self, offset: int, length: int) -> bytes:
        """Up to `length` bytes at `offset`; b"" at end of file.

        Reads are answered in the order they came (OpenSSH's scp truncates a
        download at the first reply that arrives out of order): one finds its
        bytes at hand only when no earlier read is waiting; the others queue and
        one pump answers them in turn.
        """
        if self._closed:
            raise Invalid("The file is closed.")
        _check_range(offset, 0)  # a length past the end only reads less
        self.reads += 1
        start = offset - self._window_start
        if (
            not self._queue
            and not self._pumping
            and 0 <= start
            and (self._at_end or offset + length <= self._window_start + len(self._window))
        ):
            data = self._window[start : start + length]
            self._prefetch(start)
        else:
            reply: Deferred = Deferred()
            self._queue.append((offset, length, reply))
            if not self._pumping:
                Deferred.fromCoroutine(self._pump())
            data = await reply
        self.bytes_read += len(data)
        return data

    async def _pump(self) -> None:
        """Answer queued reads one after another, each reply sent before the next."""
        self._pumping = True
        try:
            while self._queue:
                offset, length, reply = self._queue.popleft()
                try:
                    data = await self._fetch(offset, length)
                except Exception as e:  # noqa: BLE001 - handed to the read that asked
                    reply.errback(e)
                    continue
                self._prefetch(max(0, offset - self._window_start))
                reply.callback(data)
        finally:
            self._pumping = False

    def _prefetch(self, position: int) -> None:
        """Past half of a full window, read the next one before it is asked for."""
        if self._next is None and self._window_full and position >= len(self._window) // 2:
            self._next_start = self._window_start + len(self._window)
            self._next_size = self._read_ahead.chunk()
            self._next = self._threads.bulk(os.pread, self._fd, self._next_size, self._next_start)

    async def _take_next(self) -> None:
        """Make the prefetched window the current one."""
        pending, self._next = self._next, None
        try:
            chunk = await pending
        except OSError as e:
            raise os_error(e, self.path) from None
        self._window, self._window_start = chunk, self._next_start
        self._window_full = len(chunk) == self._next_size
        self._at_end = False

    async def _fetch(self, offset: int, length: int) -> bytes:
        if self._next is not None and self._next_start <= offset < self._next_start + self._next_size:
            await self._take_next()
        start = offset - self._window_start
        if 0 <= start and (self._at_end or offset + length <= self._window_start + len(self._window)):
            return self._window[start : start + length]  # filled while we waited
        if self._next is not None:  # a jump elsewhere: let the background read finish unused
            await self._drop_next()
        want = max(length, self._read_ahead.chunk())
        try:
            chunk = await self._threads.bulk(os.pread, self._fd, want, offset)
        except OSError as e:
            raise os_error(e, self.path) from None
        self._window, self._window_start = chunk, offset
        self._window_full = len(chunk) == want
        self._at_end = False
        return chunk[:length]

    async def _drop_next(self) -> None:
        pending, self._next = self._next, None
        try:
            await pending
        except OSError:
            pass

    def socket_slot(self) -> threading.Event | None:
        """A stop flag for `send_socket`, or None when it cannot run now. The file
        is sent from the reactor when the kernel can tell which of its pages are
        in memory (socket_send.py), else from a transfer thread, reserved here:
        None when every one is busy."""
        if self._memory_check is not None:
            return StopFlag()
        return self._threads.transfer_slot()

    async def send_socket(
        self, sock_fd: int, offset: int, stop: threading.Event, on_data: Callable[[], None]
    ) -> tuple[str, int]:
        """Send the file from `offset` to its end over a connected (non-blocking)
        socket with sendfile(2), from the reactor or from a transfer thread as
        `socket_slot()` (whose flag is `stop`) decided. The caller must not read
        or write the socket meanwhile, nor close it before this returns. Returns
        ("end" or "stopped", bytes sent); raises SocketError when the receiver
        went away."""
        reactor = self._threads.reactor
        on_thread = not isinstance(stop, StopFlag)
        try:
            _check_range(offset, 0)
            if self._closed:
                raise Invalid("The file is already closed.")
        except BaseException:
            if on_thread:
                self._threads.release_slot(stop)
            raise
        try:
            if on_thread:
                how, sent = await self._threads.transfer(
                    stop, _sendfile_out, sock_fd, self._fd, offset, stop, lambda: reactor.callFromThread(on_data)
                )
            else:
                sender = ReactorSend(self._threads, sock_fd, self._fd, offset, stop, on_data, self._memory_check)
                how, sent = await sender.run()
        except SocketError as e:
            self.bytes_read += e.sent  # what went out before the receiver went away
            raise
        except OSError as e:
            raise os_error(e, self.path) from None
        self.bytes_read += sent
        return how, sent

    async def close(self) -> None:
        """Close the file and log the download (the bytes read of its size)."""
        if await self._release():
            await self._on_close(self.bytes_read, self.size)

    async def discard(self) -> None:
        """Close the file unread and log nothing: no download took place (a HEAD
        request, a range outside the file, a refusal before the first byte)."""
        await self._release()

    async def _release(self) -> bool:
        """Close the descriptor once; whether this call closed it."""
        if self._closed:
            return False
        self._closed = True
        self._read_ahead.readers -= 1
        if self._next is not None:  # never close the descriptor under a read in flight
            await self._drop_next()
        os.close(self._fd)
        self._window = b""
        return True


class UploadReader:
    """A read handle on an upload in progress of the same session (own.py): what the
    upload holds so far, and what it is written later. Nothing is logged: those
    bytes are the session's own, not a download of a stored file."""

    socket_sender = None  # read through the reactor: the upload may still grow
    mtime = None  # still changing: no validator for it

    def __init__(self, threads: Threads, writer: Writer, fd: int):
        self._threads = threads
        self._writer = writer
        self._fd = fd
        self.path = writer.path
        self.bytes_read = 0
        self._closed = False

    @property
    def size(self) -> int:
        return self._writer.size

    def fileno(self) -> int:
        return self._fd

    async def read(self, offset: int, length: int) -> bytes:
        if self._closed:
            raise Invalid("The file is closed.")
        _check_range(offset, 0)
        try:
            await self._writer.flush()  # what it still buffers is part of the file too
        except ApplianceError:
            pass  # committed or dropped since: the descriptor still holds what it wrote
        try:
            data = await self._threads.bulk(os.pread, self._fd, length, offset)
        except OSError as e:
            raise os_error(e, self.path) from None
        self.bytes_read += len(data)
        return data

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            os.close(self._fd)

    async def discard(self) -> None:
        await self.close()


def pwrite_all(fd: int, chunks: list[bytes], offset: int) -> None:
    """Write `chunks` back to back at `offset`: one pwritev() per IOV_MAX chunks, no joining copy."""
    while chunks:
        batch = chunks[:IOV_MAX]
        written = os.pwritev(fd, batch, offset)
        offset += written
        for i, chunk in enumerate(batch):
            if written < len(chunk):  # a short write: the rest of this chunk first
                chunks = [memoryview(chunk)[written:], *chunks[i + 1 :]]
                break
            written -= len(chunk)
        else:
            chunks = chunks[len(batch) :]


def _splice_in(sock_fd: int, file_fd: int, offset: int, stop: threading.Event, grant, tick) -> tuple[str, int]:
    """Move bytes from a connected socket to `file_fd` at `offset` with splice(2), the
    kernel's own copy: no byte passes through Python. Runs on a transfer thread;
    `grant(end)` (on the reactor) says up to which offset the quota lets the file
    grow, `tick()` (on the reactor) that data moved. Returns how it ended ("eof":
    the sender closed; "stopped": `stop` was set; "quota": more data than the
    quota allows) and the bytes written. A disk error raises OSError, a socket
    error SocketError."""
    read_end, write_end = os.pipe2(os.O_CLOEXEC)
    try:
        try:
            fcntl.fcntl(write_end, F_SETPIPE_SZ, SPLICE_CHUNK)
        except OSError:
            pass  # the kernel's default pipe size (64 KiB) works too
        poller = select.poll()
        poller.register(sock_fd, select.POLLIN | select.POLLRDHUP)
        received = allowed = 0
        last_tick = time.monotonic()
        while not stop.is_set():
            if received >= allowed:
                allowed = grant(offset + received + SPLICE_GRANT) - offset
                if received >= allowed:  # the quota is used up: only a clean end may follow
                    poller.poll(SPLICE_POLL)
                    try:
                        with socket.socket(fileno=os.dup(sock_fd)) as peek:
                            more = peek.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
                    except BlockingIOError:
                        continue
                    except OSError as e:
                        raise SocketError(str(e)) from None
                    return ("quota" if more else "eof"), received
            try:
                moved = os.splice(sock_fd, write_end, min(SPLICE_CHUNK, allowed - received), flags=os.SPLICE_F_MOVE)
            except BlockingIOError:
                poller.poll(SPLICE_POLL)
                continue
            except OSError as e:
                raise SocketError(str(e)) from None
            if moved == 0:
                return "eof", received
            while moved:
                written = os.splice(read_end, file_fd, moved, offset_dst=offset + received)
                received += written
                moved -= written
            now = time.monotonic()
            if now - last_tick >= SPLICE_TICK:
                last_tick = now
                tick()
        return "stopped", received
    finally:
        os.close(read_end)
        os.close(write_end)


def _sendfile_out(sock_fd: int, file_fd: int, offset: int, stop: threading.Event, tick) -> tuple[str, int]:
    """Send `file_fd` from `offset` to its end over a socket with sendfile(2) (no byte
    passes through Python). Runs on a transfer thread; `tick()` (on the reactor)
    says data moved. Returns ("end" or "stopped", bytes sent); a socket error
    raises SocketError, a disk error OSError."""
    poller = select.poll()
    poller.register(sock_fd, select.POLLOUT)
    sent = 0
    last_tick = time.monotonic()
    while not stop.is_set():
        try:
            moved = os.sendfile(sock_fd, file_fd, offset + sent, SENDFILE_CHUNK)
        except BlockingIOError:
            poller.poll(SPLICE_POLL)
            continue
        except (BrokenPipeError, ConnectionError) as e:
            raise SocketError(str(e), sent) from None
        if moved == 0:
            return "end", sent
        sent += moved
        now = time.monotonic()
        if now - last_tick >= SPLICE_TICK:
            last_tick = now
            tick()
    return "stopped", sent


class Writer(SharedCommit):
    """An upload in progress. `commit` makes it visible; `abort` leaves no trace.

    The session that opened it sees it meanwhile (own.py): it may read what was
    written so far, resize it, rename it (`move_to`) or open more handles on it
    (`handles`: the last close commits)."""

    owner = None  # the session's OwnUploads (own.py), told when a commit or abort begins
    orphaned = False  # its name was deleted or replaced meanwhile: closing saves nothing

    @property
    def socket_receiver(self) -> Writer:
        """It has the socket fast path (splice)."""
        return self

    def __init__(
        self,
        threads: Threads,
        location: Location,
        temp_name: str,
        fd: int,
        start_size: int,
        limits: Limits,
        replaced: int | None,
        commit: Callable[[Writer], Awaitable[None]],
        registry: set | None = None,
        no_replace: bool = False,
    ):
        self._threads = threads
        self._registry = registry if registry is not None else set()
        self._registry.add(self)
        self.location = location
        self.temp_name = temp_name
        self._fd = fd
        self.size = start_size  # logical size: the highest byte written so far
        self._limits = limits
        self.replaced = replaced  # size of the file this upload replaces, None if new
        self._commit = commit
        self._no_replace = no_replace  # an exclusive upload: never replaces a file made meanwhile
        self._chunks: list[bytes] = []  # received, not yet written: kept as they came, no copy
        self._buffered = 0
        self._buffer_start = 0
        self._lock = DeferredLock()
        self.times: tuple[float, float] | None = None
        self.mode: int | None = None
        self.bytes_written = 0
        self._synced = False  # sync() ran and nothing was written since: commit need not fsync
        self._error: ApplianceError | None = None
        self._done = False
        self._aborted: ApplianceError | None = None  # why abort() dropped it: commit then raises this
        self._receiving: threading.Event | None = None  # the stop flag of a receive_socket in flight
        self.handles = 1  # handles of its session open on it: the last one's close commits

    @property
    def path(self) -> str:
        return self.location.path

    async def write(self, offset: int, data: bytes) -> None:
        pending = self.write_nowait(offset, data)
        if pending is not None:
            await pending

    def write_nowait(self, offset: int, data: bytes) -> Deferred | None:
        """`write` for callers on a hot path: None when the bytes only went to the
        buffer (the common case, no Deferred made), else the Deferred of the disk
        write it started, which fails as `write` would. Refusals (quota, a bad
        offset, a finished upload) raise at once."""
        if self._done:
            raise self._aborted or Invalid("The upload is already finished.")
        if self._error is not None:
            raise self._error
        try:
            _check_range(offset, len(data))
        except Invalid as e:
            self._error = e  # a refused write: the upload is not kept (see commit)
            raise
        self._grow_to(offset + len(data))
        self.bytes_written += len(data)
        self._synced = False
        if type(data) is not bytes:
            data = bytes(data)  # the caller may reuse its buffer: keep our own copy
        out = None
        if self._chunks and offset != self._buffer_start + self._buffered:
            out = [self._take()]
        if not self._chunks:
            self._buffer_start = offset
        self._chunks.append(data)
        self._buffered += len(data)
        # a chunk count cap too: a million 1-byte writes must not hold a million objects
        if self._buffered >= WRITE_BUFFER or len(self._chunks) >= IOV_MAX:
            out = [*(out or ()), self._take()]
        if out is None:
            return None
        return Deferred.fromCoroutine(self._write_out(out))

    def socket_slot(self) -> threading.Event | None:
        """A transfer thread for `receive_socket` (its stop flag), or None when none is free."""
        return self._threads.transfer_slot()

    async def receive_socket(
        self, sock_fd: int, offset: int, stop: threading.Event, on_data: Callable[[], None]
    ) -> tuple[str, int]:
        """Write what arrives on a connected (non-blocking) socket from `offset` on,
        straight from the socket to the file on a transfer thread reserved with
        `threads.transfer_slot()` (whose flag is `stop`), until the sender closes,
        `stop` is set, or the quota is reached. The caller must not read the
        socket meanwhile, nor close it before this returns. Returns how it ended
        ("eof", "stopped", "quota": then the upload is refused, as a write past the
        quota is) and the bytes written; raises SocketError for a reset, the
        domain error for a disk error."""
        try:
            if self._done:
                raise Invalid("The upload is already finished.")
            if self._error is not None:
                raise self._error
            _check_range(offset, 0)
            await self._flush()
        except BaseException:
            self._threads.release_slot(stop)
            raise
        reactor = self._threads.reactor
        size_before = self.size

        def grant(end: int) -> int:  # on the reactor: grow the pending bytes, within the quota
            room = self._limits.room(self.replaced or 0)
            if room is not None:
                end = min(end, self.size + max(0, room))
            if end > self.size:
                self._limits.grow(end - self.size, self.replaced or 0)
                self.size = end
            return end

        await self._lock.acquire()
        received = 0
        self._receiving = stop
        try:
            how, received = await self._threads.transfer(
                stop,
                _splice_in,
                sock_fd,
                self._fd,
                offset,
                stop,
                lambda end: blockingCallFromThread(reactor, grant, end),
                lambda: reactor.callFromThread(on_data),
            )
        except OSError as e:
            self._error = os_error(e, self.path)
        finally:
            self._receiving = None
            self._lock.release()
            end = max(size_before, offset + received)
            if self.size > end:  # give back the quota taken ahead and not used
                self._limits.release(self.size - end)
                self.size = end
            self.bytes_written += received
            self._synced = False
        if self._error is not None:
            raise self._error
        if how == "quota":
            try:
                self._limits.grow(1, self.replaced or 0)  # refused: the quota's own message
                self._limits.release(1)
                self._error = QuotaExceeded(
                    "Your storage quota is used up: the upload was stopped and nothing was saved."
                )
            except ApplianceError as e:
                self._error = e
            raise self._error
        return how, received

    def _take(self) -> tuple[list[bytes], int]:
        """The buffered chunks and their offset; the buffer starts empty again."""
        taken = (self._chunks, self._buffer_start)
        self._chunks, self._buffered = [], 0
        return taken

    async def _flush(self) -> None:
        if self._chunks:
            await self._write_out([self._take()])

    async def _write_out(self, pieces: list[tuple[list[bytes], int]]) -> None:
        """Write taken buffers on the bulk pool, one disk write at a time, in the order taken."""
        await self._lock.acquire()
        try:
            for chunks, offset in pieces:
                if self._error is None:
                    await self._threads.bulk(pwrite_all, self._fd, chunks, offset)
        except OSError as e:
            self._error = os_error(e, self.path)
        finally:
            self._lock.release()
        if self._error is not None:
            raise self._error

    def set_times(self, atime: float, mtime: float) -> None:
        """Times to stamp on the file when it is committed (scp -p, sftp put -p)."""
        self.times = (atime, mtime)

    def set_mode(self, mode: int) -> None:
        """The mode to give the file when it is committed (chmod on an open file, put -p)."""
        self.mode = mode

    def _check_open(self) -> None:
        if self._done:
            raise self._aborted or Invalid("The file is already closed.")
        if self._error is not None:
            raise self._error

    async def read(self, offset: int, length: int) -> bytes:
        """Up to `length` bytes written so far at `offset` (b"" past the end): a file
        opened for reading and writing reads back what it holds."""
        self._check_open()
        _check_range(offset, 0)
        await self._flush()
        await self._lock.acquire()
        try:
            return await self._threads.bulk(os.pread, self._fd, length, offset)
        except OSError as e:
            raise os_error(e, self.path) from None
        finally:
            self._lock.release()

    async def truncate(self, size: int) -> None:
        """Cut the file to `size` bytes, or extend it with zeros; the quota counts the
        new size. A refusal leaves the upload as it was."""
        self._check_open()
        _check_range(size, 0)
        if size == self.size:
            return
        if size > self.size:
            self._limits.grow(size - self.size, self.replaced or 0)
        await self._flush()  # buffered bytes past `size` go out first, to be cut with the rest
        await self._lock.acquire()
        try:
            await self._threads.work(os.ftruncate, self._fd, size)
        except OSError as e:
            if size > self.size:
                self._limits.release(size - self.size)
            raise os_error(e, self.path) from None
        finally:
            self._lock.release()
        if size < self.size:
            self._limits.release(self.size - size)
        self.size = size
        self._synced = False

    async def open_copy(self) -> int:
        """A read-only descriptor of its own on the file being written (for another
        handle of the same session); it stays valid after commit or abort."""
        self._check_open()
        await self._flush()
        await self._lock.acquire()
        try:
            return await self._threads.work(
                os.open, self.temp_name, os.O_RDONLY | os.O_CLOEXEC, dir_fd=self.location.dir_fd
            )
        except OSError as e:
            raise os_error(e, self.path) from None
        finally:
            self._lock.release()

    async def reader(self) -> UploadReader:
        """A read handle of the same session on this upload (what it holds so far)."""
        return UploadReader(self._threads, self, await self.open_copy())

    async def move_to(self, location: Location) -> None:
        """Commit to `location` instead (the session renamed the file before closing
        it): the temporary file moves into that folder. Takes over `location`."""
        await self._lock.acquire()
        try:
            await self._threads.work(
                os.rename,
                self.temp_name,
                self.temp_name,
                src_dir_fd=self.location.dir_fd,
                dst_dir_fd=location.dir_fd,
            )
        except OSError as e:
            location.close()
            raise os_error(e, location.path) from None
        finally:
            self._lock.release()
        old, self.location = self.location, location
        old.close()
        self._no_replace = False  # a rename replaces, and was checked as one

    def renamed(self, parts: list[str]) -> None:
        """A folder above it was renamed: the same folder, a new path."""
        self.location.parts = list(parts)

    async def flush(self) -> None:
        """Write out what is buffered (before another handle reads the file)."""
        self._check_open()
        await self._flush()

    async def _commit_now(self, still_wanted: Callable[[], bool] | None = None) -> None:
        try:
            if self._error is not None:
                raise self._error  # a write was refused (quota, disk): nothing of this upload is kept
            await self._lock.acquire()
            try:
                # what is still buffered goes out in the same trip to the disk thread as the
                # fsync and the rename (earlier buffers went out before the lock was ours)
                pieces = [self._take()] if self._chunks else []
                await self._threads.work(self._finish_on_disk, pieces, still_wanted)
            finally:
                self._lock.release()
        except OSError as e:
            await self.abort()
            raise os_error(e, self.path) from None
        except BaseException:
            await self.abort()
            raise
        self._done = True
        self._registry.discard(self)
        self._limits.release(self.size)
        self._limits.committed(self.size, self.replaced)
        self.location.close()
        await self._commit(self)

    def _finish_on_disk(
        self, pieces: list[tuple[list[bytes], int]], still_wanted: Callable[[], bool] | None = None
    ) -> None:
        for chunks, offset in pieces:
            pwrite_all(self._fd, chunks, offset)
            self._synced = False
        if not self._synced:
            os.fsync(self._fd)
        last_look(still_wanted)  # on this thread, between the fsync and the rename
        if self.mode is not None:
            os.fchmod(self._fd, self.mode)
        if self.times is not None:
            os.utime(self._fd, self.times)
        os.close(self._fd)
        self._fd = -1
        if not (self._no_replace and self._link_into_place()):
            os.rename(
                self.temp_name,
                self.location.name,
                src_dir_fd=self.location.dir_fd,
                dst_dir_fd=self.location.dir_fd,
            )
        os.fsync(self.location.dir_fd)

    def _link_into_place(self) -> bool:
        """Put the file in place only if the name is still free (a hard link fails on
        an existing name where a rename would replace it). False: the file system
        has no hard links, so the caller renames after a last check."""
        dir_fd = self.location.dir_fd
        try:
            os.link(self.temp_name, self.location.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
        except FileExistsError:
            raise AlreadyExists(f"{self.path} already exists: it was created while this upload ran.") from None
        except OSError as e:
            if e.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK):
                raise
            if self.location.lstat() is not None:
                raise AlreadyExists(f"{self.path} already exists: it was created while this upload ran.") from None
            return False
        os.unlink(self.temp_name, dir_fd=dir_fd)
        return True

    async def abort(self, reason: str = "The upload was stopped before it finished: nothing was saved.") -> None:
        """Drop the upload: remove the temporary file; the real name is untouched. A
        socket transfer in flight is stopped; a later commit or write raises `reason`."""
        if self._done:
            return
        self._done = True
        self._aborted = Unavailable(reason)
        finished = self.owner.finishing(self) if self.owner is not None else None
        if self._receiving is not None:
            self._receiving.set()  # else the lock below waits for the sender's last byte
        self._registry.discard(self)
        self._chunks, self._buffered = [], 0
        self._limits.release(self.size)
        await self._lock.acquire()
        try:
            await self._threads.work(self._remove_on_disk)
        finally:
            self._lock.release()
            self.location.close()
            if finished is not None:
                finished()

    def _remove_on_disk(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        try:
            os.unlink(self.temp_name, dir_fd=self.location.dir_fd)
        except FileNotFoundError:
            pass
