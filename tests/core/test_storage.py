"""Storage per organisation in the core: measured by a walk on the work pool at start
and every interval (an injected clock), read from the cache in between."""

from __future__ import annotations

import os
import threading
import time

import pytest
import pytest_twisted
from twisted.internet import task
from twisted.internet.defer import Deferred

from appliance.core.storage import REFRESH, Stopped, StorageUsage, distinct_roots, measure_folders

from .conftest import make_account


async def until(condition, timeout: float = 20.0) -> None:
    """Let the real reactor run (walks are in threads) until `condition()` holds."""
    from twisted.internet import reactor

    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await task.deferLater(reactor, 0.01, lambda: None)


async def settle(seconds: float = 0.2) -> None:
    from twisted.internet import reactor

    await task.deferLater(reactor, seconds, lambda: None)


@pytest_twisted.ensureDeferred
async def test_every_organisation_is_measured_at_start_then_every_interval(core):
    account = await make_account(core)
    org_id = account.organisation.id
    root = core.files.source_root(account.source)
    (root / "alice").mkdir(parents=True, exist_ok=True)
    (root / "alice" / "one.bin").write_bytes(b"1" * 1000)
    clock = task.Clock()
    clock.advance(time.time())
    storage = StorageUsage(core.store, core.threads, core.files, clock)
    assert REFRESH == 600
    storage.start()
    try:
        await until(lambda: storage.current(org_id)["storage_bytes"] == 1000)
        first = storage.current(org_id)
        assert first["storage_files"] == 1 and first["storage_measured_at"]
        (root / "alice" / "two.bin").write_bytes(b"2" * 500)
        clock.advance(REFRESH - 1)
        await settle()
        assert storage.current(org_id)["storage_bytes"] == 1000  # read from the cache until the next round
        clock.advance(1)
        await until(lambda: storage.current(org_id)["storage_bytes"] == 1500)
        assert storage.current(org_id)["storage_files"] == 2
        assert storage.current(org_id)["storage_measured_at"] > first["storage_measured_at"]
    finally:
        storage.stop()


@pytest_twisted.ensureDeferred
async def test_walks_of_one_organisation_at_the_same_time_are_one_walk(core, monkeypatch):
    account = await make_account(core)
    org_id = account.organisation.id
    storage = StorageUsage(core.store, core.threads, core.files, task.Clock())
    walks = []
    original = measure_folders

    def counted(folders, stopping):
        walks.append(folders)
        return original(folders, stopping)

    monkeypatch.setattr("appliance.core.storage.measure_folders", counted)
    results = [Deferred.fromCoroutine(storage.measure(org_id)) for _ in range(3)]  # all started at once
    measures = [await r for r in results]
    assert len(walks) == 1 and measures[0] == measures[1] == measures[2]


def test_roots_inside_others_count_once(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "ab").mkdir()
    os.symlink(tmp_path / "a", tmp_path / "link-to-a")
    roots = distinct_roots(
        [str(tmp_path / "a"), str(tmp_path / "a" / "b"), str(tmp_path / "ab"), str(tmp_path / "link-to-a"),
         str(tmp_path / "missing")]
    )  # fmt: skip
    assert roots == [str(tmp_path / "a"), str(tmp_path / "ab")]  # "ab" is not inside "a"


def test_a_walk_gives_up_when_the_daemon_stops(tmp_path):
    (tmp_path / "f").write_bytes(b"x")
    stopping = threading.Event()
    assert measure_folders([str(tmp_path)], stopping) == (1, 1)
    stopping.set()
    with pytest.raises(Stopped):
        measure_folders([str(tmp_path)], stopping)
