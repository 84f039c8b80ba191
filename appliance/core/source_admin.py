"""Sources as admins see and change them. Local sources only for now: a folder
under the data dir's own folder for the organisation or under the configured
[sources] local_roots, never another organisation's folder, so a tenant's admin
cannot reach the host's disk."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

from ..errors import Invalid, NotFound
from ..models import Source, to_iso
from ..store import Store, queries
from ..store import sources as source_queries
from . import validation
from .auth import Account


def view(source: Source) -> dict:
    return {
        "id": source.id,
        "name": source.name,
        "type": source.type,
        "config": {"path": source.config.get("path", "")},
        "read_only": source.read_only,
        "status": source.status,
        "last_error": source.last_error,
    }


def folder_problem(path: Path) -> str | None:
    if not path.is_dir():
        return f"The folder {path} does not exist."
    if not os.access(path, os.W_OK | os.X_OK):
        return f"The appliance cannot write to {path}."
    return None


class SourceAdmin:
    def __init__(self, store: Store, threads, files, settings, data_dir: Path, clock):
        self._store = store
        self._threads = threads
        self._files = files
        self._settings = settings
        self._data_dir = Path(data_dir)
        self._clock = clock

    async def get(self, account: Account, source_id: int) -> Source:
        source = await self._store.run(queries.get_source, account.organisation.id, source_id)
        if source is None:
            raise NotFound("No such source.")
        return source

    async def _allowed_path(self, account: Account, raw) -> str:
        """The stored path: relative to the data dir for the organisation's own folder."""
        if not isinstance(raw, str) or not raw.strip() or "\x00" in raw:
            raise Invalid("Give the folder's path.", {"config": ["Give the folder's path as config.path."]})
        own = (self._data_dir / "files" / account.organisation.subdomain).resolve()
        wanted = Path(raw.strip())
        candidate = (own / wanted).resolve() if not wanted.is_absolute() else Path(os.path.realpath(wanted))
        roots = [Path(os.path.realpath(r)) for r in self._settings.sources.local_roots]
        others = await self._store.run(source_queries.other_organisations, account.organisation.id)
        foreign = [(self._data_dir / "files" / sub).resolve() for sub in others]
        if any(candidate == f or candidate.is_relative_to(f) for f in foreign):
            message = "That folder belongs to another organisation."
            raise Invalid(message, {"config": [message]})
        if candidate == own or candidate.is_relative_to(own):
            return str(candidate.relative_to(self._data_dir.resolve()))
        if any(candidate == r or candidate.is_relative_to(r) for r in roots):
            return str(candidate)
        allowed = ", ".join(str(r) for r in roots) or "none configured"
        message = (
            "Local sources must be inside the organisation's own folder or a folder the operator allowed "
            f"([sources] local_roots: {allowed})."
        )
        raise Invalid(message, {"config": [message]})

    async def values(self, account: Account, body: dict, existing: Source | None = None) -> dict:
        values: dict = {}
        errors: dict[str, list[str]] = {}
        if "name" in body or existing is None:
            try:
                values["name"] = validation.name(str(body.get("name", "")), "name")
            except Invalid as e:
                errors.update(e.fields)
        kind = body.get("type", existing.type if existing else "local")
        if kind != "local":
            errors["type"] = ["Only local sources are available in this release (S3 and SFTP come later)."]
        if "read_only" in body:
            if not isinstance(body["read_only"], bool):
                errors["read_only"] = ["Must be true or false."]
            else:
                values["read_only"] = body["read_only"]
        if "config" in body or existing is None:
            config = body.get("config") if isinstance(body.get("config"), dict) else {}
            try:
                values["config"] = {"path": await self._allowed_path(account, config.get("path"))}
            except Invalid as e:
                errors.update(e.fields)
        if errors:
            raise Invalid("Some fields are not valid.", errors)
        if "name" in values and await self._store.run(
            source_queries.name_taken, account.organisation.id, values["name"], existing.id if existing else None
        ):
            raise Invalid("That name is taken.", {"name": ["Another source has this name."]})
        if existing is None:
            values.update(type="local", org_id=account.organisation.id, created_at=to_iso(self._now()))
        return values

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self._clock.seconds(), UTC)

    async def check(self, account: Account, source: Source) -> Source:
        """Try the source and store what was found."""
        path = self._files.source_root(source)
        problem = await self._threads.work(folder_problem, path)
        await self._store.run(
            source_queries.update_source,
            account.organisation.id,
            source.id,
            {"status": "error" if problem else "ok", "last_error": problem or "", "checked_at": to_iso(self._now())},
        )
        return await self.get(account, source.id)
