"""May this profile act now? The one access policy, and the one account loader.

Every entry point asks it: a sign-in (SFTP, FTP, web), a web session's request, an
API token's, a share link's visit, the re-check of an open SFTP/FTP session, a
mailbox's collection (the organisation half; the run acts as its own principal,
MailboxPrincipal, with MAILBOX_RIGHTS). The answer is None or a Refusal: a
stable code (what the console switches on) and the one message a person sees.
Front ends only map the refusal to their protocol (HTTP status, FTP reply, SSH
banner or DISCONNECT).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import ClassVar

from ..errors import AuthenticationFailed, Unavailable
from ..models import Mailbox, Organisation, Profile, Source, from_iso
from ..store import Store, queries
from .addresses import in_networks, networks

# the names a person reads in "<name> access is not enabled"
PROTOCOL_NAMES = {"sftp": "SFTP", "ftp": "FTP", "web": "Web"}
# SSH encrypts before any password is sent; other channels say whether they are encrypted.
ALWAYS_ENCRYPTED = frozenset({"sftp"})
TLS_REQUIRED = {
    "ftp": "This account must use FTPS (AUTH TLS) or SFTP: plain-text FTP passwords are refused.",
    "web": "This account must sign in over HTTPS: passwords over plain HTTP are refused.",
}
TLS_REQUIRED_ANY = "This account must use an encrypted connection (FTPS, SFTP or HTTPS)."
# A failed sign-in over a plain-text channel, whatever the reason (no such account, a
# wrong password, an account that must use TLS): one answer, so the channel tells nobody
# which names exist or which accounts require TLS.
PLAIN_TEXT_FAILED = {
    "ftp": "Invalid username or password, or the account must use FTPS (AUTH TLS) or SFTP: "
    "plain-text FTP passwords are refused for it.",
    "web": "Invalid username or password, or the account must sign in over HTTPS.",
}
PAYMENT_MISSING = "Organisation payment missing"
ORGANISATION_DELETED = "Organisation is deleted"
DISABLED = "This account is disabled. Ask your administrator to enable it."
EXPIRED = "This account has expired. Ask your administrator to extend it."


class Reason(enum.StrEnum):
    """Why a profile may not act now; the value is the stable code clients see."""

    PAYMENT_MISSING = "payment_missing"
    ORGANISATION_DELETED = "organisation_deleted"
    ACCOUNT_DISABLED = "account_disabled"
    ACCOUNT_EXPIRED = "account_expired"
    PROTOCOL_NOT_ALLOWED = "protocol_not_allowed"
    ADDRESS_NOT_ALLOWED = "address_not_allowed"
    TLS_REQUIRED = "tls_required"


ORGANISATION_REASONS = frozenset({Reason.PAYMENT_MISSING, Reason.ORGANISATION_DELETED})


@dataclass(frozen=True)
class Refusal:
    """A decision of the policy: why, as a code, and the message a person sees."""

    reason: Reason
    message: str

    @property
    def code(self) -> str:
        return self.reason.value

    @property
    def organisation(self) -> bool:
        """The organisation may not use the appliance (not this profile's own settings)."""
        return self.reason in ORGANISATION_REASONS


class AccessRefused(AuthenticationFailed):
    """The policy refused a sign-in (the refusal of a token's profile is
    core.sessions.TokenRefused, a refused token)."""

    def __init__(self, refusal: Refusal):
        super().__init__(refusal.message, code=refusal.code)
        self.refusal = refusal


# What a mailbox's run may do in its source: make the target folders, write new files,
# and take back those of a message it could not finish. It never lists, reads,
# overwrites or renames anything.
MAILBOX_RIGHTS = ("mkdir", "upload", "delete")
NO_TARGET_SOURCE = "This mailbox has no target source; choose one in its settings."


@dataclass(frozen=True)
class MailboxPrincipal:
    """Who acts in a mailbox's run: the mailbox itself, not a profile (no password, no
    sign-in, no quota), with MAILBOX_RIGHTS over its whole source. It answers what the
    files service and the audit log ask of whoever acts (an Account's `profile`)."""

    mailbox_id: int
    org_id: int
    name: str
    permissions: ClassVar[tuple[str, ...]] = MAILBOX_RIGHTS
    home: ClassVar[str] = "/"  # the source's root: the target folder is a path in it
    id: ClassVar[None] = None  # no profile: its audit rows name none
    quota_bytes: ClassVar[None] = None
    quota_files: ClassVar[None] = None

    @property
    def username(self) -> str:
        """Its name in the audit log."""
        return f"mailbox:{self.name}"


@dataclass(frozen=True)
class Account:
    """Who acts, with its organisation and source: a signed-in profile (and its web
    session's id, when it came from one: what a sign-out ends), or a mailbox's run."""

    profile: Profile | MailboxPrincipal
    organisation: Organisation
    source: Source | None
    session_id: str | None = None
    token_id: int | None = None  # the API token it acts through, when it does
    # the door an HTTP caller signed in by, as its audit rows name it (`AuditLog.acted`):
    # "web" (a console session, a download link, a share link's visit) or "api" (an API
    # token); set by that sign-in
    protocol: str | None = None


def address_allowed(address: str, allow: tuple[str, ...]) -> bool:
    """Whether a profile's IP allow-list (empty: any address) lets `address` in."""
    return not allow or in_networks(address, networks(allow))


def requires_tls(profile: Profile, organisation: Organisation) -> bool:
    """Whether the profile may sign in only over an encrypted channel: its own
    setting, or its organisation's when it has none."""
    return organisation.require_tls if profile.require_tls is None else profile.require_tls


def organisation_refusal(organisation: Organisation, now: datetime) -> Refusal | None:
    """Why this organisation's members (and its mailboxes, its links) may not act now, or None."""
    if organisation.status == "deleted":
        return Refusal(Reason.ORGANISATION_DELETED, ORGANISATION_DELETED)
    if organisation.status == "payment_missing":
        return Refusal(Reason.PAYMENT_MISSING, PAYMENT_MISSING)
    if organisation.status == "trial":
        ends = from_iso(organisation.trial_ends_at)
        if ends is not None and ends <= now:
            return Refusal(Reason.PAYMENT_MISSING, PAYMENT_MISSING)
    return None


def tls_refusal(profile: Profile, organisation: Organisation, protocol: str, encrypted: bool) -> Refusal | None:
    """Refused over a plain-text channel when the profile must use an encrypted one."""
    if encrypted or protocol in ALWAYS_ENCRYPTED or not requires_tls(profile, organisation):
        return None
    return Refusal(Reason.TLS_REQUIRED, TLS_REQUIRED.get(protocol, TLS_REQUIRED_ANY))


def refusal(
    profile: Profile,
    organisation: Organisation,
    now: datetime,
    *,
    protocol: str | None,
    address: str | None,
    encrypted: bool = True,
) -> Refusal | None:
    """Why `profile` may not act now over `protocol` from `address` (None: not asked,
    say for a share link's anonymous visitor), or None. The one order of checks."""
    refused = organisation_refusal(organisation, now)
    if refused is not None:
        return refused
    if not profile.active:
        return Refusal(Reason.ACCOUNT_DISABLED, DISABLED)
    expires = from_iso(profile.expires_at)
    if expires is not None and expires <= now:
        return Refusal(Reason.ACCOUNT_EXPIRED, EXPIRED)
    if protocol is None:
        return None
    if protocol not in profile.protocols:
        name = PROTOCOL_NAMES.get(protocol, protocol)
        return Refusal(
            Reason.PROTOCOL_NOT_ALLOWED, f"{name} access is not enabled for this account. Ask your administrator."
        )
    if address is not None and not address_allowed(address, profile.ip_allow):
        return Refusal(Reason.ADDRESS_NOT_ALLOWED, f"Sign-in from {address} is not allowed for this account.")
    return tls_refusal(profile, organisation, protocol, encrypted)


class AccessPolicy:
    """The policy with its clock, and the one loader of a profile's account."""

    def __init__(self, store: Store, clock):
        self._store = store
        self._clock = clock

    def now(self) -> datetime:
        return datetime.fromtimestamp(self._clock.seconds(), UTC)

    async def account(self, profile: Profile) -> Account:
        """The profile with its organisation and source, read now."""
        organisation = await self._store.run(queries.get_organisation, profile.org_id)
        source = None
        if profile.source_id is not None:
            source = await self._store.run(queries.get_source, profile.org_id, profile.source_id)
        return Account(profile, organisation, source)

    async def mailbox(self, mailbox: Mailbox) -> Account:
        """The account a mailbox's run acts as: the mailbox's own principal, in its
        organisation, on its target source (Unavailable when it has none)."""
        source = None
        if mailbox.source_id is not None:
            source = await self._store.run(queries.get_source, mailbox.org_id, mailbox.source_id)
        if source is None:
            raise Unavailable(NO_TARGET_SOURCE)
        organisation = await self._store.run(queries.get_organisation, mailbox.org_id)
        return Account(MailboxPrincipal(mailbox.id, mailbox.org_id, mailbox.name), organisation, source)

    async def load(self, profile_id: int, org_id: int | None = None) -> Account | None:
        """The account of a profile (of organisation `org_id`, when given), or None if gone."""
        if org_id is None:
            profile = await self._store.run(queries.get_profile_by_id, profile_id)
        else:
            profile = await self._store.run(queries.get_profile, org_id, profile_id)
        if profile is None:
            return None
        account = await self.account(profile)
        return account if account.organisation is not None else None

    def check(
        self, account: Account, *, protocol: str | None, address: str | None, encrypted: bool = True
    ) -> Refusal | None:
        """Why the account may not act now (None: it may)."""
        return refusal(
            account.profile, account.organisation, self.now(), protocol=protocol, address=address, encrypted=encrypted
        )

    def require(
        self,
        account: Account,
        *,
        protocol: str | None,
        address: str | None,
        encrypted: bool = True,
        token_type: str | None = None,
    ) -> Account:
        """The account, or AccessRefused with the policy's reason."""
        refused = self.check(account, protocol=protocol, address=address, encrypted=encrypted)
        if refused is not None:
            raise AccessRefused(refused, token_type)
        return account

    def organisation(self, organisation: Organisation) -> Refusal | None:
        """The organisation half alone (mailboxes, which act for no profile)."""
        return organisation_refusal(organisation, self.now())
