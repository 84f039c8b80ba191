"""The reactor looks for its next event a while before it sleeps (appliance/reactor_idle.py):
the window it looks for and when it does not look, with a stand-in poller and clock
(what it decides, not how fast it is); the install on Twisted's real epoll reactor, with
real sockets; the direct dispatch of what epoll reports (reads, writes, a protocol's error
logged with its prefix, hang-ups); and the parts of Twisted they rely on, pinned."""

from __future__ import annotations

import hashlib
import inspect
import os
import select
import socket
import threading
import time

import pytest
from twisted.internet import protocol
from twisted.internet.base import ReactorBase
from twisted.internet.epollreactor import EPollReactor
from twisted.internet.error import ConnectionDone

from appliance import reactor_idle
from appliance.reactor_idle import DirectDispatch, IdleSpin
from appliance.threads import Threads

US = 1e-6
MOST = 200 * US


class StandIn:
    """A poller and clock for IdleSpin: `arrivals` are the moments (seconds from 0) events
    become ready; each look or pause moves the clock by `step`, a sleep moves it to the
    next arrival (or the timeout's end)."""

    def __init__(self, arrivals, step=2 * US):
        self.now = 0.0
        self.arrivals = list(arrivals)
        self.step = step
        self.looks = 0  # epoll_wait without a timeout
        self.sleeps: list[float] = []  # the timeouts of the sleeping waits (-1: none)
        self.polls: list[float | None] = []  # the reactor's doPoll calls
        self.pauses = 0

    def clock(self) -> float:
        return self.now

    def ready(self) -> bool:
        return bool(self.arrivals) and self.arrivals[0] <= self.now

    def peek(self, timeout, most):
        assert most == 1
        if timeout == 0:
            self.looks += 1
            self.now += self.step
            return [(3, select.EPOLLIN)] if self.ready() else []
        self.sleeps.append(timeout)
        if self.ready():
            return [(3, select.EPOLLIN)]
        if self.arrivals and (timeout == -1 or self.arrivals[0] <= self.now + timeout):
            self.now = self.arrivals[0]
            return [(3, select.EPOLLIN)]
        self.now += timeout
        return []

    def poll(self, timeout):
        self.polls.append(timeout)
        if timeout == 0 and self.ready():
            self.arrivals.pop(0)  # handled

    def pause(self) -> None:
        self.pauses += 1

    def spin(self, quiet=lambda: True) -> IdleSpin:
        return IdleSpin(self.poll, self.peek, MOST, quiet, clock=self.clock, pause=self.pause)


def test_a_quick_exchange_opens_the_window_and_then_is_caught_without_sleeping():
    # a client answering every 60 us: the first wait sleeps (no window yet) and opens it
    arrivals = [60 * US * i for i in range(1, 8)]
    standin = StandIn(arrivals)
    spin = standin.spin()
    spin(None)
    assert standin.sleeps == [-1] and standin.polls == [0]
    assert spin.window == spin.start == MOST / 4  # came within MOST: opened at a quarter
    spin(None)  # 60 us away, the window 50: missed by the look, slept, and the window doubled
    assert len(standin.sleeps) == 2 and spin.window == MOST / 2
    sleeps = len(standin.sleeps)
    for _ in range(5):
        spin(None)
    assert len(standin.sleeps) == sleeps  # every later one found while looking
    assert standin.polls == [0] * 7 and not standin.arrivals
    assert standin.pauses > 0  # the CPU yielded between looks


def test_a_slow_trickle_closes_the_window_and_the_reactor_sleeps_at_once():
    standin = StandIn([40 * US, 160 * US])  # quick ones first: the window opens to 100 us
    spin = standin.spin()
    spin(None)
    spin(None)
    assert spin.window == MOST / 2
    standin.arrivals = [standin.now + 1e-3 * i for i in range(1, 5)]  # then one every millisecond
    spin(None)
    assert spin.window == MOST / 4  # halved
    spin(None)
    assert spin.window == 0  # below a quarter: closed
    looks = standin.looks
    spin(None)
    spin(None)
    assert standin.looks == looks  # no more looks: straight to sleep
    assert not standin.arrivals


def test_it_does_not_look_when_a_timer_is_due_first_or_another_thread_needs_the_cpu():
    standin = StandIn([30 * US] * 3)
    spin = standin.spin()
    spin.window = MOST
    spin(MOST / 2)  # a timer due within the window: the reactor's own wait, as before
    assert standin.polls == [MOST / 2] and standin.looks == 0 and standin.sleeps == []
    busy = standin.spin(quiet=lambda: False)
    busy.window = MOST
    busy(None)
    assert standin.polls == [MOST / 2, None] and standin.looks == 0 and standin.sleeps == []


def test_a_timer_that_ends_the_sleep_shrinks_the_window_and_is_run():
    standin = StandIn([])
    spin = standin.spin()
    spin.window = MOST
    spin(0.5)  # nothing comes: the look, then a sleep until the timer
    assert standin.sleeps == [0.5] and standin.polls == [0]  # the reactor then runs its timers
    assert spin.window == MOST / 2


