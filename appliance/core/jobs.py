"""Periodic housekeeping on the reactor: trials that end turn the organisation to
payment_missing; log rows older than an organisation's retention are removed.
The clock is injected so tests advance time instead of waiting."""

from __future__ import annotations

from datetime import UTC, datetime

from twisted.internet import task
from twisted.logger import Logger

from ..deferreds import spawn
from ..models import LogEntry, to_iso
from ..store import Store
from ..store import jobs as job_queries
from .audit import AuditLog, clean

log = Logger()

TRIAL_CHECK = 300.0  # seconds between trial checks
RETENTION_CHECK = 86400.0  # once a day


class Jobs:
    def __init__(self, store: Store, audit: AuditLog, clock):
        self._store = store
        self._audit = audit
        self._clock = clock
        self._loops: list[task.LoopingCall] = []

    def start(self) -> None:
        for interval, job, what in (
            (TRIAL_CHECK, self.expire_trials, "expiring trials"),
            (RETENTION_CHECK, self.apply_retention, "applying log retention"),
        ):
            loop = task.LoopingCall(lambda job=job, what=what: spawn(job(), what))
            loop.clock = self._clock
            loop.start(interval, now=True)
            self._loops.append(loop)

    def stop(self) -> None:
        for loop in self._loops:
            if loop.running:
                loop.stop()
        self._loops = []

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self._clock.seconds(), UTC)

    async def expire_trials(self) -> int:
        ended = await self._store.run(job_queries.expire_trials, to_iso(self._now()))
        for org_id, name in ended:
            await self._audit.record(
                LogEntry(
                    org_id=org_id,
                    protocol="system",
                    action="billing",
                    message=f"The trial of {clean(name)} ended: the organisation is now waiting for payment",
                )
            )
        return len(ended)

    async def apply_retention(self) -> int:
        removed = await self._store.run(job_queries.apply_retention, self._clock.seconds())
        if removed:
            log.info("log retention removed {count} old log rows", count=removed)
        return removed
