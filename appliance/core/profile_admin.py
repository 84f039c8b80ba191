"""Profiles as admins see and change them, with every field validated, every
change written to the audit log, and invitations for profiles made without a password."""

from __future__ import annotations

import ipaddress
import struct
from datetime import UTC, datetime

from twisted.conch.ssh import keys

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

SQLITE_MAX = 2**63 - 1  # the largest number a column holds
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


def _string_list(value, name: str, errors: dict) -> list[str] | None:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        errors[name] = ["Give a list of strings."]
        return None
    return value


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
        await self._audit.change(account, "web", address, "profile", "", message)

    async def values(self, account: Account, body: dict, existing: Profile | None = None) -> dict:
        """The validated columns `body` sets on `existing` (None: a new profile), refused
        when `account` may not change `existing` or would give more than it holds."""
        if existing is not None:
            require_authority(account.profile, existing)
        if "is_superuser" in body and body["is_superuser"] != (existing.is_superuser if existing else False):
            raise PermissionDenied(OPERATOR_ROLE)
        errors: dict[str, list[str]] = {}
        values: dict = {}
        creating = existing is None

        def check(name: str, validator):
            try:
                values[name] = validator(body[name])
            except Invalid as e:
                errors.update(e.fields or {name: [e.message]})
            except (TypeError, AttributeError):
                errors[name] = ["Not a valid value."]

        for name, validator in (("username", validation.username), ("email", validation.email)):
            if name in body:
                check(name, validator)
            elif creating:
                errors[name] = ["This field is required."]
        password = body.get("password")
        if password not in (None, ""):
            if not isinstance(password, str):
                errors["password"] = ["Enter a password."]
            else:
                try:
                    validate(password)
                except Invalid as e:
                    errors.update(e.fields)
        for name in ("is_admin", "active"):
            if name in body:
                if not isinstance(body[name], bool):
                    errors[name] = ["Must be true or false."]
                else:
                    values[name] = body[name]
        if values.get("is_admin"):
            require_grant(account.profile, is_admin=True)
        if existing is not None and existing.id == account.profile.id:
            if values.get("is_admin") is False:
                errors["is_admin"] = [SELF_ADMIN]
            if values.get("active") is False:
                errors["active"] = ["You cannot disable your own account."]
        if "source" in body:
            source = None
            if (
                isinstance(body["source"], int)
                and not isinstance(body["source"], bool)
                and 0 < body["source"] <= SQLITE_MAX
            ):
                source = await self._store.run(queries.get_source, account.organisation.id, body["source"])
            if source is None and body["source"] is not None:
                errors["source"] = ["Choose one of your organisation's sources."]
            else:
                values["source_id"] = source.id if source else None
        elif creating:
            values["source_id"] = account.organisation.default_source_id
        if "home" in body:
            try:
                values["home"] = virtual(nfc(split_path(str(body["home"]))))
            except (Invalid, PermissionDenied) as e:
                errors["home"] = [e.message]
        for name, allowed in (("permissions", PERMISSIONS), ("protocols", PROTOCOLS)):
            if name in body:
                items = _string_list(body[name], name, errors)
                if items is not None:
                    unknown = sorted(set(items) - set(allowed))
                    if unknown:
                        errors[name] = [f"Unknown: {', '.join(unknown)}. Choose from: {', '.join(allowed)}."]
                    else:
                        values[name] = [p for p in allowed if p in items]
            elif creating:
                values[name] = list(allowed)
        if "ssh_keys" in body:
            items = _string_list(body["ssh_keys"], "ssh_keys", errors)
            if items is not None:
                bad = []
                for line in items:
                    try:
                        keys.Key.fromString(line.strip().encode())
                    except (keys.BadKeyError, ValueError, IndexError, struct.error):
                        bad.append(line[:40])
                if bad:
                    errors["ssh_keys"] = [f"Not an OpenSSH public key: {b}..." for b in bad]
                else:
                    values["ssh_keys"] = [line.strip() for line in items if line.strip()]
        if "ip_allow" in body:
            items = _string_list(body["ip_allow"], "ip_allow", errors)
            if items is not None:
                try:
                    values["ip_allow"] = [
                        str(ipaddress.ip_network(v.strip(), strict=False)) for v in items if v.strip()
                    ]
                except ValueError as e:
                    errors["ip_allow"] = [f"Not an address or network: {e}"]
        for name in ("quota_bytes", "quota_files"):
            if name in body:
                value = body[name]
                if value is not None and (
                    not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= SQLITE_MAX
                ):
                    errors[name] = ["Enter a whole number, or nothing for no limit."]
                else:
                    values[name] = value
        if "require_tls" in body:
            if body["require_tls"] is not None and not isinstance(body["require_tls"], bool):
                errors["require_tls"] = ["Must be true, false, or null to follow the organisation."]
            else:
                values["require_tls"] = body["require_tls"]
        if "expires_at" in body:
            value = body["expires_at"]
            try:
                values["expires_at"] = to_iso(validation.moment(value, "expires_at")) if value else None
            except Invalid as e:
                errors.update(e.fields)
        if errors:
            raise Invalid("Some fields are not valid.", errors)
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
