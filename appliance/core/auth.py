"""Sign-in: the one function every protocol calls.

It checks the password (bcrypt, in a thread) or SSH key, then every rule that can
refuse an otherwise correct sign-in, records the outcome in the audit log, and
slows repeated failures.
"""

from __future__ import annotations

import base64
import binascii
import math
from dataclasses import dataclass
from datetime import UTC, datetime

from ..errors import AuthenticationFailed
from ..models import LogEntry, Organisation, Profile, Source, from_iso, to_iso
from ..store import Store, queries
from .addresses import in_networks, networks
from .audit import PROTOCOL_NAMES, AuditLog, clean
from .passwords import Passwords, profile_scope
from .throttle import Ban, LoginThrottle, Target

BAD_CREDENTIALS = "Invalid username or password."
PAYMENT_MISSING = "Organisation payment missing"
ORGANISATION_DELETED = "Organisation is deleted"
MAX_USERNAME = 150
# SSH encrypts before any password is sent; other channels say whether they are encrypted.
ALWAYS_ENCRYPTED = frozenset({"sftp"})
TLS_REQUIRED = {
    "ftp": "This account must use FTPS (AUTH TLS) or SFTP: plain-text FTP passwords are refused.",
    "web": "This account must sign in over HTTPS: passwords over plain HTTP are refused.",
}
TLS_REQUIRED_ANY = "This account must use an encrypted connection (FTPS, SFTP or HTTPS)."
# Why a sign-in was refused, as AuthenticationFailed.code (the web console shows each its own
# way). Only "invalid_credentials" and "banned" can come before the password is proven right,
# and neither tells whether the account exists (no account enumeration).
INVALID_CREDENTIALS = "invalid_credentials"
BANNED = "banned"
REFUSALS = {
    PAYMENT_MISSING: "payment_missing",
    ORGANISATION_DELETED: "organisation_deleted",
}


@dataclass(frozen=True)
class Account:
    """A signed-in profile with its organisation and source (and its web session's id,
    when it came from one: what a sign-out ends)."""

    profile: Profile
    organisation: Organisation
    source: Source | None
    session_id: str | None = None


def key_blob(line: str) -> bytes | None:
    """The wire-format blob of an OpenSSH public key line, or None if malformed."""
    parts = line.split()
    if len(parts) < 2:
        return None
    try:
        return base64.b64decode(parts[1], validate=True)
    except (binascii.Error, ValueError):
        return None


def address_allowed(address: str, allow: tuple[str, ...]) -> bool:
    """Whether a profile's IP allow-list (empty: any address) lets `address` in."""
    return not allow or in_networks(address, networks(allow))


def requires_tls(profile: Profile, organisation: Organisation) -> bool:
    """Whether the profile may sign in only over an encrypted channel: its own
    setting, or its organisation's when it has none."""
    return organisation.require_tls if profile.require_tls is None else profile.require_tls


def organisation_refusal(organisation: Organisation, now: datetime) -> str | None:
    """Why this organisation's members may not sign in now, or None."""
    if organisation.status == "deleted":
        return ORGANISATION_DELETED
    if organisation.status == "payment_missing":
        return PAYMENT_MISSING
    if organisation.status == "trial":
        ends = from_iso(organisation.trial_ends_at)
        if ends is not None and ends <= now:
            return PAYMENT_MISSING
    return None


def user_key(username: str) -> str:
    """The throttle's name for a username (share links are ``share:<id>``)."""
    return "user:" + username[:MAX_USERNAME].lower()


def user_target(key: str, profile: Profile | None) -> Target:
    """A failed sign-in's target: the profile's, or an unknown name."""
    if profile is None:
        return Target(key, None, clean(key[len("user:") :]))
    return Target(key, profile.org_id, clean(profile.username))


@dataclass(frozen=True)
class BanView:
    """A ban as one viewer may see it."""

    address: str
    until: float  # seconds since the epoch
    offences: int
    kind: str  # "address": every sign-in from it; "username" / "share_link": only that one from it
    why: str  # what was being guessed, in words
    usernames: tuple[str, ...]  # the viewer's own usernames that were tried


