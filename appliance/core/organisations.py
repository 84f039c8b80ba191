"""Organisations: first-run setup, creating an organisation with its default
local source and first admin, and the operator's view of every organisation
(list, storage used, status and trial changes, each audited)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from ..errors import AlreadyExists, Invalid, NotFound
from ..models import ORG_STATUSES, PERMISSIONS, PROTOCOLS, LogEntry, Organisation, from_iso, to_iso
from ..store import Store, queries
from ..store import operator as operator_queries
from ..threads import Threads
from . import validation
from .audit import AuditLog, clean
from .authority import require_operator
from .changes import Field, describe_change
from .local_folders import LocalFolders
from .passwords import Passwords, profile_scope


@dataclass(frozen=True)
class Created:
    org_id: int
    source_id: int
    profile_id: int
    subdomain: str


OPERATOR_OWN = "The operator's own organisation must stay usable."


class Organisations:
    def __init__(
        self, store: Store, threads: Threads, passwords: Passwords, audit: AuditLog, files_root: Path, clock,
        folders: LocalFolders, *, storage, open_sessions, trial_days: int, accounts,
    ):  # fmt: skip
        self._store = store
        self._accounts = accounts  # core.accounts: the first admin's invitation
        self._storage = storage  # core.storage: the figures measured in the background
        self._open_sessions = open_sessions  # core.open_sessions: a status change reaches open connections
        self._trial_days = trial_days  # [server] trial_days: an organisation the operator makes
        self._folders = folders
        self._threads = threads
        self._passwords = passwords
        self._audit = audit
        self._files_root = Path(files_root)
        self._clock = clock

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self._clock.seconds(), UTC)

    async def initialized(self) -> bool:
        return await self._store.run(queries.count_profiles) > 0

    async def initialize(self, org_name: str, username: str, email: str, password: str) -> Created:
        """First run: the first organisation (active), its source and its admin, who is
        also the operator. Refused once anyone exists."""
        if await self.initialized():
            raise AlreadyExists("The appliance is already set up.")
        return await self.create(
            org_name, None, username, email, password, status="active", superuser=True, admin_home="/"
        )

    async def create(
        self,
        org_name: str,
        subdomain: str | None,
        username: str,
        email: str,
        password: str | None,
        *,
        status: str = "trial",
        trial_days: int = 14,
        superuser: bool = False,
        admin_home: str | None = None,
    ) -> Created:
        org_name = validation.name(org_name, "organisation name")
        subdomain = validation.subdomain(subdomain) if subdomain else validation.subdomain_from(org_name)
        username = validation.username(username)
        email = validation.email(email)
        password_hash = await self._passwords.hash(password) if password else ""
        if await self._store.run(queries.profile_by_username, username):
            raise AlreadyExists(f"The username {username!r} is taken.")
        if await self._store.run(queries.organisation_by_subdomain, subdomain):
            raise AlreadyExists(f"The subdomain {subdomain!r} is taken.")

        async def write() -> tuple[int, int, int]:
            # its own folder must not overlap a folder another organisation's source uses
            taken = (
                f"The organisation's folder (files/{subdomain} in the data dir) overlaps a folder another "
                "organisation's source uses: choose another subdomain, or move that source first."
            )
            await self._folders.refuse_taken(None, self._files_root / subdomain, "subdomain", taken)
            now = self._now()
            folder = Path("files") / subdomain
            await self._threads.work(lambda: (self._files_root / subdomain).mkdir(mode=0o750, exist_ok=True))
            organisation = {
                "name": org_name,
                "subdomain": subdomain,
                "status": status,
                "trial_ends_at": to_iso(now + timedelta(days=trial_days)) if status == "trial" else None,
                "created_at": to_iso(now),
            }
            source = {
                "name": "Default",
                "type": "local",
                "config": {"path": str(folder)},
                "status": "ok",
                "created_at": to_iso(now),
            }
            admin = {
                "username": username,
                "email": email,
                "password_hash": password_hash,
                "is_admin": True,
                "is_superuser": superuser,
                "home": admin_home or f"/{username}",
                "permissions": PERMISSIONS,
                "protocols": PROTOCOLS,
                "password_changed_at": to_iso(now),
                "created_at": to_iso(now),
            }
            try:
                return await self._store.run(queries.create_organisation_with_admin, organisation, source, admin)
            except Exception as e:  # the unique constraints catch a race with another request
                if "UNIQUE" in str(e):
                    raise AlreadyExists("That username or subdomain was just taken.") from None
                raise

        org_id, source_id, profile_id = await self._folders.exclusively(write)
        await self._audit.record(
            LogEntry(
                org_id=org_id,
                profile_id=profile_id,
                username=username,
                protocol="system",
                action="organisation_created",
                message=f"Organisation {clean(org_name)} created with admin {clean(username)}",
            )
        )
        return Created(org_id, source_id, profile_id, subdomain)

    # -- the operator's view of every organisation ----------------------------------------

    @staticmethod
    def require_operator(account) -> None:
        """Refuse (PermissionDenied) anyone but the operator."""
        require_operator(account.profile)

    async def _get(self, org_id: int) -> Organisation:
        organisation = await self._store.run(queries.get_organisation, org_id)
        if organisation is None:
            raise NotFound("No such organisation.")
        return organisation

    async def listing(self, account, search: str, limit: int, offset: int) -> tuple[int, list[dict]]:
        """(count, the page of organisations) found by name or subdomain, with their members
        and storage (figures measured in the background: a list never walks a tree)."""
        self.require_operator(account)
        count, rows = await self._store.run(operator_queries.list_organisations, search, limit, offset)
        return count, [self._as_operator_sees(o, users) for o, users in rows]

    def _as_operator_sees(self, organisation: Organisation, users: int) -> dict:
        """An organisation in the operator's every reply: as its members see it, with its
        number of profiles and its storage (null until first measured)."""
        return dict(describe(organisation, self._now()), users=users, **self._storage.current(organisation.id))

    async def _operator_view(self, org_id: int) -> dict:
        organisation = await self._get(org_id)
        return self._as_operator_sees(organisation, await self._store.run(operator_queries.members, org_id))

    async def item(self, account, org_id: int) -> dict:
        self.require_operator(account)
        return await self._operator_view(org_id)

    async def measure_storage(self, account, org_id: int) -> dict:
        """Measure an organisation's storage now (bytes and files under its local sources)."""
        self.require_operator(account)
        await self._get(org_id)
        await self._storage.measure(org_id)
        return await self._operator_view(org_id)

    async def add(
        self, account, name: str, subdomain: str | None, username: str, email: str, password: str | None
    ) -> dict:
        """The operator makes an organisation (on trial) with its first admin; audited in it.
        Without a password the admin is invited by mail (refused before anything is made
        when no invitation may be sent now); whether it was mailed, and when not its link,
        goes back to the operator as `invitation`, as a profile's invitation does."""
        self.require_operator(account)
        if not password:
            self._accounts.check_invite(account, email)
        created = await self.create(
            name, subdomain or None, username, email, password or None, status="trial", trial_days=self._trial_days
        )
        await self._record(account, created.org_id, f"{account.profile.username} created the organisation")
        shown = await self._operator_view(created.org_id)
        if password:
            return shown
        admin = await self._store.run(queries.get_profile_by_id, created.profile_id)
        invitation = await self._accounts.invite(account, admin)
        if invitation.mailed:
            told = f"{account.profile.username} invited {admin.username}, the first admin, by mail"
        else:
            told = (
                f"The invitation of {admin.username}, the first admin, could not be mailed to {admin.email} "
                f"({invitation.error}); its link was shown to {account.profile.username}"
            )
        await self._record(account, created.org_id, told)
        return {**shown, "invitation": invitation.reply()}

    async def change(self, account, org_id: int, body: dict) -> dict:
        """The operator changes an organisation's status or trial end. The operator's own
        organisation stays usable; only what really changes is written and told; a deleted
        or unpaid organisation's open sessions end."""
        self.require_operator(account)
        existing = await self._get(org_id)
        changes, errors = {}, {}
        if "status" in body:
            if body["status"] not in ORG_STATUSES:
                errors["status"] = [f"Choose one of: {', '.join(ORG_STATUSES)}."]
            elif org_id == account.organisation.id and body["status"] in ("deleted", "payment_missing"):
                errors["status"] = [OPERATOR_OWN]
            else:
                changes["status"] = body["status"]
        if "trial_ends_at" in body:
            try:
                value = body["trial_ends_at"]
                changes["trial_ends_at"] = to_iso(validation.moment(value, "trial_ends_at")) if value else None
            except Invalid as e:
                errors.update(e.fields)
        if errors:
            raise Invalid("Some fields are not valid.", errors)
        changed = describe_organisation_change(existing, changes)
        if changed:
            await self._store.run(queries.update_organisation, org_id, changes)
            await self._record(account, org_id, f"The operator {account.profile.username} changed {changed}")
            await self._open_sessions.check(org_id=org_id)
        return await self._operator_view(org_id)

    async def _record(self, account, org_id: int, message: str) -> None:
        """An operator's change, in the log of the organisation it changed."""
        await self._audit.acted(account, "organisation", message, org_id=org_id)


