"""Profiles as admins see and change them, with every field validated, every
change written to the audit log, and invitations for profiles made without a password."""

from __future__ import annotations

import ipaddress
import struct
from datetime import UTC, datetime
from typing import Annotated, Literal

from pydantic import Field as Bounds
from twisted.conch.ssh import keys

from ..declarations import (
    ID,
    MAX_STRING,
    MAYBE_MOMENT,
    MOMENT,
    SQLITE_MAX,
    Declaration,
    Hint,
    read,
    refuse,
    rule,
    shown,
)
from ..errors import AlreadyExists, Invalid, NotFound, PermissionDenied
from ..models import PERMISSIONS, PROTOCOLS, Profile, to_iso
from ..storage.paths import nfc, split_path, virtual
from ..store import Store, queries
from ..store import profiles as profile_queries
from . import validation
from .accounts import Accounts
from .audit import AuditLog
from .auth import Account
from .authority import OPERATOR_ROLE, require_authority, require_grant
from .changes import Field, describe_change
from .passwords import Passwords, profile_scope, validate

ORDERINGS = tuple(profile_queries.ORDERINGS)  # how a listing may be sorted ("-" first: descending)
SELF_ADMIN = "You cannot remove your own admin rights; ask another admin."
# how a change of each column is told in the audit log
FIELDS = {
    "username": Field("username"),
    "email": Field("email"),
    "password_hash": Field("password", "secret"),
    "is_admin": Field("admin", "bool"),
    "active": Field("active", "bool"),
    "source_id": Field("source"),
    "home": Field("home folder"),
    "permissions": Field("permissions", "list"),
    "protocols": Field("protocols", "list"),
    "ssh_keys": Field("SSH keys", "count"),
    "ip_allow": Field("allowed addresses", "list", empty="any"),
    "quota_bytes": Field("quota", "bytes", empty="no limit"),
    "quota_files": Field("file count limit", "number", empty="no limit"),
    "expires_at": Field("expiry", "time", empty="never"),
    "require_tls": Field("encryption required", "choice", {None: "as the organisation says", True: "yes", False: "no"}),
    "password_changed_at": Field("password changed at", "hidden"),
}


def view(profile: Profile) -> dict:
    return {
        "id": profile.id,
        "username": profile.username,
        "email": profile.email,
        "is_admin": profile.is_admin,
        "active": profile.active,
        "has_password": bool(profile.password_hash),
        "source": profile.source_id,
        "home": profile.home,
        "permissions": list(profile.permissions),
        "protocols": list(profile.protocols),
        "ssh_keys": list(profile.ssh_keys),
        "ip_allow": list(profile.ip_allow),
        "quota_bytes": profile.quota_bytes,
        "quota_files": profile.quota_files,
        "expires_at": profile.expires_at,
        "require_tls": profile.require_tls,  # null: as the organisation says
        "last_login": profile.last_login,
        "created_at": profile.created_at,
    }


def _known(allowed: tuple[str, ...]):
    """A rule of a list of choices: every item one of `allowed`, kept in `allowed`'s order."""

    def unknown(items):
        if isinstance(items, list) and all(isinstance(item, str) for item in items):
            if found := sorted(set(items) - set(allowed)):
                raise Invalid(f"Unknown: {', '.join(found)}. Choose from: {', '.join(allowed)}.")
        return items

    return rule(unknown, before=True), rule(lambda items: [p for p in allowed if p in items])


def _ssh_keys(lines: list[str]) -> list[str]:
    bad = []
    for line in lines:
        try:
            keys.Key.fromString(line.strip().encode())
        except (keys.BadKeyError, ValueError, IndexError, struct.error):
            bad.append(line[:40])
    if bad:
        raise Invalid("Not an OpenSSH public key.", {"ssh_keys": [f"Not an OpenSSH public key: {b}..." for b in bad]})
    return [line.strip() for line in lines if line.strip()]


