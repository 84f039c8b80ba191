"""Credentials and their guessing: SSH keys, bans and the slowing of repeated failures.

The sign-in itself (credentials, the access policy, the live session, one audit row)
is core/signin.py; this module holds what it and share links share: the throttle's
bans, who may see and lift them, and the wrong-secret bookkeeping.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import math
from dataclasses import dataclass

from ..errors import AuthenticationFailed, Invalid
from ..models import LogEntry, Profile
from ..store import Store, queries
from .access import Account
from .audit import AuditLog, clean
from .throttle import Ban, LoginThrottle, Target

__all__ = ["Account", "AuthService"]  # Account: where the core's modules have always found it

BAD_CREDENTIALS = "Invalid username or password."
MAX_USERNAME = 150
# Refused sign-ins one connection may make before it is closed, in every protocol (OpenSSH's
# MaxAuthTries); the throttle's slowing and bans count across connections (core/throttle.py).
ATTEMPTS_PER_CONNECTION = 6
TOO_MANY_ATTEMPTS = "Too many failed sign-ins on this connection: closing it. Connect again to try once more."
# Why a sign-in was refused, as AuthenticationFailed.code (the web console shows each its own
# way; the access policy's codes are core.access.Reason). Only "invalid_credentials" and
# "banned" can come before the password is proven right, and neither tells whether the
# account exists (no account enumeration).
INVALID_CREDENTIALS = "invalid_credentials"
BANNED = "banned"
# said to everyone banned (it names no account): the appliance's operator banned from
# their own address has a way back on the host
ON_THE_HOST = " (The appliance's operator can lift a ban on the host: appliance bans lift ADDRESS.)"


def key_blob(line: str) -> bytes | None:
    """The wire-format blob of an OpenSSH public key line, or None if malformed."""
    parts = line.split()
    if len(parts) < 2:
        return None
    try:
        return base64.b64decode(parts[1], validate=True)
    except (binascii.Error, ValueError):
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
    def __init__(self, store: Store, audit: AuditLog, throttle: LoginThrottle, clock):
        self._store = store
        self._audit = audit
        self._throttle = throttle
        self._clock = clock
        self.closing = False  # set at shutdown: new sign-ins are refused (core.signin)

    @property
    def throttle(self) -> LoginThrottle:
        """The failed sign-ins counted per address and account, the slow-down and the bans."""
        return self._throttle

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
            message = f"Too many failed sign-ins from {address}: {later}{ON_THE_HOST}"
        elif ban.target.key.startswith("share:"):
            message = f"Too many wrong passwords for this link from {address}: {later}"
        else:
            message = f"Too many failed sign-ins for this account from {address}: {later}{ON_THE_HOST}"
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
        address = self._throttle.client(address)  # an IPv6 address lifts its /64's ban
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

    def bans_on_host(self) -> list[BanView]:
        """Every ban in force as the operator sees them: for `appliance bans list` on the
        host, which only the appliance's own account and root reach (its control socket)."""
        return [ban_view(ban, None) for ban in self._throttle.bans()]

    async def lift_on_host(self, address: str) -> int:
        """Lift every ban on `address` from the host (`appliance bans lift`): the way back
        for an operator whose own address is banned. Audited in each organisation the ban
        concerns (one row without an organisation when it concerns none)."""
        try:
            ipaddress.ip_address(address)
        except ValueError:
            raise Invalid(f"{address!r} is not an IP address.") from None
        lifted = 0
        address = self._throttle.client(address)
        for ban in self._throttle.bans():
            if ban.address != address or not self._throttle.unban(address, ban.target.key if ban.target else None):
                continue
            lifted += 1
            for org_id in sorted(ban.organisations) or [None]:
                what = "" if ban.target is None else f" ({ban_view(ban, org_id).why})"
                await self._audit.record(
                    LogEntry(org_id=org_id, username="host", protocol="system", action="unban",
                             remote_address=address,
                             message=f"The ban on {address}{what} was lifted on the host (appliance bans lift)")
                )  # fmt: skip
        return lifted

    async def wrong_secret(self, target: Target, address: str) -> None:
        """A wrong password or key at sign-in, or a share link's wrong password: counted,
        slowed and, when repeated, banned."""
        ban = self._throttle.record_failure(target, address)
        if ban is not None:
            await self._banned(ban)
        await self._throttle.pause(self._throttle.delay(target.key, address))

    async def accepts_key(self, username: str, blob: bytes) -> bool:
        """Whether `blob` is one of the profile's keys (the SSH 'may I use this key' probe)."""
        profile = await self._store.run(queries.profile_by_username, username[:MAX_USERNAME])
        return profile is not None and any(key_blob(k) == blob for k in profile.ssh_keys)

    def succeeded(self, key: str, address: str) -> None:
        """A right secret for `key` from `address`: its failures are forgiven."""
        self._throttle.record_success(key, address)

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