COLOUR = re.compile(r"^#[0-9A-Fa-f]{6}$")
# how a change of each column is told in the audit log
FIELDS = {
    "name": Field("name"),
    "status": Field(
        "status",
        "choice",
        {"trial": "trial", "active": "active", "payment_missing": "payment missing", "deleted": "deleted"},
    ),
    "trial_ends_at": Field("trial end", "time"),
    "branding": Field("own branding", "bool"),
    "branding_colour": Field("branding colour", empty="the default"),
    "user_terms": Field("user terms", "long"),
    "require_tls": Field("encryption required", "bool"),
}


def describe_organisation_change(organisation: Organisation, changes: dict) -> str:
    """What `changes` change on `organisation`, in words ("" when nothing)."""
    return describe_change(vars(organisation), changes, FIELDS)


def describe(organisation: Organisation, now: datetime) -> dict:
    """The organisation as the console reads it (spec: on_trial, days_left_on_trial)."""
    ends = from_iso(organisation.trial_ends_at)
    on_trial = organisation.status == "trial"
    days_left = max(0, math.ceil((ends - now).total_seconds() / 86400)) if on_trial and ends else 0
    # ended: its members are refused as payment missing (until the housekeeping job says so too)
    trial_expired = organisation.status in ("trial", "payment_missing") and ends is not None and ends <= now
    return {
        "id": organisation.id,
        "name": organisation.name,
        "subdomain": organisation.subdomain,
        "status": organisation.status,
        "on_trial": on_trial,
        "days_left_on_trial": days_left,
        "trial_ends_at": organisation.trial_ends_at,
        "trial_expired": trial_expired,
        "branding": organisation.branding,
        "branding_logo": organisation.branding_logo,
        "branding_colour": organisation.branding_colour,
        "user_terms": organisation.user_terms,
        "require_tls": organisation.require_tls,
    }


