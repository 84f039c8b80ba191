"""Share links: a profile shares a file or folder of its own by a secret link, with
an expiry, an optional password and download limit, or as an upload-only drop box.

The link's token is shown once, when the share is made; the database keeps only
its SHA-256 (a long random token needs no slow hash). Visitors reach the files
through the files service as the sharing profile, so that profile's confinement,
permissions, quota and read-only source hold for them too, and every visit writes
one audit row in the profile's name saying it was an anonymous visitor.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import posixpath
import re
import secrets
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from html import escape

from twisted.internet import defer

from ..errors import (
    AlreadyExists,
    ApplianceError,
    AuthenticationFailed,
    Gone,
    Invalid,
    NotFound,
    PermissionDenied,
    RateLimited,
)
from ..models import LogEntry, Share, from_iso, to_iso
from ..storage.paths import Entry, split_path, virtual
from ..store import Store
from ..store import shares as share_queries
from . import signed, validation
from .access import AccessPolicy, Account, Reason
from .audit import AuditLog, clean
from .auth import AuthService
from .authority import require_authority_over_owner
from .changes import Field, describe_change, readable_time
from .files import FileSession, FilesService, Reader, Writer
from .passwords import Passwords, share_scope, validate_link
from .ratelimit import (
    SHARE_MAILS_PER_ACCOUNT,
    SHARE_MAILS_PER_DOMAIN,
    SHARE_MAILS_PER_RECIPIENT,
    RateLimiter,
    recipient_limits,
    wait_in_words,
)
from .throttle import Target

DEFAULT_DAYS = 7
MAX_DAYS = 365
ACCESS_SECONDS = 3600  # how long an unlocked password-protected link stays open
MAX_RECIPIENTS = 50
MAX_MESSAGE = 2000
MAX_SUFFIX = 100  # "name (1).ext" ... "name (100).ext", then a drop box refuses the name
# the door a link's visitors come by, as their audit rows name it: the link's page (the console's)
VISIT_PROTOCOL = "web"

# how a change of a link is told in the audit log
SHARE_FIELDS = {
    "expires_at": Field("expiry", "time", empty="never"),
    "max_downloads": Field("download limit", "number", empty="no limit"),
    "password_hash": Field("password", "secret"),
}

NO_LINK = "This link does not exist."
EXPIRED = "This link has expired."
REVOKED = "This link was revoked."
LIMIT_REACHED = "This link has reached its download limit."
ITEM_GONE = "The shared file or folder no longer exists."
PASSWORD_NEEDED = "This link is protected by a password."
WRONG_PASSWORD = "The password is not right."
# the access policy's refusals of the sharer's own account, told to a visitor who has none
OWNER_REFUSED = {
    Reason.ACCOUNT_DISABLED: "This link no longer works: the account that shared it is disabled.",
    Reason.ACCOUNT_EXPIRED: "This link no longer works: the account that shared it has expired.",
}
ACCESS_EXPIRED = "The access to this link has expired: enter the password again."
DROP_BOX = "This link is a drop box: it takes uploads only."
NOT_A_DROP_BOX = "This link does not take uploads."
OUTSIDE = "That path leads outside the shared folder."
EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def share_name(share: Share) -> str:
    """What a share is called: the name of the file or folder (the home folder: the owner)."""
    return posixpath.basename(share.path) or share.created_by


def view(share: Share) -> dict:
    """A share as the API shows it to its owner and admins (never the token)."""
    return {
        "id": share.id,
        "name": share_name(share),
        "path": share.path,
        "kind": "folder" if share.is_folder else "file",
        "url": None,  # known only when made: the token is not kept
        "expires_at": share.expires_at,
        "has_password": share.password_hash is not None,
        "max_downloads": share.max_downloads,
        "downloads": share.downloads,
        "upload_only": share.upload_only,
        "revoked": share.revoked,
        "created_at": share.created_at,
        "created_by": share.created_by,
    }


def numbered(name: str, n: int) -> str:
    """`report.pdf` -> `report (n).pdf`: the name a drop box gives a clashing upload."""
    stem, ext = posixpath.splitext(name)
    return f"{stem} ({n}){ext}"


def share_target(share: Share) -> Target:
    """A link's password, as the throttle counts it: a known target of the link's
    organisation, which sees (and may lift) the bans earned guessing it."""
    return Target(
        f"share:{share.id}", share.org_id, f"the share link to {clean(share.path)} of {clean(share.created_by)}"
    )


class Shares:
    def __init__(
        self,
        store: Store,
        files: FilesService,
        auth: AuthService,
        passwords: Passwords,
        audit: AuditLog,
        mailer,
        secret: bytes,
        console_url: Callable[[], str],
        clock,
        limits: RateLimiter | None = None,
        policy: AccessPolicy | None = None,
    ):
        self._limits = limits if limits is not None else RateLimiter(clock)
        self._policy = policy or AccessPolicy(store, clock)
        self._store = store
        self._files = files
        self._auth = auth
        self._passwords = passwords
        self._audit = audit
        self._mailer = mailer
        self._secret = secret
        self._console_url = console_url
        self._clock = clock
        # names taken by drop-box uploads still in progress: (home folder, path)
        self._reserved: set[tuple[str, str]] = set()

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self._clock.seconds(), UTC)

    def url(self, token: str) -> str:
        """The console's public page for a link."""
        return f"{self._console_url()}/auth/shared?token={token}"

    # -- the owner's side -------------------------------------------------------------

    async def create(self, account: Account, body: dict, address: str) -> dict:
        """Share a file or folder of the caller's own; the reply holds the token, once. Its
        check and its rows name the door `account` signed in by."""
        errors: dict[str, list[str]] = {}
        path = body.get("path")
        if not isinstance(path, str) or not path:
            raise Invalid("Say what to share.", {"path": ["This field is required."]})
        upload_only = body.get("upload_only", False)
        if not isinstance(upload_only, bool):
            errors["upload_only"] = ["Must be true or false."]
            upload_only = False
        expires_at = self._expiry(body.get("expires_at"), errors)
        max_downloads = self._limit(body.get("max_downloads"), errors)
        if upload_only and max_downloads is not None:
            errors["max_downloads"] = ["A drop box takes uploads only: it has no download limit."]
        recipients = self._recipients(body.get("recipients"), errors)
        note = body.get("message") or ""
        if not isinstance(note, str) or len(note) > MAX_MESSAGE:
            errors["message"] = [f"Write at most {MAX_MESSAGE} characters."]
        password = body.get("password")
        if password is not None and not isinstance(password, str):
            errors["password"] = ["Enter the password as text."]

        files = await self._files.session(account, account.protocol, address)
        path = files.normalise(path)
        try:
            entry = await files.stat(path)
        except NotFound as e:
            raise Invalid(e.message, {"path": [e.message]}) from None
        if entry.kind not in ("file", "dir"):
            raise Invalid(f"{path} is neither a file nor a folder: it cannot be shared.", {"path": ["Not shareable."]})
        if upload_only and not entry.is_dir:
            errors["upload_only"] = ["A drop box must be a folder."]
        if errors:
            raise Invalid("Some fields are not valid.", errors)
        self._may_share(account, upload_only, entry.is_dir)
        self._may_mail(account, recipients)
        password_hash = await self._passwords.hash(password, validate_link) if password else None

        token = secrets.token_urlsafe(32)
        share_id = await self._store.run(
            share_queries.insert_share,
            {
                "org_id": account.organisation.id,
                "profile_id": account.profile.id,
                "path": share_queries.stored_path(path, entry.is_dir),
                "token": _hash(token),
                "expires_at": expires_at,
                "password_hash": password_hash,
                "max_downloads": max_downloads,
                "upload_only": upload_only,
                "created_at": to_iso(self._now()),
            },
        )
        share = await self._store.run(share_queries.get_share, account.organisation.id, share_id)
        url = self.url(token)
        what = "a drop box of" if upload_only else "a link to"
        extras = "".join(
            [
                ", with a password" if password_hash else "",
                f", for {max_downloads} downloads" if max_downloads else "",
            ]
        )
        await self._audit.acted(
            account,
            "share",
            f"{clean(account.profile.username)} made {what} {clean(path)} (share {share_id}) "
            f"until {readable_time(expires_at)}{extras}",
            address=address,
            path=path,
        )
        mailed = await self._mail(account, share, url, recipients, note) if recipients else []
        who = clean(account.profile.username)
        sent = [m["to"] for m in mailed if m["sent"]]
        failed = [f"{m['to']} ({m['error']})" for m in mailed if not m["sent"]]
        if sent:
            await self._audit.acted(
                account,
                "share",
                f"{who} mailed the link of share {share_id} to {', '.join(sent)}",
                address=address,
                path=path,
            )
        if failed:
            await self._audit.acted(
                account,
                "share",
                f"The link of share {share_id} could not be mailed to {', '.join(failed)}; it was shown to {who} "
                "to hand over, and the appliance keeps trying to mail it",
                address=address,
                path=path,
            )
        return dict(view(share), url=url, token=token, mail=mailed)

    def _may_mail(self, account: Account, recipients: list[str]) -> None:
        """Count the mails to `recipients`, or refuse (RateLimited, before the link is made)
        past the limits per account and per recipient address."""
        if not recipients:
            return
        sender = (SHARE_MAILS_PER_ACCOUNT, str(account.profile.id))
        # one per inbox (case, +tags) and per domain (ratelimit.recipient_limits)
        per = [recipient_limits(SHARE_MAILS_PER_RECIPIENT, SHARE_MAILS_PER_DOMAIN, r) for r in recipients]
        each = [limit for limits in per for limit in limits]
        full = [r for r, limits in zip(recipients, per, strict=True) if self._limits.retry_after(*limits)]
        wait = max(self._limits.retry_after(sender, amount=len(recipients)), self._limits.retry_after(*each))
        if wait:
            if full:
                message = f"Too many links were mailed to {', '.join(clean(r) for r in full[:5])} lately."
            else:
                message = f"You mailed too many links lately ({SHARE_MAILS_PER_ACCOUNT.count} an hour at most)."
            raise RateLimited(f"{message} Try again {wait_in_words(wait)}, or send the link yourself.", wait)
        self._limits.take(sender, amount=len(recipients))
        self._limits.take(*each)

    def _may_share(self, account: Account, upload_only: bool, is_folder: bool) -> None:
        permissions = account.profile.permissions
        if upload_only:
            if "upload" not in permissions:
                raise PermissionDenied("You may not upload files, so you cannot make a drop box.")
            if account.source is None or account.source.read_only:
                raise PermissionDenied("The source is read-only: a drop box there could not take uploads.")
        else:
            if "download" not in permissions:
                raise PermissionDenied("You may not download files, so you cannot share them by link.")
            if is_folder and "list" not in permissions:
                raise PermissionDenied("You may not list folders, so you cannot share a folder by link.")

    def _expiry(self, value, errors: dict, default: bool = True) -> str | None:
        now = self._now()
        if value is None or value == "":
            return to_iso(now + timedelta(days=DEFAULT_DAYS)) if default else None
        try:
            moment = validation.moment(value, "expires_at")
        except Invalid as e:
            errors.update(e.fields)
            return None
        if moment <= now:
            errors["expires_at"] = ["Choose a time in the future."]
        elif moment > now + timedelta(days=MAX_DAYS):
            errors["expires_at"] = [f"A link may last at most {MAX_DAYS} days."]
        return to_iso(moment)

    @staticmethod
    def _limit(value, errors: dict) -> int | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1_000_000_000:
            errors["max_downloads"] = ["Enter a whole number of downloads, at least 1, or nothing for no limit."]
            return None
        return value

    @staticmethod
    def _recipients(value, errors: dict) -> list[str]:
        if value is None:
            return []
        if not isinstance(value, list) or len(value) > MAX_RECIPIENTS:
            errors["recipients"] = [f"Give a list of at most {MAX_RECIPIENTS} email addresses."]
            return []
        wrong = [v for v in value if not isinstance(v, str) or len(v) > 254 or not EMAIL.match(v.strip())]
        if wrong:
            errors["recipients"] = [f"Not an email address: {clean(str(v))[:100]}" for v in wrong[:5]]
            return []
        return list(dict.fromkeys(v.strip() for v in value))

    async def _mail(self, account: Account, share: Share, url: str, recipients: list[str], note: str) -> list[dict]:
        """Mail the link to each recipient at once and wait for the mail server's answers:
        [{to, sent, error}] (a failed one is retried in the background)."""
        who, name = clean(account.profile.username), clean(share_name(share))
        expires = share.expires_at[:16].replace("T", " ") + " UTC"
        if share.upload_only:
            subject, intro = f"{who} asks you to upload files", f'{who} asks you to upload files to "{name}".'
        else:
            subject, intro = f"{who} shared {name} with you", f'{who} shared "{name}" with you.'
        terms = [f"The link works until {expires}."]
        if share.max_downloads:
            terms.append(f"It allows {share.max_downloads} download{'s' if share.max_downloads > 1 else ''}.")
        if share.password_hash:
            terms.append(f"It is protected by a password: ask {who} for it.")
        quoted = f"\n\n{who} wrote:\n{note}" if note else ""
        text = f"Hello,\n\n{intro}{quoted}\n\nOpen:\n\n{url}\n\n{' '.join(terms)}\n"
        html_note = f"<p>{escape(who)} wrote:</p><blockquote>{escape(note).replace(chr(10), '<br>')}</blockquote>"
        html = (
            f"<p>Hello,</p><p>{escape(intro)}</p>{html_note if note else ''}"
            f'<p><a href="{escape(url)}">Open the link</a></p><p>{escape(" ".join(terms))}</p>'
        )
        errors = await defer.gatherResults(
            [defer.Deferred.fromCoroutine(self._mailer.send_now(r, subject, text, html)) for r in recipients]
        )
        return [{"to": r, "sent": e is None, "error": e} for r, e in zip(recipients, errors, strict=True)]

    async def _owned(self, account: Account, share_id: int) -> Share:
        """A share the caller may manage: their own, or any of the organisation's for an admin."""
        share = await self._store.run(share_queries.get_share, account.organisation.id, share_id)
        if share is None or (share.profile_id != account.profile.id and not account.profile.is_admin):
            raise NotFound("No such share.")
        return share

    async def list(self, account: Account, limit: int, offset: int) -> tuple[int, list[dict]]:
        """The caller's shares; an admin's list holds every share of the organisation."""
        only = None if account.profile.is_admin else account.profile.id
        count, shares = await self._store.run(share_queries.list_shares, account.organisation.id, only, limit, offset)
        return count, [view(s) for s in shares]

    async def get(self, account: Account, share_id: int) -> dict:
        return view(await self._owned(account, share_id))

    async def change(self, account: Account, share_id: int, body: dict, address: str) -> dict:
        """Change a link's expiry, download limit or password (null removes a limit or password)."""
        share = await self._owned(account, share_id)
        await require_authority_over_owner(self._store, account, share.profile_id)  # an admin opening up another's link
        if share.revoked:
            raise Invalid("This link was revoked: make a new one.")
        errors: dict[str, list[str]] = {}
        values: dict = {}
        if "expires_at" in body:
            values["expires_at"] = self._expiry(body["expires_at"], errors)
        if "max_downloads" in body:
            values["max_downloads"] = self._limit(body["max_downloads"], errors)
            if share.upload_only and values["max_downloads"] is not None:
                errors["max_downloads"] = ["A drop box takes uploads only: it has no download limit."]
        if "password" in body:
            password = body["password"]
            if password is not None and not isinstance(password, str):
                errors["password"] = ["Enter the password as text."]
        if errors:
            raise Invalid("Some fields are not valid.", errors)
        if "password" in body:
            values["password_hash"] = (
                await self._passwords.hash(body["password"], validate_link) if body["password"] else None
            )
        changed = describe_change(vars(share), values, SHARE_FIELDS)
        if changed:  # only what really changed is written and told
            await self._store.run(share_queries.update_share, account.organisation.id, share_id, values)
            if "password_hash" in values:
                self._passwords.forget(share_scope(share_id))
            await self._audit.acted(
                account,
                "share",
                f"{clean(account.profile.username)} changed share {share_id} of {clean(share.created_by)}: {changed}",
                address=address,
                path=share.path,
            )
        return view(await self._owned(account, share_id))

    async def revoke(self, account: Account, share_id: int, address: str) -> None:
        """End a link for good (it stays listed, marked revoked): a change of its owner's."""
        share = await self._owned(account, share_id)
        await require_authority_over_owner(self._store, account, share.profile_id)
        if share.revoked:
            return
        await self._store.run(share_queries.revoke_share, account.organisation.id, share_id)
        await self._audit.acted(
            account,
            "share",
            f"{clean(account.profile.username)} revoked share {share_id} of {clean(share.created_by)} "
            f"({clean(share.path)})",
            address=address,
            path=share.path,
        )

    # -- the visitor's side -------------------------------------------------------------

    async def visit(self, token: str, address: str, password: str | None = None, access: str | None = None) -> Visit:
        """Open a link for an anonymous visitor, or refuse it with the reason.

        A password-protected link opens with its password or with an access value from
        `Visit.access()`; without either, only its metadata can be seen.
        """
        share = await self._store.run(share_queries.share_by_token, _hash(token)) if token else None
        if share is None:
            raise NotFound(NO_LINK)
        account = await self._policy.load(share.profile_id, share.org_id)
        if account is None:
            raise NotFound(NO_LINK)
        now = self._now()
        # the sharer's account: the access policy, without protocol or address (the
        # visitor is not the sharer and comes from anywhere)
        refused = self._policy.check(account, protocol=None, address=None)
        if refused is not None and refused.organisation:
            await self._refused(share, address, refused.message)
            raise PermissionDenied(refused.message)
        if share.revoked:
            reason = REVOKED
        elif share.expires_at and from_iso(share.expires_at) <= now:
            reason = EXPIRED
        elif share.max_downloads is not None and share.downloads >= share.max_downloads:
            reason = LIMIT_REACHED
        elif refused is not None:
            reason = OWNER_REFUSED[refused.reason]
        else:
            reason = None
        if reason is not None:
            await self._refused(share, address, reason)
            raise Gone(reason)
        unlocked = share.password_hash is None
        if not unlocked and access:
            if not self._access_valid(share, access):
                raise AuthenticationFailed(ACCESS_EXPIRED)
            unlocked = True
        elif not unlocked and password is not None:
            target = share_target(share)
            self._auth.refuse_if_banned(address, target.key)  # the address, or this address guessing this link
            if not await self._passwords.verify(password, share.password_hash, scope=share_scope(share.id)):
                await self._refused(share, address, "wrong password")
                await self._auth.wrong_secret(target, address)
                raise AuthenticationFailed(WRONG_PASSWORD)
            unlocked = True
        # the visitor acts as the sharer, by the link's door
        return Visit(self, share, dataclasses.replace(account, protocol=VISIT_PROTOCOL), address, unlocked)

    async def _refused(self, share: Share, address: str, reason: str) -> None:
        await self._audit.record(
            LogEntry(
                org_id=share.org_id,
                profile_id=share.profile_id,
                username=share.created_by,
                protocol=VISIT_PROTOCOL,
                action="share_access",
                path=share.path,
                remote_address=address,
                message=f"anonymous was refused share {share.id} of {clean(share.created_by)}: {reason}",
            )
        )

    def _access_value(self, share: Share, until: int) -> str:
        # bound to the password: changing it ends every access given with the old one
        return signed.sign(self._secret, "share-access", share.id, until, str(share.password_hash))

    def _access_valid(self, share: Share, access: str) -> bool:
        valid = signed.verify(self._secret, access, "share-access", self._clock.seconds(), str(share.password_hash))
        return valid is not None and valid[0] == str(share.id)


