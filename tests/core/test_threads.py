"""Where the daemon's threads run (appliance/threads.py): the reactor, the database
thread and the short-work pool on one CPU, the other pools on every CPU."""

from __future__ import annotations

import ftplib
import os
from pathlib import Path

import pytest
import pytest_twisted
from twisted.internet import reactor

from appliance.threads import Threads, current_cpu

from ..helpers import daemon_with

ALLOWED = os.sched_getaffinity(0)
needs_two_cpus = pytest.mark.skipif(len(ALLOWED) < 2, reason="pinning needs a second CPU to differ from")


async def _where(threads: Threads) -> dict[str, set[int]]:
    """The CPUs each pool's thread may run on, asked from inside it."""
    return {
        "db": await threads.db(os.sched_getaffinity, 0),
        "work": await threads.work(os.sched_getaffinity, 0),
        "bulk": await threads.bulk(os.sched_getaffinity, 0),
        "net": await threads.net(os.sched_getaffinity, 0),
    }


@needs_two_cpus
@pytest_twisted.ensureDeferred
async def test_pinned_the_reactor_database_and_work_share_a_cpu_the_rest_use_all():
    threads = Threads(reactor, pin=True)
    try:
        threads.start()
        cpu = threads.cpu
        assert cpu in ALLOWED
        assert os.sched_getaffinity(0) == {cpu}  # the calling thread: the daemon's reactor
        assert current_cpu() == cpu
        assert await _where(threads) == {"db": {cpu}, "work": {cpu}, "bulk": ALLOWED, "net": ALLOWED}
        stop = threads.transfer_slot()
        assert stop is not None
        assert await threads.transfer(stop, os.sched_getaffinity, 0) == ALLOWED
    finally:
        threads.stop()
        os.sched_setaffinity(0, ALLOWED)
    assert os.sched_getaffinity(0) == ALLOWED  # stop gave the calling thread every CPU back


@needs_two_cpus
@pytest_twisted.ensureDeferred
async def test_a_refused_pinning_is_one_line_in_the_log_and_the_pools_run_unpinned(monkeypatch):
    """A system-call filter that answers sched_setaffinity with EPERM (systemd's
    `SystemCallFilter=~@resources`, a container's seccomp profile) stand-in here: the real
    one is tests/packaging/test_as_shipped.py's, under the shipped unit."""
    from twisted.logger import globalLogPublisher

    def refused(pid, cpus):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "sched_setaffinity", refused)
    lines = []
    globalLogPublisher.addObserver(lines.append)
    threads = Threads(reactor, pin=True)
    try:
        threads.start()
        assert threads.cpu is None
        assert await _where(threads) == {"db": ALLOWED, "work": ALLOWED, "bulk": ALLOWED, "net": ALLOWED}
    finally:
        threads.stop()
        globalLogPublisher.removeObserver(lines.append)
    said = [e for e in lines if "pin_reactor" in e.get("log_format", "")]
    assert len(said) == 1 and said[0]["error"] == "Operation not permitted"


@pytest_twisted.ensureDeferred
async def test_unpinned_every_thread_may_run_anywhere():
    threads = Threads(reactor)
    try:
        threads.start()
        assert threads.cpu is None
        assert os.sched_getaffinity(0) == ALLOWED
        assert await _where(threads) == {"db": ALLOWED, "work": ALLOWED, "bulk": ALLOWED, "net": ALLOWED}
    finally:
        threads.stop()


def threads_of(pid: int) -> list[tuple[str, str]]:
    """(kernel name, Cpus_allowed_list) of each thread of process `pid`, the main one first."""
    found = []
    for tid in sorted(os.listdir(f"/proc/{pid}/task"), key=lambda tid: int(tid) != pid):
        status = Path(f"/proc/{pid}/task/{tid}/status").read_text()
        fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
        found.append((fields["Name"].strip(), fields["Cpus_allowed_list"].strip()))
    return found


def _cpu_list(cpus) -> str:
    """A set of CPUs as the kernel lists them ("0-1", "3")."""
    ordered = sorted(cpus)
    if ordered == list(range(ordered[0], ordered[-1] + 1)) and len(ordered) > 1:
        return f"{ordered[0]}-{ordered[-1]}"
    return ",".join(map(str, ordered))


