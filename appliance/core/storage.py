"""How much each organisation keeps: bytes and files under its local sources' folders.

A walk of a big tree takes long, so the operator's list never walks: it reads the
figures last measured. Every organisation is measured in the background on the work
pool (one at a time, so a big tenant holds one worker, not the pool) every REFRESH
seconds, and once as soon as the list meets an organisation never measured; the
operator can also have one measured now. Sources that are not local (S3, SFTP)
are not counted. The clock is injected so tests advance time instead of waiting.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from datetime import UTC, datetime

from twisted.internet import defer, task
from twisted.python.failure import Failure

from ..deferreds import spawn
from ..models import Source, to_iso
from ..storage.local.tree import folder_usage
from ..store import Store, queries
from ..store import operator as operator_queries
from ..threads import Threads
from .files import FilesService

REFRESH = 600.0  # seconds between two measurements of every organisation


@dataclass(frozen=True)
class Measure:
    bytes: int
    files: int
    measured_at: str  # ISO 8601, when the walk ended


def distinct_roots(folders: list[str]) -> list[str]:
    """The existing folders among `folders`, each once, leaving out any inside another
    (two sources over one folder, or one source inside another, count once)."""
    real = sorted({os.path.realpath(f) for f in folders if os.path.isdir(f)})
    kept: list[str] = []
    for folder in real:
        if not any(folder == k or folder.startswith(k.rstrip(os.sep) + os.sep) for k in kept):
            kept.append(folder)
    return kept


class Stopped(Exception):
    """The daemon is stopping: a walk under way gives up."""


def measure_folders(folders: list[str], stopping: threading.Event) -> tuple[int, int]:
    """Bytes and files under the folders (on the work pool), counted as quotas count
    them; a walk under way gives up when the daemon stops (it would hold the shutdown,
    which joins the pool, for a big tree)."""

    def checkpoint() -> None:
        if stopping.is_set():
            raise Stopped()

    return folder_usage(distinct_roots(folders), checkpoint)


class StorageUsage:
    def __init__(self, store: Store, threads: Threads, files: FilesService, clock, interval: float = REFRESH):
        self._store = store
        self._threads = threads
        self._files = files
        self._clock = clock
        self._interval = interval
        self._measures: dict[int, Measure] = {}
        self._in_flight: dict[int, list[defer.Deferred]] = {}  # org id -> callers waiting for its walk
        self._loop: task.LoopingCall | None = None
        self._stopping = threading.Event()

    def start(self) -> None:
        self._stopping.clear()
        # the loop waits for a round to end before counting the interval
        self._loop = task.LoopingCall(lambda: spawn(self._quietly(self.refresh()), "measuring storage"))
        self._loop.clock = self._clock
        self._loop.start(self._interval, now=True)

    def stop(self) -> None:
        self._stopping.set()
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self._loop = None

    def _now(self) -> str:
        return to_iso(datetime.fromtimestamp(self._clock.seconds(), UTC))

    async def refresh(self) -> int:
        """Measure every organisation, one after the other; how many were measured."""
        org_ids = await self._store.run(operator_queries.organisation_ids)
        sources = await self._store.run(queries.all_sources)
        for org_id in org_ids:
            await self._measure(org_id, [s for s in sources if s.org_id == org_id])
        for gone in set(self._measures) - set(org_ids):
            self._measures.pop(gone, None)
        return len(org_ids)

    async def measure(self, org_id: int) -> Measure:
        """Measure one organisation now (a walk already under way is shared)."""
        return await self._measure(org_id, None)

    async def _measure(self, org_id: int, sources: list[Source] | None) -> Measure:
        """Walk the organisation's local sources (read here when not given). Callers
        arriving while a walk of it is under way, even one still reading its sources,
        share that walk's figures."""
        waiters = self._in_flight.get(org_id)
        if waiters is not None:
            waiting: defer.Deferred = defer.Deferred()
            waiters.append(waiting)
            return await waiting
        self._in_flight[org_id] = waiters = []
        try:
            if sources is None:
                sources = [s for s in await self._store.run(queries.all_sources) if s.org_id == org_id]
            folders = [str(self._files.source_root(s)) for s in sources if s.type == "local"]
            total, files = await self._threads.bulk(measure_folders, folders, self._stopping)
            measure = Measure(total, files, self._now())
            self._measures[org_id] = measure
        except BaseException:
            failed = Failure()
            for waiting in waiters:
                waiting.errback(failed)
            raise
        finally:
            self._in_flight.pop(org_id, None)
        for waiting in waiters:
            waiting.callback(measure)
        return measure

    @staticmethod
    async def _quietly(work) -> None:
        try:
            await work
        except Stopped:
            pass

    def current(self, org_id: int) -> dict:
        """The last figures of an organisation for the operator's list (nulls until the
        first walk ends; one never measured starts being measured in the background)."""
        measure = self._measures.get(org_id)
        if measure is None:
            if org_id not in self._in_flight:
                spawn(self._quietly(self.measure(org_id)), f"measuring the storage of organisation {org_id}")
            return {"storage_bytes": None, "storage_files": None, "storage_measured_at": None}
        return {
            "storage_bytes": measure.bytes,
            "storage_files": measure.files,
            "storage_measured_at": measure.measured_at,
        }
