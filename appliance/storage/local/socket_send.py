"""Plain-TCP downloads sent from the reactor with sendfile(2).

Each time the socket can take more, one sendfile() moves page-cache pages into
it: no byte passes through Python, and nothing sits between the socket's
readiness and the next send. (A transfer thread looping on sendfile() measured
half this rate on two cores, with the client on the other one.)

How much one call moves depends on who paces the connection. Under BBR the
kernel paces it itself (unless the interface has the fq qdisc). There each
call moves PACED_CHUNK, and the socket only counts as writable while it holds
fewer than NOTSENT_LOWAT bytes not yet sent (TCP_NOTSENT_LOWAT): the next call
comes when the pacer has sent nearly all of the last one, not whenever the
send buffer has room. Without it, bytes queued ahead of the pacer went out
later from its timer, waking the client once per piece; with it, downloads on
loopback measured 5.1-5.4 against 3.7 GB/s (medians of 6-9 runs), and a
slow client's unsent bytes stay out of kernel memory. Under a congestion
control that does not pace (cubic, reno: most systems' default), calls move
UNPACED_CHUNK with no low-water mark: 1 MiB calls measured a third less CPU
per download than 128 KiB ones, and the mark cost 13% of the throughput and
half again as much CPU there (bench/README.md).

A sendfile() that would wait for the disk must not run on the reactor, so each
chunk is checked first with a one-byte RWF_NOWAIT read of its last page (and of
the first page of the first chunk). A chunk not in memory is read in (WARM_AHEAD
bytes at a time, on the bulk pool, through a READ_IN_PIECE buffer: memory stays
bounded by the pool's size, however many downloads read in) before it is sent. Files on an in-memory
filesystem (tmpfs, ramfs) need no check. Where the kernel can tell neither (a
filesystem without RWF_NOWAIT, such as NFS or FUSE), `memory_check` returns None
and the caller sends from a transfer thread instead.

The check looks at the chunk's ends only: a page evicted from the middle of a
cached chunk is read by sendfile() itself, once, on the reactor.
"""

from __future__ import annotations

import errno
import functools
import os
import socket
import threading
import time
from collections.abc import Callable

from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from ...threads import Threads

PACED_CHUNK = 256 << 10  # bytes per sendfile() (one per writable event) on a connection the kernel paces
UNPACED_CHUNK = 1 << 20  # ... and on one it does not (at ~5 GB/s, ~0.2 ms of the reactor: others get their turn)
NOTSENT_LOWAT = 32 << 10  # the socket is writable while fewer bytes than this wait to be sent
PACED_CONGESTION_CONTROLS = (b"bbr",)  # those that ask the kernel to pace (bbr, and bbr2/bbr3 where built)
WARM_AHEAD = 4 << 20  # bytes read into the page cache at once when a chunk is not there
READ_IN_PIECE = 256 << 10  # bytes per read() while doing so (the buffer each read-in holds)
TICK = 0.5  # seconds between progress reports (the caller's stall timer)
IN_MEMORY_FILESYSTEMS = frozenset({"tmpfs", "ramfs"})
_NOWAIT = getattr(os, "RWF_NOWAIT", None)


class SocketError(Exception):
    """The socket side of a socket transfer failed (a reset): it is incomplete;
    `sent`: the bytes that went out before (a download's audit row counts them)."""

    def __init__(self, message: str, sent: int = 0):
        super().__init__(message)
        self.sent = sent


class StopFlag(threading.Event):
    """A transfer's stop flag that also tells a reactor-side send at once (a
    thread looks at its flag between sends; the reactor must be told)."""

    def __init__(self) -> None:
        super().__init__()
        self.on_set: Callable[[], None] | None = None

    def set(self) -> None:
        super().set()
        if self.on_set is not None:
            self.on_set()


def memory_check(fd: int, st_dev: int) -> str | None:
    """How a reactor-side send of `fd` (on device `st_dev`) learns that a chunk is
    in memory: "probe" (RWF_NOWAIT reads), "always" (an in-memory filesystem), or
    None (it cannot: send from a thread). Called where the file is opened, on the
    work pool."""
    if _NOWAIT is None:
        return None
    try:
        os.preadv(fd, [bytearray(1)], 0, _NOWAIT)
        return "probe"
    except BlockingIOError:
        return "probe"
    except OSError as e:
        if e.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
            return None
    return "always" if _filesystem(os.major(st_dev), os.minor(st_dev)) in IN_MEMORY_FILESYSTEMS else None


@functools.lru_cache(maxsize=64)
def _filesystem(major: int, minor: int) -> str | None:
    """The type of the filesystem mounted from device major:minor (/proc/self/mountinfo)."""
    wanted = f"{major}:{minor}"
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as mounts:
            for line in mounts:
                fields = line.split()
                if len(fields) > 2 and fields[2] == wanted and "-" in fields:
                    return fields[fields.index("-") + 1]
    except OSError:
        pass
    return None