@needs_two_cpus
@pytest.mark.parametrize("pin", [True, False])
def test_the_daemon_pins_its_reactor_unless_told_not_to(tmp_path, pin):
    daemon = daemon_with(tmp_path, server__pin_reactor=pin)
    try:
        daemon.add_profile("pinned")
        with ftplib.FTP() as ftp:  # a sign-in: bcrypt on the bulk pool, the database thread busy
            ftp.connect("127.0.0.1", daemon.ftp_port, timeout=30)
            ftp.login("pinned", "user-password-1")
            ftp.nlst()  # a listing: the work pool
        threads = threads_of(daemon.process.pid)
    finally:
        daemon.stop()
    (_, main), pools = threads[0], {}
    for name, cpus in threads[1:]:
        pools.setdefault(name, set()).add(cpus)
    everywhere = _cpu_list(ALLOWED)
    assert {"appliance-db", "appliance-work", "appliance-bulk"} <= pools.keys(), threads
    if pin:
        assert main != everywhere and "," not in main and "-" not in main, main  # one CPU
        assert pools["appliance-db"] == pools["appliance-work"] == {main}
        assert pools["appliance-bulk"] == {everywhere}
    else:
        assert main == everywhere
        assert all(cpus == {everywhere} for cpus in pools.values()), pools


@pytest_twisted.ensureDeferred
async def test_a_pool_grows_to_its_limit_passes_errors_back_and_finishes_its_queue_on_stop():
    import threading
    import time

    from twisted.internet import defer

    from appliance.threads import Pool

    pool = Pool(reactor, "appliance-test", 0, 3)
    pool.start()
    try:
        names = await defer.gatherResults([pool.run(lambda: (time.sleep(0.1), threading.get_native_id())[1], (), {})
                                           for _ in range(6)])  # fmt: skip
        assert len(set(names)) == 3  # three threads at most, each started only when a job would wait
        assert Path(f"/proc/self/task/{names[0]}/comm").read_text().strip() == "appliance-test"
        with pytest.raises(ZeroDivisionError):
            await pool.run(lambda: 1 // 0, (), {})
        assert await pool.run(int, ("42",), {"base": 8}) == 34
    finally:
        done = []
        queued = [pool.run(lambda: (time.sleep(0.05), done.append(1)), (), {}) for _ in range(5)]
        pool.stop()  # waits for the queued jobs
        assert len(done) == 5
        for d in queued:
            d.addErrback(lambda _: None)
    with pytest.raises(RuntimeError):
        pool.run(int, ("1",), {})


@pytest_twisted.ensureDeferred
async def test_a_pool_that_cannot_start_a_thread_uses_the_ones_it_has_or_says_so(monkeypatch):
    import threading

    from appliance.threads import Pool

    busy = Pool(reactor, "appliance-test", 1, 4)  # one thread, started before the limit is hit
    empty = Pool(reactor, "appliance-test", 0, 4)
    busy.start()
    empty.start()
    try:

        def refuse(self):
            raise RuntimeError("can't start new thread")

        monkeypatch.setattr(threading.Thread, "start", refuse)
        jobs = [busy.run(int, (str(n),), {}) for n in range(3)]  # more jobs than idle threads
        with pytest.raises(RuntimeError):
            empty.run(int, ("1",), {})
        monkeypatch.undo()
        assert [await job for job in jobs] == [0, 1, 2]
    finally:
        monkeypatch.undo()
        busy.stop()
        empty.stop()


class _Back:
    """A reactor's callFromThread whose calls the test runs when it says."""

    def __init__(self):
        import queue

        self.calls = queue.SimpleQueue()

    def callFromThread(self, fn, *args):  # noqa: N802 - Twisted's name
        self.calls.put((fn, args))

    def run_one(self) -> None:
        fn, args = self.calls.get(timeout=10)
        fn(*args)


def _until_idle(pool) -> None:
    """Until the pool's thread waits for a job (it is free again shortly after each one)."""
    import time

    for _ in range(5000):
        if pool._idle:  # noqa: SLF001
            return
        time.sleep(0.001)
    raise AssertionError("the pool's thread never came back for work")


def _outcome(d) -> list:
    got: list = []
    d.addBoth(got.append)
    return got


def test_a_jobs_deferred_never_fires_before_the_caller_has_it():
    """Even an instant job's result comes back through the reactor's loop (callFromThread):
    a caller's callbacks never run inside `run`, so no caller can be re-entered by it."""
    from appliance.threads import Pool

    back = _Back()
    pool = Pool(back, "appliance-test", 1, 1)
    pool.start()
    try:
        for _ in range(50):
            _until_idle(pool)
            got = _outcome(pool.run(int, ("42",), {}))
            assert got == []  # not before the loop hands it back
            back.run_one()
            assert got == [42]
        failure = _outcome(pool.run(lambda: 1 // 0, (), {}))
        assert failure == []
        back.run_one()
        assert failure[0].check(ZeroDivisionError)
    finally:
        pool.stop()


@pytest_twisted.ensureDeferred
async def test_the_database_and_work_pools_answer_through_the_reactor():
    threads = Threads(reactor)
    threads.start()
    try:
        for run in (threads.db, threads.work, threads.bulk, threads.net):
            d = run(int, "5")
            assert not d.called  # the reactor is running this coroutine: it cannot have come back
            assert await d == 5
    finally:
        threads.stop()