class Visit:
    """An anonymous visitor's use of one link (files go through the sharing profile's session)."""

    def __init__(self, shares: Shares, share: Share, account: Account, address: str, unlocked: bool):
        self._shares = shares
        self.share = share
        self.account = account
        self.address = address
        self.unlocked = unlocked
        self.label = f"share {share.id} of {share.created_by}"
        self._files: FileSession | None = None
        self._reserved: list[tuple[str, str]] = []

    async def _session(self) -> FileSession:
        if self._files is None:
            self._files = await self._shares._files.session(
                self.account, self.account.protocol, self.address, share=self.label
            )
        return self._files

    async def _log(self, path: str, message: str) -> None:
        await self._shares._audit.acted(self.account, "share_access", message, address=self.address, path=path)

    def _require(self, permission: str | None = None) -> None:
        if not self.unlocked:
            raise AuthenticationFailed(PASSWORD_NEEDED)
        if permission is not None and permission not in self.account.profile.permissions:
            what = {"list": "list folders", "download": "download files", "upload": "upload files"}[permission]
            raise PermissionDenied(f"This link no longer works for that: its owner may not {what} any more.")

    def inside(self, path: str) -> str:
        """A path the visitor gave, relative to the shared folder, as a path in the owner's home."""
        try:
            parts = split_path(path or "/")
        except PermissionDenied:
            raise PermissionDenied(OUTSIDE) from None
        return virtual(split_path(self.share.path) + parts)

    def relative(self, path: str) -> str:
        """A path in the owner's home as the visitor sees it (from the shared folder)."""
        return virtual(split_path(path)[len(split_path(self.share.path)) :])

    def _hide(self, text: str) -> str:
        """`text` with the owner's paths as the visitor knows them: from the shared
        folder (/project/a.txt is /a.txt), or the shared file's name alone."""
        root = self.share.path.rstrip("/")
        if not root:
            return text
        if not self.share.is_folder:
            return text.replace(root, posixpath.basename(root))
        return re.sub(re.escape(root) + r"(/|(?=$|[\s.,:;)'\"]))", "/", text)

    @contextlib.contextmanager
    def _as_visitor(self):
        """The owner's file session speaks of the owner's paths: an error that reaches
        the visitor must not show where the shared folder sits in the owner's home."""
        try:
            yield
        except ApplianceError as e:
            e.message = self._hide(e.message)
            e.args = (e.message,)
            if isinstance(e, Invalid):
                e.fields = {name: [self._hide(m) for m in messages] for name, messages in e.fields.items()}
            raise

    def access(self) -> dict:
        """A short-lived value that opens this password-protected link (`?access=`)."""
        self._require()
        until = int(self._shares._clock.seconds()) + ACCESS_SECONDS
        expires = to_iso(datetime.fromtimestamp(until, UTC))
        return {
            "access": self._shares._access_value(self.share, until),
            "expires_at": expires,
        }

    async def metadata(self) -> dict:
        """What the link is; its name and size only once it is unlocked."""
        share = self.share
        data = {
            "name": None,
            "kind": "folder" if share.is_folder else "file",
            "size": None,
            "expires_at": share.expires_at,
            "upload_only": share.upload_only,
            "password_required": share.password_hash is not None,
            "unlocked": self.unlocked,
            "downloads_left": None if share.max_downloads is None else share.max_downloads - share.downloads,
            "shared_by": None,
        }
        if self.unlocked:
            entry = await self._stat()
            data.update(name=share_name(share), shared_by=share.created_by)
            if not share.is_folder:
                data["size"] = entry.size
        await self._log(share.path, f"anonymous opened {self.label} ({clean(share.path)})")
        return data

    async def _stat(self) -> Entry:
        files = await self._session()
        try:
            entry = await files.stat(self.share.path)
        except NotFound:
            raise NotFound(ITEM_GONE) from None
        if entry.is_dir != self.share.is_folder:
            raise NotFound(ITEM_GONE)
        return entry

    async def listing(self, path: str) -> tuple[str, list[Entry]]:
        """A folder inside a shared folder: (its path as the visitor sees it, its entries)."""
        self._require("list")
        if self.share.upload_only:
            raise PermissionDenied(DROP_BOX)
        if not self.share.is_folder:
            raise Invalid("This link is to a file, not a folder.")
        target = self.inside(path)
        await self._stat()
        with self._as_visitor():
            entries = await (await self._session()).list(target)
        await self._log(target, f"anonymous listed {clean(target)} through {clean(self.label)}")
        return self.relative(target), entries

    async def open_download(self, path: str) -> tuple[str, Reader]:
        """The shared file, or a file inside the shared folder: (its name, a reader).
        Call `count_download` before sending any byte."""
        self._require("download")
        if self.share.upload_only:
            raise PermissionDenied(DROP_BOX)
        if self.share.is_folder:
            target = self.inside(path)
            if target == self.share.path:
                raise Invalid("Choose a file inside the shared folder.", {"path": ["Choose a file."]})
            await self._stat()
        else:
            target = self.share.path
        with self._as_visitor():
            reader = await (await self._session()).open_read(target)
        return posixpath.basename(target), reader

    async def count_download(self) -> None:
        """Count one download against the limit; refused when the limit was reached meanwhile."""
        if not await self._shares._store.run(share_queries.count_download, self.share.id):
            await self._shares._refused(self.share, self.address, LIMIT_REACHED)
            raise Gone(LIMIT_REACHED)

    async def check_upload(self, size: int | None) -> int | None:
        """May a visitor upload `size` bytes (None: not known yet) into this drop box now:
        asked before the request's body is read. Returns the room left in the owner's
        quota (None: no byte quota)."""
        self._require("upload")
        if not self.share.upload_only:
            raise PermissionDenied(NOT_A_DROP_BOX)
        await self._stat()
        files = await self._session()
        with self._as_visitor():
            return await files.check_receive(self.share.path, size)

    async def open_upload(self, filename: str) -> Writer:
        """An upload into a drop box, under the file's own name, or `name (n).ext`
        when that is taken: a visitor never replaces a file."""
        self._require("upload")
        if not self.share.upload_only:
            raise PermissionDenied(NOT_A_DROP_BOX)
        name = posixpath.basename(filename.replace("\\", "/")).strip()
        if name in ("", ".", ".."):
            raise Invalid("Name the file you upload.", {"file": ["The file has no name."]})
        split_path(name)  # refuses names no protocol may create
        await self._stat()
        files = await self._session()
        reserved = self._shares._reserved
        for n in range(MAX_SUFFIX + 1):
            target = posixpath.join(self.share.path, name if n == 0 else numbered(name, n))
            key = (files.tree.root, target)
            if key in reserved:  # another visitor is uploading under that name right now
                continue
            reserved.add(key)
            try:
                with self._as_visitor():
                    writer = await files.open_write(target, exclusive=True)
            except BaseException as e:
                reserved.discard(key)
                if isinstance(e, AlreadyExists):
                    continue
                raise
            self._reserved.append(key)
            return writer
        raise AlreadyExists(f"Too many files named {name} are in this drop box already: rename the file.")

    def release(self) -> None:
        """Free the names this visit's uploads held (call when its request ends)."""
        for key in self._reserved:
            self._shares._reserved.discard(key)
        self._reserved.clear()