def _networks(items: list[str]) -> list[str]:
    try:
        return [str(ipaddress.ip_network(v.strip(), strict=False)) for v in items if v.strip()]
    except ValueError as e:
        raise Invalid(f"Not an address or network: {e}") from None


def _password(password: str | None) -> str | None:
    if password:
        validate(password)
    return password


def _moment(value: str | None) -> str | None:
    return to_iso(validation.moment(value, "expires_at")) if value else None


LIST_HINT = "Give a list of strings."
LIMIT_HINT = "Enter a whole number, or nothing for no limit."
# a moment, or none: null or "" (the console sends null, forms and scripts often "")
MOMENT_SHAPE = {"anyOf": [{"format": "date-time"}, {"maxLength": 0}]}


class ProfileFields(Declaration):
    """What an admin gives of a profile (a new one: username and email at least)."""

    username: Annotated[str, Bounds(max_length=MAX_STRING), Hint("Not a valid value."), rule(validation.username)]
    # at most 254 characters: validation.email says so in its own words
    email: Annotated[
        str, Bounds(json_schema_extra={"format": "email", "maxLength": 254}), Hint("Not a valid value."),
        rule(validation.email),
    ]  # fmt: skip
    password: Annotated[str | None, Bounds(max_length=MAX_STRING), Hint("Enter a password."), rule(_password)] = None
    is_admin: Annotated[bool, Hint("Must be true or false.")] = False
    active: Annotated[bool, Hint("Must be true or false.")] = True
    source: Annotated[
        int | None, Bounds(ge=1, le=SQLITE_MAX), Hint("Choose one of your organisation's sources.")
    ] = None  # fmt: skip
    home: Annotated[
        str, Bounds(max_length=MAX_STRING), Hint("Not a valid value."), rule(lambda v: virtual(nfc(split_path(v))))
    ] = ""  # fmt: skip
    permissions: Annotated[
        list[Literal[PERMISSIONS]], Bounds(max_length=50), Hint(LIST_HINT), *_known(PERMISSIONS)
    ] = list(PERMISSIONS)  # fmt: skip
    protocols: Annotated[
        list[Literal[PROTOCOLS]], Bounds(max_length=50), Hint(LIST_HINT), *_known(PROTOCOLS)
    ] = list(PROTOCOLS)  # fmt: skip
    ssh_keys: Annotated[
        list[Annotated[str, Bounds(max_length=16_384)]], Bounds(max_length=100), Hint(LIST_HINT), rule(_ssh_keys)
    ] = []  # fmt: skip
    ip_allow: Annotated[
        list[Annotated[str, Bounds(max_length=MAX_STRING)]], Bounds(max_length=1000), Hint(LIST_HINT),
        rule(_networks),
    ] = []  # fmt: skip
    quota_bytes: Annotated[int | None, Bounds(ge=0, le=SQLITE_MAX), Hint(LIMIT_HINT)] = None
    quota_files: Annotated[int | None, Bounds(ge=0, le=SQLITE_MAX), Hint(LIMIT_HINT)] = None
    expires_at: Annotated[
        str | None, Bounds(max_length=64, json_schema_extra=MOMENT_SHAPE), Hint(validation.DATE_HINT), rule(_moment)
    ] = None  # fmt: skip
    require_tls: Annotated[
        bool | None, Bounds(description="null: as the organisation says"),
        Hint("Must be true, false, or null to follow the organisation."),
    ] = None  # fmt: skip


class ProfileReply(shown(ProfileFields, leave=("password",))):
    """A profile as the API shows it (`view`): what an admin gives of it but the password, and
    what only the core sets."""

    id: ID
    has_password: bool
    expires_at: MAYBE_MOMENT  # given as a moment or "", kept as a moment or none
    last_login: MAYBE_MOMENT
    created_at: MOMENT


