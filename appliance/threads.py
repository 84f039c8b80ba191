"""The only thread pools in the daemon.

SQLite runs on one dedicated thread (one connection, serialised); short disk work
(opens, stats, renames, fsyncs, listings) runs on a small pool (`work`); long or
CPU-bound work (the bytes of transfers read and written, bcrypt, images, mail
parsing, folder walks) on another (`bulk`); blocking calls to a network service
(the S3 client of S3 sources) run on a pool of their own, so a slow remote service
never holds up the disk work; a few transfer threads each move one plain FTP upload
from its socket to its file with splice(2) (see `transfer_slot`), or send a
download with sendfile(2) where the kernel cannot say which pages are in memory,
taken only when one is free. Nothing else in the code base starts threads
or calls deferToThread: this keeps the reactor free and the pools bounded.

Where they run (`pin`: the daemon's `[server] pin_reactor`): a trip from the
reactor to a thread and back is two wake-ups, and a wake-up on another CPU costs
far more than on the same one (on this project's 2-vCPU VM, a thread ping-pong took
~50 us a round across CPUs and ~3 us on one: bench/README.md). Every small file
makes a few such trips (its open, its commit, its audit row). So the reactor, the
database thread and the work pool are kept on one CPU (with the GIL they seldom run
Python at the same time anyway), and the pools whose work is long or runs in C
without the GIL (bulk, net, transfer) on every CPU the process may use.
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from twisted.internet.defer import Deferred
from twisted.internet.threads import deferToThreadPool
from twisted.logger import Logger
from twisted.python.threadpool import ThreadPool

T = TypeVar("T")
log = Logger()


class Threads:
    """Owns the database thread and the work pool; start before use, stop at shutdown."""

    def __init__(
        self, reactor, work_threads: int = 4, net_threads: int = 8, transfer_threads: int = 4, pin: bool = False
    ):
        self._reactor = reactor
        self.reactor = reactor
        self._pin = pin
        self.cpu: int | None = None  # the CPU of the reactor and the short-work pools, when pinned
        self._allowed: set[int] = set()  # the CPUs the process may use, when pinned
        self._db = ThreadPool(minthreads=1, maxthreads=1, name="appliance-db")
        self._work = ThreadPool(minthreads=1, maxthreads=work_threads, name="appliance-work")
        self._bulk = ThreadPool(minthreads=0, maxthreads=work_threads, name="appliance-bulk")
        self._net = ThreadPool(minthreads=0, maxthreads=net_threads, name="appliance-net")
        self._transfer = ThreadPool(minthreads=0, maxthreads=transfer_threads, name="appliance-xfer")
        self._transfer_slots = transfer_threads
        for pool in (self._db, self._work, self._bulk, self._net, self._transfer):
            pool.threadFactory = _pool_threads(pool.name)  # the kernel keeps 15 bytes of a name
        self._transfers: set[threading.Event] = set()  # the stop flags of the running transfers
        self._started = False

    def start(self) -> None:
        if self._started:
            return
        self._started = True
        if self._pin:
            self._place()
        self._db.start()
        self._work.start()
        self._bulk.start()
        self._net.start()
        self._transfer.start()
        self._trigger = self._reactor.addSystemEventTrigger("after", "shutdown", self.stop)

    def stop(self) -> None:
        if not self._started:
            return
        self._started = False
        try:
            self._reactor.removeSystemEventTrigger(self._trigger)
        except (ValueError, KeyError):
            pass  # already fired: we are being called by it
        if self.cpu is not None:
            os.sched_setaffinity(0, self._allowed)  # the caller (the reactor's thread) may go anywhere again
            self.cpu = None
        for stop in self._transfers:
            stop.set()
        self._transfer.stop()
        self._net.stop()
        self._bulk.stop()
        self._work.stop()
        self._db.stop()

    def _place(self) -> None:
        """Keep the calling thread (the reactor's) on the CPU it runs on now, the database
        thread and the work pool with it; the other pools on every allowed CPU. Nothing
        when the process may use only one CPU."""
        allowed = os.sched_getaffinity(0)
        if len(allowed) < 2:
            return
        cpu = current_cpu()
        if cpu not in allowed:
            cpu = min(allowed)
        os.sched_setaffinity(0, {cpu})  # 0: the calling thread
        self.cpu, self._allowed = cpu, allowed
        for pool, cpus in ((self._db, {cpu}), (self._work, {cpu}), (self._bulk, allowed), (self._net, allowed),
                           (self._transfer, allowed)):  # fmt: skip
            pool.threadFactory = _pool_threads(pool.name, frozenset(cpus))

    def db(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> Deferred[T]:
        """Run `fn` on the database thread (awaitable)."""
        return deferToThreadPool(self._reactor, self._db, fn, *args, **kwargs)

    def work(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> Deferred[T]:
        """Run `fn` (CPU or disk work) on the work pool (awaitable)."""
        return deferToThreadPool(self._reactor, self._work, fn, *args, **kwargs)

    def bulk(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> Deferred[T]:
        """Run `fn` (long or CPU-bound work: a transfer's bytes read or written, bcrypt,
        parsing, a walk of a folder tree) on the bulk pool (awaitable)."""
        return deferToThreadPool(self._reactor, self._bulk, fn, *args, **kwargs)

    def net(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> Deferred[T]:
        """Run `fn` (a blocking request to a network service) on the network pool (awaitable)."""
        return deferToThreadPool(self._reactor, self._net, fn, *args, **kwargs)

    def transfer_slot(self) -> threading.Event | None:
        """Reserve a transfer thread: its stop flag, or None when every one is busy
        (the caller then does the transfer on the reactor). Pass the flag to
        `transfer`, which gives the slot back when its function returns."""
        if not self._started or len(self._transfers) >= self._transfer_slots:
            return None
        stop = threading.Event()
        self._transfers.add(stop)
        return stop

    def transfer(self, stop: threading.Event, fn: Callable[..., T], *args: Any, **kwargs: Any) -> Deferred[T]:
        """Run `fn` (one long transfer that checks `stop`) on a reserved transfer thread."""
        d = deferToThreadPool(self._reactor, self._transfer, fn, *args, **kwargs)

        def release(result):
            self.release_slot(stop)
            return result

        return d.addBoth(release)

    def release_slot(self, stop: threading.Event) -> None:
        """Give back a slot reserved with `transfer_slot` and not used."""
        self._transfers.discard(stop)


def current_cpu() -> int | None:
    """The CPU the calling thread runs on (Linux: field 39 of /proc/thread-self/stat)."""
    try:
        with open("/proc/thread-self/stat", "rb") as f:
            stat = f.read()
        return int(stat[stat.rindex(b")") + 2 :].split()[36])
    except (OSError, ValueError, IndexError):
        return None


def _pool_threads(name: str, cpus: frozenset[int] | None = None):
    """A ThreadPool.threadFactory whose threads the kernel knows by `name` (what
    `top -H` and `ps -L` show: which pool is busy) and that run on `cpus` (None: where
    they are started; a new thread otherwise runs where the thread that started it
    does, the pinned reactor)."""

    def make(*args, target, **kwargs) -> threading.Thread:
        def run() -> None:
            _name_this_thread(name)
            if cpus is not None:
                os.sched_setaffinity(0, cpus)
            target()

        return threading.Thread(*args, target=run, **kwargs)

    return make


def _name_this_thread(name: str) -> None:
    """Set the calling thread's name in the kernel (prctl PR_SET_NAME, 15 bytes)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(15, name.encode()[:15], 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: the name is only a convenience


def as_deferred(coro: Coroutine[Any, Any, T]) -> Deferred[T]:
    """Adapt a coroutine to the Deferred a Twisted interface demands."""
    return Deferred.fromCoroutine(coro)


def spawn(awaitable: Awaitable[Any] | Deferred, what: str) -> Deferred:
    """Fire-and-forget: run it, and log its failure instead of swallowing it."""
    d = awaitable if isinstance(awaitable, Deferred) else Deferred.fromCoroutine(awaitable)
    d.addErrback(lambda f: log.failure("background task failed: {what}", f, what=what))
    return d
