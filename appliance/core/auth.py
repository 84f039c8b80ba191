"""Sign-in: the one function every protocol calls.

It checks the password (bcrypt, in a thread) or SSH key, then every rule that can
refuse an otherwise correct sign-in, records the outcome in the audit log, and
slows repeated failures.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import math
from dataclasses import dataclass
from datetime import UTC, datetime

from ..errors import AuthenticationFailed
from ..models import LogEntry, Organisation, Profile, Source, from_iso, to_iso
from ..store import Store, queries
from .audit import PROTOCOL_NAMES, AuditLog, clean
from .passwords import Passwords, profile_scope
from .throttle import LoginThrottle

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
    if not allow:
        return True
    try:
        ip = ipaddress.ip_address(address.split("%")[0])
    except ValueError:
        return False
    if ip.version == 6 and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    return any(ip in ipaddress.ip_network(net, strict=False) for net in allow)


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

    def refuse_if_banned(self, address: str) -> None:
        """Raise AuthenticationFailed, with the seconds the ban has left, while `address` is banned."""
        refusal = self._ban_refusal(address)
        if refusal is not None:
            raise refusal

    def _ban_refusal(self, address: str) -> AuthenticationFailed | None:
        ban = self._throttle.banned(address)
        if ban is None:
            return None
        seconds = max(1, math.ceil(ban.until - self._clock.seconds()))
        minutes = max(1, round(seconds / 60))
        return AuthenticationFailed(
            f"Too many failed sign-ins from {address}: try again in {minutes} minute{'s' if minutes > 1 else ''}.",
            retry_after=seconds,
        )

    def bans(self):
        return self._throttle.bans()

    async def wrong_secret(self, key: str, address: str, profile: Profile | None = None) -> None:
        """A wrong secret that is not a sign-in (a share link's password): slowed and
        banned like failed sign-ins, by address (`key` stands in for the username)."""
        ban = self._throttle.record_failure(key, address)
        if ban is not None:
            await self._banned(ban, profile)
        await self._throttle.pause(self._throttle.delay(key, address))

    async def unban(self, address: str, by: str, org_id: int | None = None) -> bool:
        lifted = self._throttle.unban(address)
        if lifted:
            await self._audit.record(
                LogEntry(
                    org_id=org_id,
                    username=by,
                    protocol="system",
                    action="unban",
                    remote_address=address,
                    message=f"{clean(by)} lifted the ban on {address}",
                )
            )
        return lifted

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
            raise AuthenticationFailed("The appliance is restarting; try again in a minute.")
        self.refuse_if_banned(address)
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
                raise AuthenticationFailed(TLS_REQUIRED.get(protocol, TLS_REQUIRED_ANY))
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
            ban = self._throttle.record_failure(username, address)
            if ban is not None:
                await self._banned(ban, profile)
            await self._throttle.pause(self._throttle.delay(username, address))
            raise AuthenticationFailed(BAD_CREDENTIALS)

        organisation = await self._store.run(queries.get_organisation, profile.org_id)
        refusal = self._refusal(profile, organisation, protocol, address)
        if refusal is not None:
            await self._failed(profile, username, protocol, address, refusal)
            raise AuthenticationFailed(refusal)

        self._throttle.record_success(username, address)
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

    def _refusal(self, profile: Profile, organisation: Organisation, protocol: str, address: str) -> str | None:
        now = self._now()
        refusal = organisation_refusal(organisation, now)
        if refusal:
            return refusal
        if not profile.active:
            return "This account is disabled. Ask your administrator to enable it."
        expires = from_iso(profile.expires_at)
        if expires is not None and expires <= now:
            return "This account has expired. Ask your administrator to extend it."
        if protocol not in profile.protocols:
            name = PROTOCOL_NAMES.get(protocol, protocol)
            return f"{name} access is not enabled for this account. Ask your administrator."
        if not address_allowed(address, profile.ip_allow):
            return f"Sign-in from {address} is not allowed for this account."
        return None

    async def _banned(self, ban, profile: Profile | None) -> None:
        minutes = round((ban.until - self._clock.seconds()) / 60)
        names = ", ".join(clean(n) for n in ban.usernames[:5]) or "unknown"
        await self._audit.record(
            LogEntry(
                org_id=profile.org_id if profile else None,
                protocol="system",
                action="ban",
                remote_address=ban.address,
                message=f"{ban.address} banned for {minutes} minutes after repeated failed sign-ins "
                f"(offence {ban.offences}; tried: {names})",
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