def branding(organisation: Organisation | None) -> dict:
    if organisation is None or not organisation.branding or organisation.status == "deleted":
        return {"branding": False, "branding_logo": None, "branding_colour": None}
    return {
        "branding": True,
        "branding_logo": organisation.branding_logo,
        "branding_colour": organisation.branding_colour,
    }


def organisation_changes(body: dict) -> dict:
    """The fields an organisation's admin may change, validated."""
    changes: dict = {}
    errors: dict[str, list[str]] = {}
    if "name" in body:
        try:
            if not isinstance(body["name"], str):  # not str(None) == "None"
                raise Invalid("The name must be text.", {"name": ["Enter a name."]})
            changes["name"] = validation.name(body["name"], "name")
        except Invalid as e:
            errors.update(e.fields)
    if "branding" in body:
        if not isinstance(body["branding"], bool):
            errors["branding"] = ["Must be true or false."]
        else:
            changes["branding"] = body["branding"]
    if "branding_colour" in body:
        colour = body["branding_colour"]
        if colour is not None and (not isinstance(colour, str) or not COLOUR.fullmatch(colour)):
            errors["branding_colour"] = ["Enter a colour as #RRGGBB, for example #3D37FF."]
        else:
            changes["branding_colour"] = colour
    if "user_terms" in body:
        terms = body["user_terms"]
        if not isinstance(terms, str) or len(terms) > 100_000:
            errors["user_terms"] = ["Enter text of at most 100,000 characters."]
        else:
            changes["user_terms"] = terms
    if "require_tls" in body:
        if not isinstance(body["require_tls"], bool):
            errors["require_tls"] = ["Must be true or false."]
        else:
            changes["require_tls"] = body["require_tls"]
    if errors:
        raise Invalid("Some fields are not valid.", errors)
    return changes


class Profiles:
    def __init__(self, store: Store, passwords: Passwords, audit: AuditLog, clock):
        self._store = store
        self._passwords = passwords
        self._audit = audit
        self._clock = clock

    async def set_password(self, username: str, password: str, *, by: str = "system") -> None:
        profile = await self._store.run(queries.profile_by_username, username)
        if profile is None:
            raise Invalid(f"No profile is called {username!r}.")
        password_hash = await self._passwords.hash(password)
        now = to_iso(datetime.fromtimestamp(self._clock.seconds(), UTC))
        await self._store.run(
            queries.update_profile, profile.id, {"password_hash": password_hash, "password_changed_at": now}
        )
        self._passwords.forget(profile_scope(profile.id))
        await self._audit.record(
            LogEntry(
                org_id=profile.org_id,
                profile_id=profile.id,
                username=profile.username,
                protocol="system",
                action="password_changed",
                message=f"The password of {clean(profile.username)} was changed by {by}",
            )
        )