@pytest.mark.parametrize(
    "error", [OSError(9, "Bad file descriptor"), ValueError("I/O operation on closed epoll object")]
)
def test_an_error_from_the_look_goes_to_the_reactors_own_wait(error):
    calls = []

    def peek(timeout, most):
        raise error

    spin = IdleSpin(calls.append, peek, MOST, lambda: True)
    spin.window = MOST
    spin(1.5)
    assert calls == [1.5]  # which raises, or reports, as it always has


# -- on Twisted's epoll reactor ----------------------------------------------------------


class Echo(protocol.Protocol):
    def dataReceived(self, data):
        self.transport.write(data)


def test_installed_on_twisteds_epoll_reactor_it_serves_a_ping_pong_and_comes_off_again():
    reactor = EPollReactor()
    quiet = []
    spin = reactor_idle.install(reactor, MOST, lambda: quiet.append(1) or True)
    assert isinstance(spin, IdleSpin) and reactor.doIteration is spin
    factory = protocol.Factory.forProtocol(Echo)
    port = reactor.listenTCP(0, factory, interface="127.0.0.1")
    client = socket.create_connection(("127.0.0.1", port.getHost().port))
    client.setblocking(False)
    got = b""
    try:
        for n in range(50):
            client.send(b"%d;" % n)
            for _ in range(200):
                reactor.iterate(0.05)  # runUntilCurrent and doIteration: ours
                try:
                    got += client.recv(100)
                except BlockingIOError:
                    continue
                if got.endswith(b"%d;" % n):
                    break
        assert got == b"".join(b"%d;" % n for n in range(50))
        assert quiet and spin.window > 0  # it asked, and a quick exchange opened the window
    finally:
        client.close()
        port.stopListening()
        reactor.disconnectAll()  # the accepted connection (and the waker)
        for _ in range(3):
            reactor.iterate(0)  # the port's close comes a turn later
        reactor_idle.uninstall(reactor)
        assert reactor.doIteration == reactor.doPoll  # the class's own again
        reactor._poller.close()  # noqa: SLF001 - the throwaway reactor's epoll


class Breaks(protocol.Protocol):
    """Echoes, and raises on a line saying "break"; remembers how it ended."""

    ended: list = []

    def logPrefix(self):
        return "Breaks-under-test"

    def dataReceived(self, data):
        if b"break" in data:
            raise RuntimeError("a bug in a protocol")
        self.transport.write(data)

    def connectionLost(self, reason):
        self.ended.append(reason)


def _serve(reactor, until, rounds: int = 400) -> None:
    """Turn the reactor until `until()` holds."""
    for _ in range(rounds):
        reactor.iterate(0.01)
        if until():
            return
    raise AssertionError("the reactor did not get there")


def test_direct_dispatch_reads_writes_logs_an_error_with_its_prefix_and_drops_that_connection():
    from twisted.logger import globalLogPublisher

    reactor = EPollReactor()
    dispatch = reactor_idle.dispatch_directly(reactor)
    assert isinstance(dispatch, DirectDispatch) and reactor.doPoll is dispatch and reactor.doIteration is dispatch
    Breaks.ended = []
    port = reactor.listenTCP(0, protocol.Factory.forProtocol(Breaks), interface="127.0.0.1")
    events = []
    globalLogPublisher.addObserver(events.append)
    clients = [socket.create_connection(("127.0.0.1", port.getHost().port)) for _ in range(3)]
    try:
        for client in clients:
            client.setblocking(False)
        got = {}

        def echoed(client, text):
            def check():
                try:
                    got[client] = got.get(client, b"") + client.recv(100)
                except BlockingIOError:
                    pass
                return got.get(client, b"").endswith(text)

            return check

        clients[0].send(b"ping")
        _serve(reactor, echoed(clients[0], b"ping"))
        # a bug while reading: logged inside the connection's context (its prefix, as
        # Twisted's own dispatch does), and that connection dropped as lost
        clients[1].send(b"break")
        _serve(reactor, lambda: len(Breaks.ended) == 1)
        errors = [e for e in events if e.get("isError")]
        assert len(errors) == 1 and errors[0]["failure"].check(RuntimeError)
        # the server's transport adds the session number and the peer to the protocol's prefix
        assert errors[0]["log_system"].startswith("Breaks-under-test,")
        assert Breaks.ended[0].check(RuntimeError)
        # the peer closes: a clean end (read from until then)
        clients[2].close()
        _serve(reactor, lambda: len(Breaks.ended) == 2)
        assert Breaks.ended[1].check(ConnectionDone)
        # the others carry on
        clients[0].send(b"pong")
        _serve(reactor, echoed(clients[0], b"pingpong"))
    finally:
        globalLogPublisher.removeObserver(events.append)
        for client in clients:
            client.close()
        port.stopListening()
        reactor.disconnectAll()
        for _ in range(3):
            reactor.iterate(0)
        reactor_idle.undo_dispatch(reactor)
        assert "doPoll" not in reactor.__dict__ and "doIteration" not in reactor.__dict__
        reactor._poller.close()  # noqa: SLF001


