"""Password resets and invitations, with tokens like Django's: an HMAC over the
profile, its current password hash and a timestamp, so a token expires, and
works once (setting a password changes the hash it was made from)."""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape

from twisted.logger import Logger

from ..errors import Invalid, PermissionDenied, RateLimited
from ..models import LogEntry, to_iso
from ..store import Store, queries
from ..store import profiles as profile_queries
from . import validation
from .audit import AuditLog, clean
from .authority import require_authority
from .passwords import Passwords, profile_scope, validate
from .ratelimit import (
    INVITES_PER_ADMIN,
    INVITES_PER_DOMAIN,
    INVITES_PER_EMAIL,
    INVITES_PER_PROFILE,
    RESETS_PER_ACCOUNT,
    RESETS_PER_CLIENT,
    RESETS_PER_DOMAIN,
    RESETS_PER_EMAIL,
    TEST_MAILS_PER_OPERATOR,
    RateLimiter,
    inbox,
    recipient_limits,
    wait_in_words,
)

RESET_SENT = "Password reset link has been sent to your email."
LIFETIME = 3 * 86400  # seconds a link stays valid
BAD_LINK = "This link is invalid or has expired. Ask for a new one."
TOO_MANY_RESETS = "Too many password reset requests came from your address."
INVITES_REFUSED = {  # by the limit reached
    INVITES_PER_ADMIN.name: "You sent {count} invitations within the last hour, the most one admin may.",
    INVITES_PER_EMAIL.name: "This address got {count} invitations within the last hour, the most one may get.",
    INVITES_PER_DOMAIN.name: "This address's domain got {count} invitations within the last hour, the most one may get.",
    INVITES_PER_PROFILE.name: "This profile was sent {count} invitations within the last hour: "
    "ask the person to look in their spam folder.",
}

TOO_MANY_TEST_MAILS = "You sent many test mails within the last hour."
OPERATOR_ONLY = "Only the operator can see and test the appliance's outbound mail."

log = Logger()


@dataclass(frozen=True)
class Invitation:
    """What became of an invitation: mailed, or why not and the link to hand over
    instead (only ever given to the admin who sent it, who may change the profile)."""

    email: str
    mailed: bool
    error: str | None = None
    link: str | None = None

    def reply(self) -> dict:
        if self.mailed:
            return {"mailed": True, "detail": f"An invitation was sent to {self.email}."}
        return {
            "mailed": False,
            "error": self.error,
            "link": self.link,
            "detail": f"The invitation could not be mailed to {self.email} ({self.error}). Copy the invitation "
            "link and give it to the person: it works once and expires in 3 days. The appliance keeps trying "
            "to mail it.",
        }


