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

Every job's Deferred fires on the reactor's thread, from its event loop, after the caller
has it: a job never runs its caller's callbacks before `db`/`work`/... return (the pools hand
results back with callFromThread). The reactor is Twisted's own epoll reactor, untouched.
"""

from __future__ import annotations

import ctypes
import os
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from twisted.internet.defer import Deferred
from twisted.logger import Logger
from twisted.python.failure import Failure

T = TypeVar("T")
log = Logger()


class Threads:
    """Owns every pool (db, work, bulk, net, transfer); start before use, stop at shutdown."""

    def __init__(
        self,
        reactor,
        work_threads: int = 4,
        net_threads: int = 8,
        transfer_threads: int = 4,
        pin: bool = False,
    ):
        self._reactor = reactor
        self.reactor = reactor
        self._pin = pin
        self.cpu: int | None = None  # the CPU of the reactor and the short-work pools, when pinned
        self._allowed: set[int] = set()  # the CPUs the process may use, when pinned
        self._db = Pool(reactor, "appliance-db", 1, 1)
        self._work = Pool(reactor, "appliance-work", 1, work_threads)
        self._bulk = Pool(reactor, "appliance-bulk", 0, work_threads)
        self._net = Pool(reactor, "appliance-net", 0, net_threads)
        self._transfer = Pool(reactor, "appliance-xfer", 0, transfer_threads)
        self._transfer_slots = transfer_threads
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
            _set_affinity(self._allowed)  # the caller (the reactor's thread) may go anywhere again
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
        when the process may use only one CPU, or when the system refuses the call (a
        confinement's system-call filter, a container's seccomp profile): a tuning, never
        a reason not to serve, so that is one line in the log and the kernel places them."""
        allowed = os.sched_getaffinity(0)
        if len(allowed) < 2:
            return
        cpu = current_cpu()
        if cpu not in allowed:
            cpu = min(allowed)
        try:
            os.sched_setaffinity(0, {cpu})  # 0: the calling thread
        except OSError as e:
            log.warn(
                "[server] pin_reactor: not pinned, the system refuses sched_setaffinity ({error}); the reactor "
                "and its pools run where the kernel places them (pin_reactor = false says nothing)",
                error=e.strerror or e,
            )
            return
        log.info(
            "The reactor, the database thread and short disk work run on CPU {cpu}; long work on CPUs {cpus}",
            cpu=cpu,
            cpus=",".join(map(str, sorted(allowed))),
        )
        self.cpu, self._allowed = cpu, allowed
        for pool, cpus in ((self._db, {cpu}), (self._work, {cpu}), (self._bulk, allowed), (self._net, allowed),
                           (self._transfer, allowed)):  # fmt: skip
            pool.cpus = frozenset(cpus)

    def db(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> Deferred[T]:
        """Run `fn` on the database thread (awaitable)."""
        return self._db.run(fn, args, kwargs)

    def work(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> Deferred[T]:
        """Run `fn` (short disk work: an open, a stat, a rename, an fsync, a listing's batch) on the work pool (awaitable)."""
        return self._work.run(fn, args, kwargs)

    def bulk(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> Deferred[T]:
        """Run `fn` (long or CPU-bound work: a transfer's bytes read or written, bcrypt,
        parsing, a walk of a folder tree) on the bulk pool (awaitable)."""
        return self._bulk.run(fn, args, kwargs)

    def net(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> Deferred[T]:
        """Run `fn` (a blocking request to a network service) on the network pool (awaitable)."""
        return self._net.run(fn, args, kwargs)

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
        d = self._transfer.run(fn, args, kwargs)

        def release(result):
            self.release_slot(stop)
            return result

        return d.addBoth(release)

    def release_slot(self, stop: threading.Event) -> None:
        """Give back a slot reserved with `transfer_slot` and not used."""
        self._transfers.discard(stop)


def _set_affinity(cpus) -> None:
    """Place the calling thread on `cpus`; a refusal (the reactor's placement was allowed
    and said so, so this is a confinement changed since) leaves it where it is."""
    try:
        os.sched_setaffinity(0, cpus)
    except OSError:
        pass


def current_cpu() -> int | None:
    """The CPU the calling thread runs on (Linux: field 39 of /proc/thread-self/stat)."""
    try:
        with open("/proc/thread-self/stat", "rb") as f:
            stat = f.read()
        return int(stat[stat.rindex(b")") + 2 :].split()[36])
    except (OSError, ValueError, IndexError):
        return None


class Pool:
    """Threads taking work from one queue, each result handed back to the reactor with
    callFromThread: Twisted's ThreadPool with less on the way (its hand-off through a
    Team, a coordinator and context tracking cost ~30 us a round trip on one CPU; this
    one ~18 us, bench/README.md). Between `min_threads` and `max_threads` threads: one
    more is started whenever a job would otherwise wait. Each runs on `cpus` (None: where
    it is started, and a new thread runs where its starter does: the pinned reactor)
    under its name in the kernel (what `top -H` and `ps -L` show: which pool is busy)."""

    def __init__(self, reactor, name: str, min_threads: int, max_threads: int):
        self._reactor = reactor
        self.name = name
        self._min, self._max = min_threads, max_threads
        self.cpus: frozenset[int] | None = None
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._idle = 0  # threads waiting for a job
        self._queued = 0  # jobs no thread has taken yet
        self._started = False

    def start(self) -> None:
        self._started = True
        with self._lock:
            while len(self._threads) < self._min:
                self._spawn()

    def run(self, fn: Callable[..., T], args: tuple, kwargs: dict) -> Deferred[T]:
        """`fn(*args, **kwargs)` on a thread of the pool: a Deferred of its result."""
        if not self._started:
            raise RuntimeError(f"{self.name}: the pool is not running")
        d: Deferred[T] = Deferred()
        with self._lock:
            self._queued += 1
            if self._queued > self._idle and len(self._threads) < self._max:
                try:
                    self._spawn()
                except RuntimeError:  # "can't start new thread": the threads there are will do it
                    if not self._threads:
                        self._queued -= 1
                        raise
                    log.warn("{pool}: could not start another thread; the job waits for a busy one", pool=self.name)
        self._queue.put((d, fn, args, kwargs))
        return d

    def stop(self) -> None:
        """Finish the jobs queued so far, then end every thread (waits for them)."""
        self._started = False
        with self._lock:
            threads, self._threads = self._threads, []
        for _ in threads:
            self._queue.put(None)
        for thread in threads:
            thread.join()

    def _spawn(self) -> None:  # with self._lock held
        thread = threading.Thread(target=self._serve, name=f"{self.name}-{len(self._threads)}", daemon=True)
        thread.start()
        self._threads.append(thread)

    def _serve(self) -> None:
        _name_this_thread(self.name)
        if self.cpus is not None:
            _set_affinity(self.cpus)
        get, lock, back = self._queue.get, self._lock, self._reactor.callFromThread
        while True:
            with lock:
                self._idle += 1
            job = get()
            with lock:
                self._idle -= 1
                if job is not None:
                    self._queued -= 1
            if job is None:
                return
            d, fn, args, kwargs = job
            job = None
            try:
                outcome, result = d.callback, fn(*args, **kwargs)
            except BaseException:  # noqa: BLE001 - handed to the caller, as deferToThread does
                outcome, result = d.errback, Failure()
            back(outcome, result)
            # hold nothing of the job while waiting for the next
            d = fn = args = kwargs = outcome = result = None


def _name_this_thread(name: str) -> None:
    """Set the calling thread's name in the kernel (prctl PR_SET_NAME, 15 bytes)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(15, name.encode()[:15], 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: the name is only a convenience
