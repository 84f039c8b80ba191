"""The only thread pools in the daemon.

SQLite runs on one dedicated thread (one connection, serialised); bcrypt, hashing
and disk work run on a small pool; blocking calls to a network service (the S3
client of S3 sources) run on a pool of their own, so a slow remote service never
holds up the disk work; a few transfer threads each move one plain FTP upload
from its socket to its file with splice(2) (see `transfer_slot`), or send a
download with sendfile(2) where the kernel cannot say which pages are in memory,
taken only when one is free. Nothing else in the code base starts threads
or calls deferToThread: this keeps the reactor free and the pools bounded.
"""

from __future__ import annotations

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

    def __init__(self, reactor, work_threads: int = 4, net_threads: int = 8, transfer_threads: int = 4):
        self._reactor = reactor
        self.reactor = reactor
        self._db = ThreadPool(minthreads=1, maxthreads=1, name="appliance-db")
        self._work = ThreadPool(minthreads=1, maxthreads=work_threads, name="appliance-work")
        self._net = ThreadPool(minthreads=0, maxthreads=net_threads, name="appliance-net")
        self._transfer = ThreadPool(minthreads=0, maxthreads=transfer_threads, name="appliance-transfer")
        self._transfer_slots = transfer_threads
        self._transfers: set[threading.Event] = set()  # the stop flags of the running transfers
        self._started = False

    def start(self) -> None:
        if self._started:
            return
        self._started = True
        self._db.start()
        self._work.start()
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
        for stop in self._transfers:
            stop.set()
        self._transfer.stop()
        self._net.stop()
        self._work.stop()
        self._db.stop()

    def db(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> Deferred[T]:
        """Run `fn` on the database thread (awaitable)."""
        return deferToThreadPool(self._reactor, self._db, fn, *args, **kwargs)

    def work(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> Deferred[T]:
        """Run `fn` (CPU or disk work) on the work pool (awaitable)."""
        return deferToThreadPool(self._reactor, self._work, fn, *args, **kwargs)

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


def as_deferred(coro: Coroutine[Any, Any, T]) -> Deferred[T]:
    """Adapt a coroutine to the Deferred a Twisted interface demands."""
    return Deferred.fromCoroutine(coro)


def spawn(awaitable: Awaitable[Any] | Deferred, what: str) -> Deferred:
    """Fire-and-forget: run it, and log its failure instead of swallowing it."""
    d = awaitable if isinstance(awaitable, Deferred) else Deferred.fromCoroutine(awaitable)
    d.addErrback(lambda f: log.failure("background task failed: {what}", f, what=what))
    return d