def _not_mailed(account: Account, profile: Profile, invitation) -> str:
    return (
        f"The invitation of {profile.username} could not be mailed to {profile.email} ({invitation.error}); "
        f"its link was shown to {account.profile.username}"
    )


class ProfileAdmin:
    def __init__(
        self, store: Store, passwords: Passwords, clock, open_sessions, audit: AuditLog, accounts: Accounts
    ):  # fmt: skip
        self._store = store
        self._audit = audit
        self._accounts = accounts
        self._passwords = passwords
        self._clock = clock
        self._open_sessions = open_sessions  # core.open_sessions: changes reach open connections

    async def get(self, account: Account, profile_id: int) -> Profile:
        profile = await self._store.run(queries.get_profile, account.organisation.id, profile_id)
        if profile is None:
            raise NotFound("No such profile.")
        return profile

    async def listing(
        self, account: Account, search: str, ordering: str, limit: int, offset: int
    ) -> tuple[int, list[dict]]:
        """(count, the page of profiles) of `account`'s organisation, found by `search`, sorted by
        `ordering` (one of ORDERINGS; empty: by username)."""
        ordering = ordering or "username"
        if ordering not in ORDERINGS:
            message = f"Choose one of: {', '.join(ORDERINGS)}."
            raise Invalid(f"ordering: {message}", {"ordering": [message]})
        count, profiles = await self._store.run(
            profile_queries.list_profiles, account.organisation.id, search, ordering, limit, offset
        )
        return count, [view(profile) for profile in profiles]

    async def item(self, account: Account, profile_id: int) -> dict:
        return view(await self.get(account, profile_id))

    async def create(self, account: Account, body: dict, address: str) -> dict:
        """Validate, save and audit a new profile. Without a password the person chooses
        one from an invitation (refused before the profile is made when no invitation may
        be sent now); whether it was mailed, and when not its link, goes back to this admin."""
        if not body.get("password"):
            self._accounts.check_invite(account, body.get("email"))
        profile = await self._insert(account, body)
        await self._told(account, address, f"{account.profile.username} created the profile {profile.username}")
        if body.get("password"):
            return view(profile)
        invitation = await self._accounts.invite(account, profile)
        if not invitation.mailed:
            await self._told(account, address, _not_mailed(account, profile, invitation))
        return {**view(profile), "invitation": invitation.reply()}

    async def change(self, account: Account, profile_id: int, body: dict, address: str) -> dict:
        """Validate a change; only what really changes is written and told."""
        existing = await self.get(account, profile_id)
        values = await self.values(account, body, existing)
        changed = await self.describe_change(account, existing, values)
        if changed:
            await self.update(account, existing, values)
            await self._told(account, address, f"{account.profile.username} changed {existing.username}: {changed}")
        return await self.item(account, profile_id)

    async def invite(self, account: Account, profile_id: int, address: str) -> dict:
        """Mail the profile a link to choose its password (again): what became of it."""
        profile = await self.get(account, profile_id)
        invitation = await self._accounts.invite(account, profile)
        await self._told(account, address, f"{account.profile.username} invited {profile.username}")
        if not invitation.mailed:
            await self._told(account, address, _not_mailed(account, profile, invitation))
        return invitation.reply()

    async def remove(self, account: Account, profile_id: int, address: str) -> None:
        """The admin's delete of a profile (see `delete`), audited."""
        existing = await self.get(account, profile_id)
        await self.delete(account, existing)
        await self._told(account, address, f"{account.profile.username} deleted the profile {existing.username}")

    async def _told(self, account: Account, address: str, message: str) -> None:
        await self._audit.acted(account, "profile", message, address=address)

    async def values(self, account: Account, body: dict, existing: Profile | None = None) -> dict:
        """The validated columns `body` sets on `existing` (None: a new profile), refused
        when `account` may not change `existing` or would give more than it holds."""
        if existing is not None:
            require_authority(account.profile, existing)
        if "is_superuser" in body and body["is_superuser"] != (existing.is_superuser if existing else False):
            raise PermissionDenied(OPERATOR_ROLE)
        creating = existing is None
        values, errors = read(ProfileFields, body, creating=creating)
        values.pop("password", None)  # hashed below, once every field is valid
        if values.get("is_admin"):
            require_grant(account.profile, is_admin=True)
        if existing is not None and existing.id == account.profile.id:
            if values.get("is_admin") is False:
                errors["is_admin"] = [SELF_ADMIN]
            if values.get("active") is False:
                errors["active"] = ["You cannot disable your own account."]
        if "source" in values:
            source_id = values["source_id"] = values.pop("source")
            if source_id is not None and not await self._store.run(
                queries.get_source, account.organisation.id, source_id
            ):
                errors["source"] = ["Choose one of your organisation's sources."]
        elif creating and "source" not in errors:
            values["source_id"] = account.organisation.default_source_id
        if creating:
            values.setdefault("permissions", list(PERMISSIONS))
            values.setdefault("protocols", list(PROTOCOLS))
        refuse(errors)
        if "username" in values:
            taken = await self._store.run(queries.profile_by_username, values["username"])
            if taken is not None and (existing is None or taken.id != existing.id):
                raise Invalid("That username is taken.", {"username": ["This username is taken."]})
        now = to_iso(datetime.fromtimestamp(self._clock.seconds(), UTC))
        if isinstance(body.get("password"), str) and body["password"]:
            values["password_hash"] = await self._passwords.hash(body["password"])
            values["password_changed_at"] = now
        if creating:
            values.setdefault("home", f"/{values['username']}")
            values["org_id"] = account.organisation.id
            values["created_at"] = now
            values.setdefault("password_changed_at", now)
        return values

    async def describe_change(self, account: Account, existing: Profile, values: dict) -> str:
        """What `values` (from `values()`) change on `existing`, in words ("" when nothing)."""
        names: dict[int | None, str] = {None: "none"}
        for source_id in {existing.source_id, values.get("source_id")} - {None}:
            source = await self._store.run(queries.get_source, account.organisation.id, source_id)
            names[source_id] = source.name if source else f"#{source_id}"
        return describe_change(vars(existing), values, FIELDS, {"source_id": lambda v: names.get(v, "none")})

    async def _insert(self, account: Account, body: dict) -> Profile:
        values = await self.values(account, body)
        try:
            profile_id = await self._store.run(queries.insert_profile, values)
        except Exception as e:  # a race on the unique username
            if "UNIQUE" in str(e):
                raise AlreadyExists("That username is taken.") from None
            raise
        return await self.get(account, profile_id)

    async def update(self, account: Account, profile: Profile, values: dict) -> None:
        """Store `values` (from `values()`) on the profile, if `account` may change it; a new password ends remembered
        sign-ins and web sessions, but not open SFTP/FTP connections (they proved the
        password they had; an admin who wants someone out deactivates them). Other
        changes reach the profile's open connections at once (core/open_sessions.py)."""
        require_authority(account.profile, profile)
        await self._store.run(queries.update_profile, profile.id, values)
        if "password_hash" in values:
            self._passwords.forget(profile_scope(profile.id))
        if self._open_sessions is not None and set(values) - {"password_hash", "password_changed_at"}:
            await self._open_sessions.check(profile_id=profile.id)

    async def delete(self, account: Account, profile: Profile) -> None:
        """Delete the profile (not one's own, nor one that holds more than `account`);
        its open connections are ended."""
        if profile.id == account.profile.id:
            raise PermissionDenied("You cannot delete your own profile.")
        require_authority(account.profile, profile)
        await self._store.run(profile_queries.delete_profile, account.organisation.id, profile.id)
        self._passwords.forget(profile_scope(profile.id))
        if self._open_sessions is not None:
            await self._open_sessions.check(profile_id=profile.id)