def _short(label: str, limit: int = 60) -> str:
    return label if len(label) <= limit else label[: limit - 1] + "…"


def ban_view(ban: Ban, org_id: int | None) -> BanView:
    """The ban as organisation `org_id`'s admins see it (None: the operator, who sees
    everything): another organisation's usernames and links, and names with no account,
    are only counted, never named, for an organisation's admins."""
    mine = [t for t in ban.tried if org_id is None or t.org_id == org_id]
    usernames = tuple(t.label for t in mine if t.key.startswith("user:"))
    if ban.target is not None:
        share = ban.target.key.startswith("share:")
        label = _short(ban.target.label, 120)
        only = "that link" if share else label
        why = f"repeated wrong passwords for {label}: only {only} is refused from this address"
        return BanView(ban.address, ban.until, ban.offences, "share_link" if share else "username", why, usernames)
    named = [_short(t.label) for t in mine if t.known]
    unknown = [repr(_short(t.label, 40)) for t in mine if not t.known]
    parts = named[:10] + ([f"names of no account ({', '.join(unknown[:10])})"] if unknown else [])
    others = len(ban.tried) - len(mine) + max(0, len(named) - 10) + max(0, len(unknown) - 10)
    if others:
        parts.append(f"{others} other name{'s' if others > 1 else ''}")
    why = f"wrong passwords for {', '.join(parts) or 'several names'}: every sign-in from this address is refused"
    return BanView(ban.address, ban.until, ban.offences, "address", why, usernames)