def prepare_socket(sock_fd: int) -> int:
    """The bytes per sendfile() on the TCP socket `sock_fd`: PACED_CHUNK when its
    congestion control has the kernel pace it (or it cannot be told), with
    NOTSENT_LOWAT set on it where the kernel has that; else UNPACED_CHUNK."""
    with socket.socket(fileno=os.dup(sock_fd)) as sock:
        try:
            name = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).rstrip(b"\0")
        except OSError:
            name = None
        if name is not None and not name.startswith(PACED_CONGESTION_CONTROLS):
            return UNPACED_CHUNK
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NOTSENT_LOWAT, NOTSENT_LOWAT)
        except OSError:
            pass  # not TCP: writable whenever its buffer has room
    return PACED_CHUNK


def read_in(fd: int, position: int, length: int) -> None:
    """Read `length` bytes of `fd` from `position` (or up to its end) into the page
    cache, through one READ_IN_PIECE buffer (on the bulk pool)."""
    piece = bytearray(min(length, READ_IN_PIECE))
    end = position + length
    while position < end:
        read = os.preadv(fd, [piece], position)
        if read <= 0:
            return
        position += read


class ReactorSend:
    """Send `file_fd` from `offset` to its end over the non-blocking socket
    `sock_fd` from the reactor (an IWriteDescriptor while it runs). `run()`
    returns ("end" or "stopped", bytes sent); a socket failure is a
    SocketError, a disk error an OSError. The socket's own transport must
    neither read nor write meanwhile."""

    def __init__(
        self,
        threads: Threads,
        sock_fd: int,
        file_fd: int,
        offset: int,
        stop: StopFlag,
        on_data: Callable[[], None],
        check: str,
    ):
        self._threads = threads
        self._reactor = threads.reactor
        self._sock = sock_fd
        self._file = file_fd
        self._offset = offset
        self._stop = stop
        self._on_data = on_data
        self._check = check
        self._probe = bytearray(1)
        self._chunk = prepare_socket(sock_fd)
        self._warming = False
        self._writing = False
        self._last_tick = time.monotonic()
        self._done: Deferred = Deferred()
        self.sent = 0

    def run(self) -> Deferred:
        self._stop.on_set = self._stopped
        try:
            cold = self._check == "probe" and not self._in_memory(self._offset)
        except OSError as e:
            self._finish(Failure(e))
            return self._done
        if self._stop.is_set():
            self._finish(("stopped", 0))
        elif cold:
            self._warm(self._offset)
        else:
            self._start_writing()
        return self._done

    # IWriteDescriptor

    def fileno(self) -> int:
        return self._sock

    def logPrefix(self) -> str:
        return "sendfile"

    def doWrite(self) -> None:
        position = self._offset + self.sent
        try:
            if self._check == "probe" and not self._in_memory(position + self._chunk - 1):
                self._warm(position)
                return
            moved = os.sendfile(self._sock, self._file, position, self._chunk)
        except BlockingIOError:
            return
        except (BrokenPipeError, ConnectionError) as e:
            self._finish(Failure(SocketError(str(e), self.sent)))
            return
        except OSError as e:
            self._finish(Failure(e))
            return
        if moved == 0:
            self._finish(("end", self.sent))
            return
        self.sent += moved
        now = time.monotonic()
        if now - self._last_tick >= TICK:
            self._last_tick = now
            self._on_data()

    def connectionLost(self, reason: Failure) -> None:
        """The reactor dropped the socket: an error or hang-up on it, or shutdown."""
        self._writing = False
        self._finish(Failure(SocketError(reason.getErrorMessage(), self.sent)))

    # the rest

    def _in_memory(self, position: int) -> bool:
        """Is the page holding byte `position` in memory (or past the end)?"""
        try:
            os.preadv(self._file, [self._probe], position, _NOWAIT)
        except BlockingIOError:
            return False
        return True

    def _warm(self, position: int) -> None:
        """Read WARM_AHEAD bytes from `position` into the page cache on the work
        pool, then send again. The descriptor stays open until this is back,
        however the send ends meanwhile."""
        self._stop_writing()
        self._warming = True
        d = self._threads.bulk(read_in, self._file, position, WARM_AHEAD)
        d.addCallbacks(self._warmed, self._warm_failed)

    def _warmed(self, _read: None) -> None:
        self._warming = False
        if self._stop.is_set():
            self._finish(("stopped", self.sent))
        elif not self._done.called:
            self._start_writing()

    def _warm_failed(self, failure: Failure) -> None:
        self._warming = False
        self._finish(failure)

    def _stopped(self) -> None:
        if not self._warming:  # a read in flight ends the send when it is back
            self._finish(("stopped", self.sent))

    def _start_writing(self) -> None:
        if not self._writing:
            self._writing = True
            self._reactor.addWriter(self)

    def _stop_writing(self) -> None:
        if self._writing:
            self._writing = False
            self._reactor.removeWriter(self)

    def _finish(self, result) -> None:
        self._stop_writing()
        if self._done.called or self._warming:
            return
        self._stop.on_set = None
        if isinstance(result, Failure):
            self._done.errback(result)
        else:
            self._done.callback(result)
