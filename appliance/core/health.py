"""Readiness: can this daemon do its job right now? (database writable, sources usable)"""

from __future__ import annotations

import os
from pathlib import Path

from ..store import Store, queries


def _database_writable(db) -> None:
    db.execute("BEGIN IMMEDIATE")
    db.execute("ROLLBACK")


MIN_FREE = 1 << 20  # bytes the data dir's disk needs for the database to go on committing


def _free_bytes(path: str) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def _local_folder_problem(path: str) -> str | None:
    if not os.path.isdir(path):
        return "folder missing"
    if not os.access(path, os.W_OK | os.X_OK):
        return "folder not writable"
    return None


class Health:
    """Readiness of this daemon, for the ops endpoints."""

    def __init__(self, store: Store, threads, files):
        self._store = store
        self._threads = threads
        self._files = files

    async def readiness(self) -> tuple[bool, dict[str, str]]:
        """(ready, {check: "ok" or what is wrong}); a source problem is named by the source."""
        checks: dict[str, str] = {}
        try:
            await self._store.run(_database_writable)
            checks["database"] = "ok"
        except Exception as e:  # noqa: BLE001 - reported, not raised
            checks["database"] = f"not writable: {e}"
            return False, checks
        free = await self._threads.work(_free_bytes, str(Path(self._store.path).parent))
        if free < MIN_FREE:  # SQLite can no longer commit: sign-ins and audit rows fail
            checks["data disk"] = f"full: {free} bytes free"
        for source in await self._store.run(queries.all_sources):
            if source.type != "local":
                continue
            problem = await self._threads.work(_local_folder_problem, str(self._files.source_root(source)))
            checks[f"source {source.id} ({source.name}, organisation {source.org_id})"] = problem or "ok"
        return all(value == "ok" for value in checks.values()), checks
