"""How the reactor waits for its next event: it looks again for a short while before it
sleeps, as long as events keep coming that soon (`[server] idle_spin_us`).

A client that talks request by request (SFTP's open, write and close of each small file)
leaves the reactor with nothing to do between its answer and the client's next request,
a few tens of microseconds later. Asleep in `epoll_wait`, the reactor's CPU halts, and on
a virtual machine whose kernel does not poll before halting (`guest_halt_poll_ns` 0, as
on this project's VM) waking a halted CPU goes through the hypervisor: ~45 us more per
request (a Python ping-pong over loopback: 62 us a round trip with the server asleep
between pings, 19 us with it looking for 50 us first; bench/README.md).

So the reactor looks for events (epoll_wait without a timeout, yielding the CPU between
looks) for up to a window before it sleeps, and sizes the window as the kernel's own
halt-polling does (drivers/cpuidle/governors/haltpoll.c): an event that came after the
window but within `idle_spin_us` doubles the window (from a quarter of it at first), an
event that came later halves it (and below a quarter it is closed). A daemon answering a
quick exchange looks; an idle one, or one answering a slow trickle of requests, sleeps at
once after a few looks, as before.

It does not look when a timer is due sooner, when any of the daemon's threads has work
(the database thread and the work pool share this CPU, which does not halt meanwhile
anyway; and looking takes the GIL and gives it back many times, which slowed a big
transfer's thread by 3-15% when it did), nor when the daemon may use one CPU only.

And how it hands out what came (`dispatch_directly`): Twisted's epoll reactor calls each
ready connection inside `log.callWithLogger`, which pushes a logging context (the
connection's log prefix, for legacy log lines) around every read and write, four calls
and a context each time. An echo ping-pong between two processes on one CPU took 16.4 us
of the reactor's CPU a round that way and 12.7 us without (bench/README.md); in the
small-file trees the difference is inside the machine's noise. The daemon's own lines
never use that context; an error a connection raises is still logged inside it, with
the prefix, as before.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable

from twisted.internet.main import CONNECTION_DONE, CONNECTION_LOST
from twisted.internet.posixbase import _NO_FILEDESC
from twisted.python import log


def reactor_poller(reactor):
    """The epoll object of Twisted's EPollReactor (`_poller`, private; written against
    Twisted 26.10 and pinned by tests/test_reactor_idle.py), or None for another reactor."""
    return getattr(reactor, "_poller", None)


class IdleSpin:
    """The reactor's `doIteration`: `poll` is the reactor's own `doPoll` (the wait and the
    handling of what came), `peek` the epoll object's `poll` (level-triggered: what it
    sees stays for `poll`). Looks for up to `window` seconds, between 0 and `most`, while
    `quiet()` says nothing else of ours would run on this CPU."""

    def __init__(
        self,
        poll: Callable[[float | None], None],
        peek: Callable[[float, int], list],
        most: float,
        quiet: Callable[[], bool],
        clock: Callable[[], float] = time.perf_counter,
        pause: Callable[[], None] = os.sched_yield,
    ):
        self._poll = poll
        self._peek = peek
        self.most = most
        self.start = most / 4  # the first window, and the least one kept
        self.window = 0.0
        self.quiet = quiet  # whether nothing else of ours would run now
        self._clock = clock
        self._pause = pause

    def __call__(self, timeout: float | None) -> None:
        if (timeout is not None and timeout <= self.most) or not self.quiet():
            self._poll(timeout)  # a timer comes first, or another thread needs this CPU
            return
        try:
            self._wait(timeout)
        except (OSError, ValueError):  # a broken or closed epoll object
            self._poll(timeout)  # which reports it, as it always has
            return
        self._poll(0)  # what came (or nothing: the timer is due)

    def _wait(self, timeout: float | None) -> None:
        """Until something is ready (or the timeout ends), looking for up to the window
        first; a wait that went to sleep resizes the window by how long it was."""
        peek, clock = self._peek, self._clock
        started = clock()
        if self.window:
            deadline = started + self.window
            pause = self._pause
            while not peek(0, 1):
                if clock() >= deadline:
                    break
                pause()
            else:
                return  # it came while looking: no sleep
        peek(-1 if timeout is None else timeout, 1)
        self._resize(clock() - started)

    def _resize(self, idle: float) -> None:
        if self.window < idle <= self.most:
            self.window = min(self.most, max(self.window * 2, self.start))
        elif idle > self.most:
            half = self.window / 2
            self.window = half if half >= self.start else 0.0


class DirectDispatch:
    """The reactor's `doPoll`: Twisted's EPollReactor.doPoll and _doReadOrWrite (pinned by
    tests/test_reactor_idle.py), with each ready connection called directly instead of
    inside `log.callWithLogger`; the logging context is set up only to log its error."""

    def __init__(self, reactor, poll: Callable[[float, int], list]):
        self._reactor = reactor
        self._poll = poll
        self._selectables = reactor._selectables  # noqa: SLF001 - fd -> reader or writer
        self._reads = reactor._reads  # noqa: SLF001 - the fds it reads from
        self._disconnected = reactor._POLL_DISCONNECTED  # noqa: SLF001
        self._in, self._out = reactor._POLL_IN, reactor._POLL_OUT  # noqa: SLF001

    def __call__(self, timeout: float | None) -> None:
        try:
            events = self._poll(-1 if timeout is None else timeout, len(self._selectables))
        except InterruptedError:
            return
        selectables = self._selectables
        for fd, event in events:
            selectable = selectables.get(fd)
            if selectable is not None:
                self._handle(selectable, fd, event)

    def _handle(self, selectable, fd: int, event: int) -> None:
        why = None
        in_read = False
        if event & self._disconnected and not event & self._in:
            # hung up with no input left to read: a clean end if it was being read from
            in_read = fd in self._reads
            why = CONNECTION_DONE if in_read else CONNECTION_LOST
        else:
            try:
                if selectable.fileno() == -1:
                    why = _NO_FILEDESC
                else:
                    if event & self._in:
                        why = selectable.doRead()
                        in_read = True
                    if not why and event & self._out:
                        why = selectable.doWrite()
                        in_read = False
            except BaseException:  # noqa: BLE001 - as Twisted does: logged, and the connection dropped
                why = sys.exc_info()[1]
                log.callWithLogger(selectable, log.err)
        if why:
            self._reactor._disconnectSelectable(selectable, why, in_read)  # noqa: SLF001


def dispatch_directly(reactor) -> DirectDispatch | None:
    """Make `reactor` hand out what epoll reports with DirectDispatch (see the module);
    None (and nothing changed) for another reactor than Twisted's epoll reactor."""
    poller = reactor_poller(reactor)
    if poller is None or not hasattr(poller, "poll") or not hasattr(reactor, "_doReadOrWrite"):
        return None
    dispatch = reactor.doPoll = DirectDispatch(reactor, poller.poll)
    if "doIteration" not in reactor.__dict__:  # the class's doIteration is its doPoll: ours now
        reactor.doIteration = dispatch
    return dispatch


def undo_dispatch(reactor) -> None:
    """Undo `dispatch_directly`."""
    if isinstance(reactor.__dict__.get("doIteration"), DirectDispatch):
        del reactor.doIteration
    if isinstance(reactor.__dict__.get("doPoll"), DirectDispatch):
        del reactor.doPoll


def install(reactor, most: float, quiet: Callable[[], bool]) -> IdleSpin | None:
    """Make `reactor` look for up to `most` seconds before it sleeps (see the module); None
    (and nothing changed) when it cannot: not Twisted's epoll reactor, or no time given."""
    poller = reactor_poller(reactor)
    if most <= 0 or poller is None or not hasattr(poller, "poll"):
        return None
    spin = reactor.doIteration = IdleSpin(reactor.doPoll, poller.poll, most, quiet)
    return spin


def uninstall(reactor) -> None:
    """Undo `install`: the reactor sleeps as soon as it waits again."""
    if isinstance(reactor.__dict__.get("doIteration"), IdleSpin):
        del reactor.doIteration
        if isinstance(reactor.__dict__.get("doPoll"), DirectDispatch):
            reactor.doIteration = reactor.doPoll  # it waits (and dispatches) as before install
