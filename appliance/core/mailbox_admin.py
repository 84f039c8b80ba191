"""Mailboxes as admins see and change them: validated fields, the password
encrypted at rest and never shown, the host checked before it is saved; every
change written to the audit log."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Literal

from pydantic import Field as Bounds

from ..declarations import ID, MAX_STRING, SQLITE_MAX, Declaration, Hint, read, refuse, rule, shown
from ..errors import Invalid, NotFound, Unavailable
from ..mail.parsing import render_folder
from ..models import Mailbox, to_iso
from ..netcheck import Destinations
from ..store import Store, queries
from ..store import mailboxes as mailbox_queries
from . import validation
from .audit import AuditLog
from .auth import Account
from .changes import Field, describe_change

CHOICES = {
    "security": ("tls", "starttls", "none"),
    "keep": ("attachments", "message"),
    "after": ("seen", "move", "delete"),
}
DEFAULT_PORTS = {"tls": 993, "starttls": 143, "none": 143}
# how a change of each column is told in the audit log
FIELDS = {
    "name": Field("name"),
    "host": Field("host"),
    "port": Field("port", "number"),
    "security": Field("security", "choice", {"tls": "TLS", "starttls": "STARTTLS", "none": "none"}),
    "verify_tls": Field("certificate check", "bool"),
    "username": Field("username"),
    "password_encrypted": Field("password", "secret"),
    "folder": Field("folder"),
    "source_id": Field("source"),
    "target_folder": Field("target folder"),
    "keep": Field("what is kept", "choice", {"attachments": "attachments", "message": "whole message"}),
    "after": Field("after processing", "choice", {"seen": "mark seen", "move": "move", "delete": "delete"}),
    "move_to": Field("move to folder"),
    "interval_minutes": Field("interval in minutes", "number"),
    "enabled": Field("enabled", "bool"),
}


def _text(label: str, *, required: bool = False, most: int = 255, then=()) -> object:
    """A text field, stripped: at most `most` printable characters (`required`: not blank)."""
    hint = "Enter a value." if required else f"At most {most} characters."

    def check(value: str) -> str:
        if (required and not value.strip()) or len(value) > most:
            raise Invalid(hint)
        problem = validation.control_problem(value, label)
        if problem or validation.hidden_characters(value):
            raise Invalid(problem or validation.HIDDEN_HINT)
        return value.strip()

    return Annotated[str, Bounds(max_length=MAX_STRING), Hint(hint), rule(check), *then]


def _choice(name: str) -> object:
    return Annotated[Literal[CHOICES[name]], Hint(f"Choose one of: {', '.join(CHOICES[name])}.")]


def _password(value: str) -> str:
    if len(value) > 1000:
        raise Invalid("Enter the mailbox password.")
    if problem := validation.control_problem(value, "The password"):
        raise Invalid(problem)  # it would go onto the IMAP wire as more than the password
    return value


def _folder_template(value: str) -> str:
    try:
        render_folder(value, _SAMPLE)
    except Exception:  # noqa: BLE001
        raise Invalid("Use a folder like /mail/{date} ({date}, {from}, {subject}, {message_id}).") from None
    return value


FLAG = Annotated[bool, Hint("Must be true or false.")]
NAME, HOST, USERNAME = (_text(f"The {label}", required=True) for label in ("name", "host", "username"))
FOLDER, MOVE_TO = _text("The folder"), _text("The folder to move messages to")
TARGET_FOLDER = _text("The target folder", most=1000, then=(rule(_folder_template),))
SECURITY, KEEP, AFTER = (_choice(name) for name in ("security", "keep", "after"))


class MailboxFields(Declaration):
    """What an admin gives of a mailbox (a new one: name, host and username at least)."""

    name: NAME
    host: HOST
    port: Annotated[int, Bounds(ge=1, le=65535), Hint("Enter a port from 1 to 65535.")] = 993
    security: SECURITY = "tls"
    verify_tls: FLAG = True
    username: USERNAME
    password: Annotated[str, Bounds(max_length=MAX_STRING), Hint("Enter the mailbox password."), rule(_password)] = ""
    folder: FOLDER = "INBOX"
    # not given: the account's own source, or else the organisation's default
    source: Annotated[int, Bounds(ge=1, le=SQLITE_MAX), Hint("Choose one of your organisation's sources.")] = None
    target_folder: TARGET_FOLDER = "/mail/{date}"
    keep: KEEP = "attachments"
    after: AFTER = "seen"
    move_to: MOVE_TO = ""
    interval_minutes: Annotated[int, Bounds(ge=1, le=1440), Hint("Enter a number of minutes from 1 to 1440.")] = 5
    enabled: FLAG = True


class MailboxReply(shown(MailboxFields, leave=("password",))):
    """A mailbox as the API shows it (`view`): what an admin gives of it but the password, and
    what only the core sets."""

    id: ID
    source: Annotated[int | None, Bounds(ge=1)]  # as stored: the column may be empty
    has_password: bool
    last_run: Annotated[dict | None, Bounds(description="the latest run (MailboxService.runs), none before one")]


def view(mailbox: Mailbox, last_run: dict | None) -> dict:
    return {
        "id": mailbox.id,
        "name": mailbox.name,
        "host": mailbox.host,
        "port": mailbox.port,
        "security": mailbox.security,
        "verify_tls": mailbox.verify_tls,
        "username": mailbox.username,
        "has_password": bool(mailbox.password_encrypted),
        "folder": mailbox.folder,
        "source": mailbox.source_id,
        "target_folder": mailbox.target_folder,
        "keep": mailbox.keep,
        "after": mailbox.after,
        "move_to": mailbox.move_to,
        "interval_minutes": mailbox.interval_minutes,
        "enabled": mailbox.enabled,
        "last_run": last_run,
    }


class MailboxAdmin:
    def __init__(
        self, store: Store, threads, secrets, settings, clock, destinations: Destinations, audit: AuditLog
    ):  # fmt: skip
        self._destinations = destinations
        self._audit = audit
        self._store = store
        self._threads = threads
        self._secrets = secrets
        self._settings = settings
        self._clock = clock

    async def get(self, account: Account, mailbox_id: int) -> Mailbox:
        mailbox = await self._store.run(mailbox_queries.get_mailbox, account.organisation.id, mailbox_id)
        if mailbox is None:
            raise NotFound("No such mailbox.")
        return mailbox

    async def listing(self, account: Account, search: str, limit: int, offset: int) -> tuple[int, list[dict]]:
        """(count, the page of mailboxes) of `account`'s organisation; `search` finds them by name."""
        count, mailboxes = await self._store.run(
            mailbox_queries.list_mailboxes, account.organisation.id, search, limit, offset
        )
        return count, [await self.show(account, mailbox) for mailbox in mailboxes]

    async def item(self, account: Account, mailbox_id: int) -> dict:
        return await self.show(account, await self.get(account, mailbox_id))

    async def create(self, account: Account, body: dict, address: str) -> dict:
        """Validate, save and audit a new mailbox (its host checked first)."""
        values = await self.values(account, body)
        warning = await self._host_warning(values, None)
        mailbox_id = await self._store.run(mailbox_queries.insert_mailbox, values)
        mailbox = await self.get(account, mailbox_id)
        await self._told(account, address, f"{account.profile.username} created the mailbox {mailbox.name}")
        return _warned(await self.show(account, mailbox), warning)

    async def change(self, account: Account, mailbox_id: int, body: dict, address: str) -> dict:
        """Validate a change; only what really changes is written and told."""
        existing = await self.get(account, mailbox_id)
        values = await self.values(account, body, existing)
        warning = await self._host_warning(values, existing)
        changed = await self.describe_change(account, existing, values)
        if changed:
            await self._store.run(mailbox_queries.update_mailbox, account.organisation.id, mailbox_id, values)
            await self._told(
                account, address, f"{account.profile.username} changed the mailbox {existing.name}: {changed}"
            )
        return _warned(await self.item(account, mailbox_id), warning)

    async def _host_warning(self, values: dict, existing: Mailbox | None) -> str | None:
        """Check a new or changed host: one the appliance may never connect to (link-local,
        cloud metadata, this host without the setting) is refused; one that does not
        resolve now is saved with a warning, as a mailbox is often made before its server's
        name is in the DNS (it is looked up again at every poll and test)."""
        if "host" not in values and "port" not in values:
            return None
        host = values.get("host", existing.host if existing else "")
        port = values.get("port", existing.port if existing else DEFAULT_PORTS[values.get("security", "tls")])
        try:
            await self._threads.work(self._destinations.allowed, host, port, self._settings.allow_loopback)
        except Invalid as e:  # refused: the host field is wrong
            raise Invalid(e.message, {"host": [e.message]}) from None
        except Unavailable as e:
            return (
                f"{e.message} The mailbox is saved: it is looked up again each time it is polled (when enabled) "
                "or tested, and its runs say if it still fails."
            )
        return None

    async def delete(self, account: Account, mailbox_id: int, address: str) -> None:
        existing = await self.get(account, mailbox_id)
        await self._store.run(mailbox_queries.delete_mailbox, account.organisation.id, mailbox_id)
        await self._told(account, address, f"{account.profile.username} deleted the mailbox {existing.name}")

    async def runs(self, account: Account, mailbox_id: int, limit: int, offset: int) -> tuple[int, list]:
        """(count, the page of runs) of one mailbox, newest first."""
        await self.get(account, mailbox_id)
        org_id = account.organisation.id
        rows = await self._store.run(mailbox_queries.runs, org_id, mailbox_id, limit, offset)
        return await self._store.run(mailbox_queries.count_runs, org_id, mailbox_id), rows

    async def _told(self, account: Account, address: str, message: str) -> None:
        await self._audit.acted(account, "mailbox", message, address=address)

    async def describe_change(self, account: Account, existing: Mailbox, values: dict) -> str:
        """What `values` (from `values()`) change on `existing`, in words ("" when nothing);
        the password compared opened (it is sealed anew on every save), never shown."""

        def opened(sealed: str) -> str:
            try:
                return self._secrets.decrypt(sealed) if sealed else ""
            except Exception:  # noqa: BLE001 - a key that changed: tell it as changed
                return sealed

        old, new = dict(vars(existing)), dict(values)
        if "password_encrypted" in new:
            old["password_encrypted"], new["password_encrypted"] = (
                opened(old["password_encrypted"]),
                opened(new["password_encrypted"]),
            )
        names: dict[int | None, str] = {None: "none"}
        for source_id in {existing.source_id, values.get("source_id")} - {None}:
            source = await self._store.run(queries.get_source, account.organisation.id, source_id)
            names[source_id] = source.name if source else f"#{source_id}"
        return describe_change(old, new, FIELDS, {"source_id": lambda v: names.get(v, "none")})

    async def show(self, account: Account, mailbox: Mailbox) -> dict:
        return view(mailbox, await self._store.run(mailbox_queries.last_run, account.organisation.id, mailbox.id))

    async def values(self, account: Account, body: dict, existing: Mailbox | None = None) -> dict:
        """Validated column values from a create (all fields) or an update (some)."""
        values, errors = read(MailboxFields, body, creating=existing is None)
        if "password" in values:
            password = values.pop("password")
            values["password_encrypted"] = self._secrets.encrypt(password) if password else ""
        if "source" in values:
            source = await self._store.run(queries.get_source, account.organisation.id, values.pop("source"))
            if source is None:
                errors["source"] = ["Choose one of your organisation's sources."]
            else:
                values["source_id"] = source.id
        elif existing is None and "source" not in errors:
            values["source_id"] = account.source.id if account.source else account.organisation.default_source_id
        merged_after = values.get("after", existing.after if existing else "seen")
        if (
            merged_after == "move"
            and "move_to" not in errors
            and not values.get("move_to", existing.move_to if existing else "")
        ):
            errors["move_to"] = ["Name the folder to move processed messages to."]
        refuse(errors)
        if existing is None:
            values.setdefault("port", DEFAULT_PORTS[values.get("security", "tls")])
            values["org_id"] = account.organisation.id
            values["created_at"] = to_iso(datetime.fromtimestamp(self._clock.seconds(), UTC))
        return values


def _warned(shown: dict, warning: str | None) -> dict:
    """A mailbox as shown, with what the admin should know about what was saved."""
    return {**shown, "warning": warning} if warning else shown


class _Sample:
    date = "2026-01-01"
    sender = "someone@example.com"
    subject = "subject"
    message_id = "id"


_SAMPLE = _Sample()
