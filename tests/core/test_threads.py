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