def _b36(number: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    text = ""
    while True:
        number, rest = divmod(number, 36)
        text = digits[rest] + text
        if not number:
            return text


class Accounts:
    def __init__(
        self,
        store: Store,
        passwords: Passwords,
        audit: AuditLog,
        mailer,
        secret: bytes,
        appliance_settings,
        clock,
        limits: RateLimiter | None = None,
    ):
        self._limits = limits if limits is not None else RateLimiter(clock)
        self._store = store
        self._passwords = passwords
        self._audit = audit
        self._mailer = mailer
        self._secret = secret
        self._appliance_settings = appliance_settings  # the public host name in links, as it is now
        self._clock = clock

    def _token(self, profile, timestamp: int) -> str:
        material = f"{profile.id}:{profile.password_hash}:{profile.email}:{timestamp}".encode()
        digest = hmac.new(self._secret, b"password-reset:" + material, hashlib.sha256).hexdigest()[:32]
        return f"{_b36(timestamp)}-{digest}"

    def link(self, profile, kind: str = "reset") -> str:
        uid = base64.urlsafe_b64encode(str(profile.id).encode()).decode().rstrip("=")
        token = self._token(profile, int(self._clock.seconds()))
        base = self.console_url()
        if kind == "invite":
            return f"{base}/auth/register?uid={uid}&token={token}"
        return f"{base}/auth/{uid}/{token}"

    def console_url(self) -> str:
        """The console's address in links (the public host name as the settings say now)."""
        return self._appliance_settings.console_url()

    async def request_reset(self, email: str, address: str) -> None:
        """Mail a reset link to the active profiles with this address; say nothing about which exist.

        Limited (core/ratelimit.py) per client `address`, counted on every request and
        refused with RateLimited, which tells nothing about accounts; and per typed
        address and per account, where the mail is skipped without a word, so the answer
        stays the same whether an account exists or not."""
        self._limits.require(TOO_MANY_RESETS, (RESETS_PER_CLIENT, address))
        if not isinstance(email, str) or "@" not in email:
            raise Invalid("Enter a valid email address.", {"email": ["Enter a valid email address."]})
        if self._limits.take((RESETS_PER_EMAIL, inbox(email))):  # one inbox, whatever its case or +tag
            log.warn("password reset for {email} not mailed: asked for too often", email=clean(email.strip()))
            return
        for profile in await self._store.run(queries.profiles_by_email, email.strip()):
            # the domain counts mails sent, not requests: asking for unknown addresses of
            # a domain does not use up its resets
            domain = recipient_limits(RESETS_PER_EMAIL, RESETS_PER_DOMAIN, profile.email)[1]
            if self._limits.take((RESETS_PER_ACCOUNT, str(profile.id)), domain):
                log.warn("password reset of {username} not mailed: asked for too often", username=profile.username)
                continue
            link = self.link(profile)
            self._mailer.send(
                profile.email,
                "Reset your password",
                f"Hello {profile.username},\n\nSomeone asked to reset the password of your account. "
                f"To choose a new password, open:\n\n{link}\n\nThe link works once and expires in 3 days. "
                "If you did not ask for this, ignore this message.\n",
                f"<p>Hello {escape(profile.username)},</p><p>Someone asked to reset the password of your account. "
                f'<a href="{escape(link)}">Choose a new password</a>.</p>'
                "<p>The link works once and expires in 3 days. If you did not ask for this, ignore this message.</p>",
            )

    def _invite_limits(self, account, email, profile_id: int | None = None) -> list:
        """(rule, key) of every limit an invitation counts against."""
        limits = [(INVITES_PER_ADMIN, str(account.profile.id))]
        if isinstance(email, str):
            limits.extend(recipient_limits(INVITES_PER_EMAIL, INVITES_PER_DOMAIN, email))
        if profile_id is not None:
            limits.append((INVITES_PER_PROFILE, str(profile_id)))
        return limits

    def _refuse_past_limits(self, limits: list) -> None:
        for rule, key in limits:
            wait = self._limits.retry_after((rule, key))
            if wait:
                raise RateLimited(
                    f"{INVITES_REFUSED[rule.name].format(count=rule.count)} Try again {wait_in_words(wait)}, "
                    "or give the profile a password instead.",
                    wait,
                )

    def check_invite(self, account, email) -> None:
        """Refuse (RateLimited) when the admin `account` may send no invitation to `email` now."""
        self._refuse_past_limits(self._invite_limits(account, email))

    async def invite(self, account, profile) -> Invitation:
        """Mail `profile` a link to choose its password, sent by the admin `account`
        (refused for a profile that holds more than `account`, and past the limits on
        invitations per profile, per address and per admin). Waits for the mail server's
        answer: when it did not take the mail, the invitation carries the link, for the
        admin to hand over."""
        require_authority(account.profile, profile)
        limits = self._invite_limits(account, profile.email, profile.id)
        self._refuse_past_limits(limits)
        self._limits.take(*limits)
        invited_by = account.profile.username
        link = self.link(profile, "invite")
        error = await self._mailer.send_now(
            profile.email,
            "Your file transfer account",
            f"Hello {profile.username},\n\n{invited_by} created an account for you. To choose your password, "
            f"open:\n\n{link}\n\nThe link works once and expires in 3 days.\n",
            f"<p>Hello {escape(profile.username)},</p><p>{escape(invited_by)} created an account for you. "
            f'<a href="{escape(link)}">Choose your password</a>.</p><p>The link works once and expires in 3 days.</p>',
        )
        if error is None:
            return Invitation(profile.email, True)
        return Invitation(profile.email, False, error, link)

    def mail_status(self, account) -> dict:
        """The state of outbound mail (the operator's only)."""
        if not account.profile.is_superuser:
            raise PermissionDenied(OPERATOR_ONLY)
        return self._mailer.status()

    async def send_test_mail(self, account, to=None) -> dict:
        """Mail a test message (to `to`, else the operator's own address) and wait for the
        mail server's answer: {sent, to, error} with the state of outbound mail. The
        operator's only; a few an hour."""
        if not account.profile.is_superuser:
            raise PermissionDenied(OPERATOR_ONLY)
        try:
            to = validation.email(to) if to else account.profile.email
        except Invalid:
            raise Invalid("Enter a valid email address.", {"to": ["Enter a valid email address."]}) from None
        if not to:
            raise Invalid("Give an address to send the test mail to.", {"to": ["Enter an email address."]})
        self._limits.require(TOO_MANY_TEST_MAILS, (TEST_MAILS_PER_OPERATOR, str(account.profile.id)))
        console = self.console_url()
        error = await self._mailer.send_now(
            to,
            "Test mail from the file transfer appliance",
            f"This is a test mail sent by {account.profile.username} from {console}.\n\n"
            "Outbound mail works: password resets and invitations will reach their recipients.\n",
            f"<p>This is a test mail sent by {escape(account.profile.username)} from {escape(console)}.</p>"
            "<p>Outbound mail works: password resets and invitations will reach their recipients.</p>",
            retry=False,
        )
        return {"sent": error is None, "to": to, "error": error, "mail": self._mailer.status()}

    async def confirm(self, uid: str, token: str, password: str, repeated: str) -> None:
        """Set a new password from a reset or invitation link."""
        if password != repeated:
            raise Invalid("The two passwords differ.", {"new_password2": ["The two passwords differ."]})
        try:
            validate(password)
        except Invalid as e:
            raise Invalid(e.message, {"new_password1": list(e.fields.values())[0]}) from None
        profile = None
        try:
            profile_id = int(base64.urlsafe_b64decode(uid + "=" * (-len(uid) % 4)).decode())
            profile = await self._store.run(queries.get_profile_by_id, profile_id)
            stamp = int(token.split("-", 1)[0], 36)
        except (ValueError, UnicodeDecodeError, AttributeError):
            profile = None
        if (
            profile is None
            or not profile.active
            or self._clock.seconds() - stamp > LIFETIME
            or not hmac.compare_digest(self._token(profile, stamp), token)
        ):
            raise Invalid(BAD_LINK, {"token": [BAD_LINK]})
        password_hash = await self._passwords.hash(password)
        now = to_iso(datetime.fromtimestamp(self._clock.seconds(), UTC))
        # the hash the token was checked against must still be there: the same link used
        # twice at once (both checked before either was hashed) sets one password only
        if not await self._store.run(
            profile_queries.set_password_if_unchanged, profile.id, profile.password_hash, password_hash, now
        ):
            raise Invalid(BAD_LINK, {"token": [BAD_LINK]})
        self._passwords.forget(profile_scope(profile.id))
        await self._audit.record(
            LogEntry(org_id=profile.org_id, profile_id=profile.id, username=profile.username, protocol="web",
                     action="password_changed", message=f"{clean(profile.username)} set a new password from a link")
        )  # fmt: skip

    async def change_password(self, account, old: str, new: str, repeated: str) -> None:
        """The signed-in user changes their own password (all their sessions end)."""
        if not await self._passwords.verify(old, account.profile.password_hash):
            raise Invalid(
                "The current password is not right.", {"old_password": ["The current password is not right."]}
            )
        if new != repeated:
            raise Invalid("The two passwords differ.", {"new_password2": ["The two passwords differ."]})
        try:
            validate(new)
        except Invalid as e:
            raise Invalid(e.message, {"new_password1": list(e.fields.values())[0]}) from None
        now = to_iso(datetime.fromtimestamp(self._clock.seconds(), UTC))
        password_hash = await self._passwords.hash(new)
        await self._store.run(
            queries.update_profile, account.profile.id, {"password_hash": password_hash, "password_changed_at": now}
        )
        self._passwords.forget(profile_scope(account.profile.id))
        await self._audit.acted(
            account, "password_changed", f"{clean(account.profile.username)} changed their password"
        )