def test_idle_spin_installed_over_direct_dispatch_comes_off_to_it():
    reactor = EPollReactor()
    try:
        dispatch = reactor_idle.dispatch_directly(reactor)
        spin = reactor_idle.install(reactor, MOST, lambda: True)
        assert reactor.doIteration is spin and spin._poll is dispatch  # noqa: SLF001 - it waits through ours
        reactor_idle.uninstall(reactor)
        assert reactor.doIteration is dispatch
    finally:
        reactor._poller.close()  # noqa: SLF001


def test_nothing_is_installed_without_a_window_or_on_another_reactor():
    reactor = EPollReactor()
    try:
        assert reactor_idle.install(reactor, 0, lambda: True) is None
        assert "doIteration" not in reactor.__dict__
    finally:
        reactor._poller.close()  # noqa: SLF001

    class Other:
        def doPoll(self, timeout):
            pass

    assert reactor_idle.install(Other(), MOST, lambda: True) is None
    assert reactor_idle.dispatch_directly(Other()) is None


def test_threads_install_it_at_start_and_take_it_off_at_stop(monkeypatch):
    reactor = EPollReactor()
    try:
        threads = Threads(reactor, idle_spin=MOST)
        threads.start()
        try:
            assert isinstance(reactor.doIteration, IdleSpin) and threads.spin is reactor.doIteration
            assert isinstance(reactor.doPoll, DirectDispatch) and threads.dispatch is reactor.doPoll
            assert threads.spin.quiet == threads.all_idle and threads.all_idle()
            # a job on any pool (here a transfer's stand-in on the bulk pool) stops the looks
            go = threading.Event()
            threads.bulk(go.wait, 5)
            assert not threads.spin.quiet()
            go.set()
            for _ in range(500):
                if threads.spin.quiet():
                    break
                time.sleep(0.01)
            assert threads.spin.quiet()
        finally:
            threads.stop()
        assert "doIteration" not in reactor.__dict__ and "doPoll" not in reactor.__dict__
        assert threads.spin is None and threads.dispatch is None
        # one CPU only: looking would only keep the client from it; the events are still
        # handed out directly
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
        threads = Threads(reactor, idle_spin=MOST)
        threads.start()
        try:
            assert threads.spin is None
            assert isinstance(threads.dispatch, DirectDispatch) and reactor.doIteration is threads.dispatch
        finally:
            threads.stop()
        assert "doIteration" not in reactor.__dict__ and "doPoll" not in reactor.__dict__
    finally:
        reactor._poller.close()  # noqa: SLF001


def test_a_pool_is_busy_from_a_job_given_until_its_result_is_on_the_way_back():
    from appliance.threads import Pool

    class Reactor:  # callFromThread runs the callback at once: enough for the counts
        def callFromThread(self, fn, *args):
            fn(*args)

    pool = Pool(Reactor(), "appliance-test", 1, 1)
    pool.start()
    try:
        assert pool.idle
        go, started = threading.Event(), threading.Event()
        d = pool.run(lambda: (started.set(), go.wait(5)), (), {})
        assert not pool.idle
        assert started.wait(5)
        assert not pool.idle  # running
        go.set()
        results = []
        d.addCallback(results.append)
        for _ in range(500):
            if results:
                break
            time.sleep(0.01)
        assert results and pool.idle
    finally:
        pool.stop()


# -- what it relies on in Twisted ----------------------------------------------------------

# (function, sha256 of its source (first 16 hex digits), why)
PINNED = [
    (
        EPollReactor.doPoll,
        "09b62ae68ef01b4b",
        "IdleSpin calls it with 0 to handle what its look saw, and wraps it as doIteration; DirectDispatch replaces it",
    ),
    (
        EPollReactor._doReadOrWrite,  # noqa: SLF001
        "5ffee55b79492b00",
        "DirectDispatch._handle is this, with the logging context set up only for an error",
    ),
    (
        ReactorBase.mainLoop,
        "769125a86d0cd7e9",
        "it calls self.doIteration(timeout): the instance attribute install() sets",
    ),
]


@pytest.mark.parametrize("function, digest, why", PINNED, ids=[f.__qualname__ for f, _, _ in PINNED])
def test_the_parts_of_twisted_it_relies_on_are_as_recorded(function, digest, why):
    found = hashlib.sha256(inspect.getsource(function).encode()).hexdigest()[:16]
    assert found == digest, f"{function.__qualname__} changed (now {found}): re-read it; {why}"


def test_the_epoll_reactor_keeps_its_epoll_object_where_reactor_poller_looks():
    reactor = EPollReactor()
    try:
        poller = reactor_idle.reactor_poller(reactor)
        assert isinstance(poller, select.epoll) and not poller.closed
        assert EPollReactor.doIteration is EPollReactor.doPoll
    finally:
        reactor._poller.close()  # noqa: SLF001
