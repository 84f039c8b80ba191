"""An organisation's settings and branding: what its admins may change (name, colour,
terms, the logo), the public branding of a subdomain, and the logo files, which
live in the data dir's branding/ folder under a name that changes with their
content (so they can be cached for ever)."""

from __future__ import annotations

import hashlib
import os
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ..errors import NotFound, PermissionDenied
from ..models import Organisation
from ..store import Store, queries
from ..threads import Threads
from . import images
from .audit import AuditLog, clean
from .auth import Account
from .organisations import branding, describe, describe_organisation_change, organisation_changes

LOGO_URL = "/api/portal/branding/logo/{org_id}/{name}"
LOGO_NAME = re.compile(r"^[0-9a-f]{32}\.(png|jpg|svg)$")
LOGO_FILE = re.compile(r"^[0-9]+-[0-9a-f]{32}\.(png|jpg|svg)$")  # in the data dir's branding/
CONTENT_TYPES = {"png": "image/png", "jpg": "image/jpeg", "svg": "image/svg+xml"}
NOT_ALLOWED = "You do not have permission to perform this action."


@dataclass(frozen=True)
class LogoFile:
    data: bytes
    content_type: str


def _write_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(mode=0o750, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


class OrganisationSettings:
    def __init__(self, store: Store, threads: Threads, audit: AuditLog, data_dir: Path, clock, open_sessions=None):
        self._store = store
        self._open_sessions = open_sessions
        self._threads = threads
        self._audit = audit
        self._folder = Path(data_dir) / "branding"
        self._clock = clock

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self._clock.seconds(), UTC)

    def describe(self, organisation: Organisation) -> dict:
        return describe(organisation, self._now())

    @staticmethod
    def _own(account: Account, org_id: int, *, admin: bool) -> None:
        """Another organisation's id is a 404; a member who is not an admin may not change it."""
        if org_id != account.organisation.id:
            raise NotFound("No such organisation.")
        if admin and not account.profile.is_admin:
            raise PermissionDenied(NOT_ALLOWED)

    async def get(self, account: Account, org_id: int) -> dict:
        self._own(account, org_id, admin=False)
        return self.describe(account.organisation)

    async def change(self, account: Account, org_id: int, body: dict, address: str) -> dict:
        """PATCH by the organisation's admins: name, branding on/off, colour, terms, require_tls."""
        self._own(account, org_id, admin=True)
        changes = organisation_changes(body)
        changed = describe_organisation_change(account.organisation, changes)
        if changed:  # only what really changed is written and told
            await self._store.run(queries.update_organisation, org_id, changes)
            await self._audit.acted(
                account,
                "organisation",
                f"{clean(account.profile.username)} changed the organisation: {changed}",
                address=address,
            )
            if changes.get("require_tls") and self._open_sessions is not None:
                await self._open_sessions.check(org_id=org_id)  # members' plain-FTP sessions end
        return self.describe(await self._store.run(queries.get_organisation, org_id))

    async def public_branding(self, subdomain: str) -> dict:
        subdomain = subdomain.strip().lower()
        organisation = await self._store.run(queries.organisation_by_subdomain, subdomain) if subdomain else None
        return branding(organisation)

    # -- the logo ------------------------------------------------------------------------

    def _path(self, org_id: int, name: str) -> Path:
        return self._folder / f"{org_id}-{name}"

    async def set_logo(self, account: Account, org_id: int, data: bytes, address: str) -> dict:
        """Check the file by its bytes (PNG, JPEG, or SVG rewritten to a safe subset),
        store it under its hash, point branding_logo at it and drop the previous one."""
        self._own(account, org_id, admin=True)
        logo = await self._threads.bulk(images.logo, data)
        name = f"{hashlib.sha256(logo.data).hexdigest()[:32]}.{logo.extension}"
        await self._threads.work(_write_atomically, self._path(org_id, name), logo.data)
        url = LOGO_URL.format(org_id=org_id, name=name)
        previous = (await self._store.run(queries.get_organisation, org_id)).branding_logo
        await self._store.run(queries.update_organisation, org_id, {"branding_logo": url})
        if previous and previous != url:
            await self._discard(org_id, previous)
        await self._audit.acted(
            account,
            "organisation_logo",
            f"{clean(account.profile.username)} uploaded a new logo ({logo.content_type}, {len(logo.data)} bytes)",
            address=address,
        )
        return self.describe(await self._store.run(queries.get_organisation, org_id))

    async def remove_logo(self, account: Account, org_id: int, address: str) -> dict:
        self._own(account, org_id, admin=True)
        previous = account.organisation.branding_logo
        if previous:
            await self._store.run(queries.update_organisation, org_id, {"branding_logo": None})
            await self._discard(org_id, previous)
            await self._audit.acted(
                account, "organisation_logo", f"{clean(account.profile.username)} removed the logo", address=address
            )
        return self.describe(await self._store.run(queries.get_organisation, org_id))

    async def _discard(self, org_id: int, url: str) -> None:
        name = url.rsplit("/", 1)[-1]
        if LOGO_NAME.match(name):
            await self._threads.work(self._path(org_id, name).unlink, missing_ok=True)

    async def logo(self, org_id: int, name: str) -> LogoFile:
        """The current logo of an organisation that is not deleted, for anyone (it is public branding)."""
        if not LOGO_NAME.match(name):
            raise NotFound("No such logo.")
        organisation = await self._store.run(queries.get_organisation, org_id)
        if (
            organisation is None
            or organisation.status == "deleted"
            or organisation.branding_logo != LOGO_URL.format(org_id=org_id, name=name)
        ):
            raise NotFound("No such logo.")
        try:
            data = await self._threads.work(self._path(org_id, name).read_bytes)
        except FileNotFoundError:
            raise NotFound("No such logo.") from None
        return LogoFile(data, CONTENT_TYPES[name.rsplit(".", 1)[1]])
