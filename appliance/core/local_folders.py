"""Which organisation owns which local folder. Local sources of different organisations
never overlap: neither folder is the other nor inside it, compared after resolving
symlinks and `..` (real paths), so one tenant's admin cannot reach another's files by
pointing a source at their folder, a folder inside it, a folder holding it or a link
into it. An organisation's own folder in the data dir (files/<subdomain>) is kept for it
even when no source uses it. Sources of one organisation may overlap (a source inside
its default one is how a team gets a narrower view).

A folder stays its organisation's until its files are gone: deleting a local source
outside the organisation's own folder either removes its files (when the admin asks for
that) or keeps the folder reserved for the organisation (`reserved_folders`), listed for
the operator, who may release it. A deleted organisation keeps its rows, so its folders
stay its own likewise.

Every write that gives a local source a folder runs under one lock (`exclusively`) with
the check, so two organisations cannot claim overlapping folders at the same moment."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from twisted.internet import defer

from ..errors import Invalid, NotFound
from ..store import Store
from ..store import sources as source_queries
from ..threads import Threads
from .audit import AuditLog
from .authority import require_operator

T = TypeVar("T")

TAKEN = (
    "That folder is used by another organisation: it is their folder, lies inside it or holds it "
    "(links and '..' are followed). Choose a folder no other organisation uses; the operator can "
    "see which folders are taken."
)


@dataclass(frozen=True)
class Folder:
    path: str  # the real path (symlinks and '..' resolved)
    org_id: int
    org_name: str
    subdomain: str
    source_id: int | None  # None: the organisation's own folder in the data dir, or a reserved folder
    source_name: str
    org_status: str = "active"
    reserved: dict | None = None  # a folder kept after its source was deleted: {id, since, source}


def overlap(a: str, b: str) -> bool:
    """One real path is the other or inside it."""
    return a == b or Path(a).is_relative_to(b) or Path(b).is_relative_to(a)


class LocalFolders:
    def __init__(self, store: Store, threads: Threads, data_dir: Path, audit: AuditLog):
        self._store = store
        self._audit = audit
        self._threads = threads
        self._data_dir = Path(data_dir)
        self._lock = defer.DeferredLock()

    async def folders(self) -> list[Folder]:
        """Every organisation's own folder and every local source's folder, resolved."""
        sources, organisations, reserved = await self._store.run(source_queries.local_folders)
        return await self._threads.work(self._resolve, sources, organisations, reserved)

    def _resolve(self, sources: list[dict], organisations: list[dict], reserved: list[dict]) -> list[Folder]:
        found = [
            Folder(os.path.realpath(self._data_dir / "files" / o["subdomain"]), o["org_id"], o["org_name"],
                   o["subdomain"], None, "", o["org_status"])
            for o in organisations
        ]  # fmt: skip
        for s in sources:
            if not s["path"]:
                continue
            found.append(
                Folder(os.path.realpath(self._data_dir / s["path"]), s["org_id"], s["org_name"], s["subdomain"],
                       s["source_id"], s["source_name"], s["org_status"])
            )  # fmt: skip
        for r in reserved:
            kept = {"id": r["reserved_id"], "since": r["reserved_at"], "source": r["source_name"]}
            found.append(
                Folder(os.path.realpath(self._data_dir / r["path"]), r["org_id"], r["org_name"], r["subdomain"],
                       None, "", r["org_status"], kept)
            )  # fmt: skip
        return found

    async def refuse_taken(
        self, org_id: int | None, folder: Path | str, field: str = "config", message: str = TAKEN
    ) -> None:
        """Refuse (Invalid on `field`) a folder that overlaps one of another organisation
        (`org_id` None: of any organisation). The message never names the other one."""
        real = await self._threads.work(os.path.realpath, folder)
        for other in await self.folders():
            if other.org_id != org_id and overlap(real, other.path):
                raise Invalid(message, {field: [message]})

    async def exclusively(self, work: Callable[[], Awaitable[T]]) -> T:
        """Run `work` (check a folder, then write it) while no other such work runs."""
        await self._lock.acquire()
        try:
            return await work()
        finally:
            self._lock.release()

    async def listing(self, account) -> list[dict]:
        """For the operator: each local source's folder with the organisation that owns it
        (and each organisation's own folder in the data dir), by path; `shared_with` names
        other organisations whose folders overlap it (made before this rule, or by hand)."""
        require_operator(account.profile)
        folders = await self.folders()
        by_source = {(f.org_id, f.path) for f in folders if f.source_id is not None}
        rows = []
        for f in sorted(folders, key=lambda f: (f.path, f.org_id, f.source_id or 0)):
            if f.source_id is None and f.reserved is None and (f.org_id, f.path) in by_source:
                continue  # the organisation's folder is its default source's: listed once
            shared = sorted({o.org_id for o in folders if o.org_id != f.org_id and overlap(f.path, o.path)})
            rows.append(
                {
                    "path": f.path,
                    "organisation": {
                        "id": f.org_id, "name": f.org_name, "subdomain": f.subdomain, "status": f.org_status
                    },
                    "source": {"id": f.source_id, "name": f.source_name} if f.source_id is not None else None,
                    "reserved": f.reserved,
                    "shared_with": shared,
                }
            )  # fmt: skip
        return rows

    async def release(self, account, reserved_id: int) -> dict:
        """For the operator: forget a reserved folder, so any organisation may use it from
        now on (its files, if any are left, with it). The row it was: {path, org_id, org_name}."""
        require_operator(account.profile)
        row = await self.exclusively(lambda: self._store.run(source_queries.release_folder, reserved_id))
        if row is None:
            raise NotFound("No such reserved folder: it may have been released already.")
        message = (
            f"{account.profile.username} released the folder {row['path']}, kept for {row['org_name']} since "
            f"its source {row['source_name']} was deleted: any organisation may use it now"
        )
        await self._audit.acted(account, "source", message, path=row["path"], org_id=row["org_id"])
        return row