class AuthService:
    def __init__(self, store: Store, passwords: Passwords, audit: AuditLog, throttle: LoginThrottle, clock):
        self._store = store
        self._passwords = passwords
        self._audit = audit
        self._throttle = throttle
        self._clock = clock
        self.closing = False  # set at shutdown: new sign-ins are refused

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self._clock.seconds(), UTC)

    def banned(self, address: str) -> str | None:
        """Why connections from `address` are refused now, or None (front ends call this
        when a connection opens, so a banned address costs no password check)."""
        refusal = self._ban_refusal(address)
        return refusal.message if refusal is not None else None

    def refuse_if_banned(self, address: str, key: str | None = None) -> None:
        """Raise AuthenticationFailed, with the seconds the ban has left, while `address`
        is banned, or (given a username or share key) banned from trying that one."""
        refusal = self._ban_refusal(address, key)
        if refusal is not None:
            raise refusal

    def _ban_refusal(self, address: str, key: str | None = None) -> AuthenticationFailed | None:
        ban = self._throttle.banned(address, key)
        if ban is None:
            return None
        seconds = max(1, math.ceil(ban.until - self._clock.seconds()))
        minutes = max(1, round(seconds / 60))
        later = f"try again in {minutes} minute{'s' if minutes > 1 else ''}."
        if ban.target is None:
            message = f"Too many failed sign-ins from {address}: {later}"
        elif ban.target.key.startswith("share:"):
            message = f"Too many wrong passwords for this link from {address}: {later}"
        else:
            message = f"Too many failed sign-ins for this account from {address}: {later}"
        return AuthenticationFailed(message, retry_after=seconds, code=BANNED)

    def bans(self) -> list[Ban]:
        """Every ban in force (the operator's view), soonest to end first."""
        return self._throttle.bans()

    def bans_for(self, account: Account) -> list[BanView]:
        """The bans in force this caller may see and lift, soonest to end first: all of
        them for the operator; for an organisation's admin, those earned guessing its
        own usernames or share links, told in its own names only (tenant isolation)."""
        operator = account.profile.is_superuser
        org_id = account.organisation.id
        return [
            ban_view(ban, None if operator else org_id)
            for ban in self._throttle.bans()
            if operator or org_id in ban.organisations
        ]

    async def lift(self, account: Account, address: str) -> int:
        """Lift every ban on `address` the caller may see (bans_for); each is audited.
        Returns how many were lifted."""
        operator = account.profile.is_superuser
        org_id = account.organisation.id
        lifted = 0
        for ban in self._throttle.bans():
            if ban.address != address or not (operator or org_id in ban.organisations):
                continue
            if not self._throttle.unban(address, ban.target.key if ban.target else None):
                continue
            lifted += 1
            what = "" if ban.target is None else f" ({ban_view(ban, None if operator else org_id).why})"
            by = account.profile.username
            await self._audit.record(
                LogEntry(
                    org_id=org_id,
                    profile_id=account.profile.id,
                    username=by,
                    protocol="system",
                    action="unban",
                    remote_address=address,
                    message=f"{clean(by)} lifted the ban on {address}{what}",
                )
            )
        return lifted

    async def wrong_secret(self, target: Target, address: str) -> None:
        """A wrong secret that is not a sign-in (a share link's password): slowed and
        banned like a wrong password for a known username."""
        ban = self._throttle.record_failure(target, address)
        if ban is not None:
            await self._banned(ban)
        await self._throttle.pause(self._throttle.delay(target.key, address))

    async def accepts_key(self, username: str, blob: bytes) -> bool:
        """Whether `blob` is one of the profile's keys (the SSH 'may I use this key' probe)."""
        profile = await self._store.run(queries.profile_by_username, username[:MAX_USERNAME])
        return profile is not None and any(key_blob(k) == blob for k in profile.ssh_keys)

    async def login(
        self,
        username: str,
        *,
        protocol: str,
        address: str,
        password: str | None = None,
        public_key: bytes | None = None,
        encrypted: bool = False,
    ) -> Account:
        """Return the account, or raise AuthenticationFailed with a message to show.

        For `public_key` the caller has already verified the signature, proving the
        client holds the private key. `encrypted`: the credentials came over TLS
        (FTP after AUTH TLS, HTTPS); SFTP always is.
        """
        username = username.strip()
        if self.closing:
            raise AuthenticationFailed("The appliance is restarting; try again in a minute.", code="unavailable")
        key = user_key(username)
        self.refuse_if_banned(address, key)  # the address, or this address guessing this name
        profile = None
        if 0 < len(username) <= MAX_USERNAME and "\x00" not in username:
            profile = await self._store.run(queries.profile_by_username, username)
        if profile is not None and not (encrypted or protocol in ALWAYS_ENCRYPTED):
            # Refused before the password is checked, so a plain-text channel never tells
            # whether a password is right. Not counted by the throttle: no password is
            # tried, and one office's misconfigured clients must not get its address banned.
            organisation = await self._store.run(queries.get_organisation, profile.org_id)
            if organisation is not None and requires_tls(profile, organisation):
                await self._failed(profile, username, protocol, address, "plain-text sign-in refused (TLS required)")
                raise AuthenticationFailed(TLS_REQUIRED.get(protocol, TLS_REQUIRED_ANY), code="tls_required")
        if public_key is not None:
            ok = profile is not None and any(key_blob(k) == public_key for k in profile.ssh_keys)
            method = "key"
        else:
            # a success is remembered (keyed hash only) so a script's next login skips bcrypt;
            # every check below still runs on every login
            ok = await self._passwords.verify(
                password or "",
                profile.password_hash if profile else None,
                scope=profile_scope(profile.id) if profile else None,
            )
            method = "password"
        if not ok:
            await self._failed(profile, username, protocol, address, f"wrong {method}")
            target = user_target(key, profile)
            ban = self._throttle.record_failure(target, address)
            if ban is not None:
                await self._banned(ban)
            await self._throttle.pause(self._throttle.delay(key, address))
            raise AuthenticationFailed(BAD_CREDENTIALS, code=INVALID_CREDENTIALS)

        organisation = await self._store.run(queries.get_organisation, profile.org_id)
        refusal = self._refusal(profile, organisation, protocol, address)
        if refusal is not None:
            code, message = refusal
            await self._failed(profile, username, protocol, address, message)
            raise AuthenticationFailed(message, code=code)

        self._throttle.record_success(key, address)
        return await self._signed_in(profile, organisation, protocol, address, method)

    async def first_sign_in(self, profile_id: int, *, protocol: str, address: str) -> Account:
        """The session first-run setup opens for the admin it has just created (who chose
        the password a moment ago): counted and audited as every other sign-in."""
        profile = await self._store.run(queries.get_profile_by_id, profile_id)
        organisation = await self._store.run(queries.get_organisation, profile.org_id)
        return await self._signed_in(profile, organisation, protocol, address, "setup")

    async def _signed_in(
        self, profile: Profile, organisation: Organisation, protocol: str, address: str, method: str
    ) -> Account:
        """The outcome of a sign-in every check has let through: last login and the audit row."""
        source = None
        if profile.source_id is not None:
            source = await self._store.run(queries.get_source, profile.org_id, profile.source_id)
        await self._store.run(queries.update_profile, profile.id, {"last_login": to_iso(self._now())})
        await self._audit.record(
            LogEntry(
                org_id=organisation.id,
                profile_id=profile.id,
                username=profile.username,
                protocol=protocol,
                action="login",
                remote_address=address,
                message=f"{clean(profile.username)} signed in over "
                f"{PROTOCOL_NAMES.get(protocol, protocol)} from {address} ({method})",
            )
        )
        return Account(profile=profile, organisation=organisation, source=source)

    def _refusal(
        self, profile: Profile, organisation: Organisation, protocol: str, address: str
    ) -> tuple[str, str] | None:
        """(code, message) of why a profile whose password was right may not sign in, or None."""
        now = self._now()
        refusal = organisation_refusal(organisation, now)
        if refusal:
            return REFUSALS[refusal], refusal
        if not profile.active:
            return "account_disabled", "This account is disabled. Ask your administrator to enable it."
        expires = from_iso(profile.expires_at)
        if expires is not None and expires <= now:
            return "account_expired", "This account has expired. Ask your administrator to extend it."
        if protocol not in profile.protocols:
            name = PROTOCOL_NAMES.get(protocol, protocol)
            return "protocol_not_allowed", f"{name} access is not enabled for this account. Ask your administrator."
        if not address_allowed(address, profile.ip_allow):
            return "address_not_allowed", f"Sign-in from {address} is not allowed for this account."
        return None

    async def _banned(self, ban: Ban) -> None:
        """One audit row per organisation the ban concerns, in its own names only (one
        without an organisation when it concerns none: a spray of unknown names)."""
        minutes = round((ban.until - self._clock.seconds()) / 60)
        for org_id in sorted(ban.organisations) or [None]:
            if ban.target is None:
                why = f"after repeated failed sign-ins (offence {ban.offences}; {ban_view(ban, org_id).why})"
            elif ban.target.key.startswith("share:"):
                why = f"from {ban.target.label} after repeated wrong passwords (offence {ban.offences})"
            else:
                why = f"from signing in as {ban.target.label} after repeated wrong passwords (offence {ban.offences})"
            await self._audit.record(
                LogEntry(
                    org_id=org_id,
                    protocol="system",
                    action="ban",
                    remote_address=ban.address,
                    message=f"{ban.address} banned for {minutes} minutes {why}",
                )
            )

    async def _failed(self, profile: Profile | None, username: str, protocol: str, address: str, why: str) -> None:
        await self._audit.record(
            LogEntry(
                org_id=profile.org_id if profile else None,
                profile_id=profile.id if profile else None,
                username=username[:MAX_USERNAME],
                protocol=protocol,
                action="login_failed",
                remote_address=address,
                message=f"Failed sign-in as {clean(username[:MAX_USERNAME])!r} over "
                f"{PROTOCOL_NAMES.get(protocol, protocol)} from {address}: {why}",
            )
        )
