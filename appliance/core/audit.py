"""The audit trail: one row per sign-in, transfer and change, with a sentence a
person can read on the dashboard; and the trail as admins search and export it
(their own organisation's rows only; the operator's, any organisation's)."""

from __future__ import annotations

import csv
import io
import time
from collections.abc import AsyncIterator, Mapping

from twisted.internet.defer import Deferred
from twisted.logger import Logger

from ..errors import Invalid, NotFound, PermissionDenied
from ..models import ACTIONS, LOG_PROTOCOLS, LogEntry, to_iso
from ..store import Store, queries
from ..store import logs as log_queries
from . import validation
from .authority import NOT_ALLOWED, require_operator


class _Lines(Logger):
    """Twisted's Logger without its check of each event's level (Logger.emit sorts every
    LogLevel to see whether the one given is among them: 1.2% of the reactor's samples
    in `sftp put -r` of small files, one line each). This logger's levels are its own
    methods' (`info`): always valid."""

    def emit(self, level, format=None, **kwargs) -> None:
        kwargs.update(
            log_logger=self,
            log_level=level,
            log_namespace=self.namespace,
            log_source=self.source,
            log_format=format,
            log_time=time.time(),
        )
        self.observer(kwargs)


log = _Lines()

PROTOCOL_NAMES = {"sftp": "SFTP", "ftp": "FTP", "web": "the web", "api": "the API", "mail": "mail"}


def human_bytes(count: int) -> str:
    value = float(count)
    for unit in ("bytes", "KB", "MB", "GB", "TB"):
        if value < 1000 or unit == "TB":
            return f"{count} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{count} bytes"


def clean(text: str) -> str:
    """Make a value safe inside a one-line log sentence (no CR/LF or controls)."""
    if text.isprintable():  # nearly every value: no new string
        return text
    return "".join(ch if ch.isprintable() else "?" for ch in text)


# what a log listing may be filtered by
FILTERS = ("search", "action", "protocol", "username", "date_from", "date_to")
COLUMN_NAMES = ("id", "created_at", "username", "protocol", "action", "path", "bytes", "remote_address", "message")
EXPORT_BATCH = 5000  # rows read from the database per batch of the CSV export
GROUP_COMMIT_ROWS = 500  # audit rows written in one transaction, at most
# Downloads a session may have answered while their audit rows are still being written
# (SFTP's CLOSE, FTP's 226 and the commands after it); past these, the session's next
# download waits for its rows, so that a client cannot pile up rows while the database
# is held up.
ROWS_BEHIND = 64
# A row nobody waits for yet (a download's, answered before it: `record(linger=True)`)
# waits this long for others to go with it into one transaction, unless LINGER_ROWS
# rows wait, a row somebody waits for comes, or `write_now` is called: one trip to the
# database thread and one commit for a client's next several downloads, where each
# cost ~80 us of the database thread and as much of the reactor. Fewer than
# ROWS_BEHIND: a session never waits for rows that only linger.
LINGER = 0.005
LINGER_ROWS = 32


def log_filters(given: Mapping[str, str]) -> dict:
    """The filters of a log listing from what the caller gave (missing ones empty);
    a date is checked and turned into the stored format (UTC) it is compared with."""
    filters = {name: str(given.get(name) or "").strip() for name in FILTERS}
    for name, known in (("action", ACTIONS), ("protocol", LOG_PROTOCOLS)):
        if filters[name] and filters[name] not in known:
            message = f"Choose one of: {', '.join(known)}."
            raise Invalid(f"{name}: {message}", {name: [message]})
    for name in ("date_from", "date_to"):
        if filters[name]:
            filters[name] = to_iso(validation.moment(filters[name], name))
    return filters


def _csv(rows) -> bytes:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    for row in rows:
        # a leading =, +, - or @ would run as a formula in a spreadsheet
        writer.writerow(["'" + v if isinstance(v, str) and v.startswith(("=", "+", "-", "@")) else v for v in row])
    return buffer.getvalue().encode()


class AuditLog:
    def __init__(self, store: Store, metrics=None, clock=None):
        self._store = store
        self._metrics = metrics
        self._clock = clock  # for LINGER (None: rows never linger)
        self._waiting: list[tuple[LogEntry, Deferred]] = []  # rows for the next transaction
        self._writing = False  # a transaction of rows is on the database thread
        self._now = False  # the waiting rows go without lingering
        self._lingering = None  # the DelayedCall that ends LINGER
        self._idle: list[Deferred] = []  # `flush` callers, told when no row waits or is being written

    async def record(self, entry: LogEntry, linger: bool = False) -> None:
        """Write the row, count it in the metrics, and echo it to the daemon's log
        (stdout/journald). Returns once the row is committed: a caller that answers
        its client after this (an upload's final status) never answers for a row
        that a crash could still lose. `linger`: the caller has answered already and
        nobody waits for the row yet; it may wait up to LINGER for others (see there)."""
        if entry.action not in ACTIONS:  # the logs screen filters by ACTIONS: one missing there could not be found
            raise ValueError(f"audit action {entry.action!r} is not in models.ACTIONS")
        committed: Deferred = Deferred()
        self._waiting.append((entry, committed))
        if not linger or len(self._waiting) >= LINGER_ROWS:
            self._now = True
        self._go()
        await committed
        self._echo(entry)

    def write_now(self) -> None:
        """Somebody waits for the rows recorded so far (a session's next change, its
        end): write the lingering ones without waiting for more."""
        if self._waiting:
            self._now = True
            self._go()

    async def flush(self) -> None:
        """Write every row recorded so far and return once none is waiting or being
        written (at shutdown, before the database closes)."""
        while True:
            self.write_now()  # may be written before it returns (the database trip waited for in place)
            if not (self._writing or self._waiting):
                return
            idle: Deferred = Deferred()
            self._idle.append(idle)
            await idle

    def _go(self) -> None:
        """Start the writer when rows wait and may go, or the lingering clock."""
        if self._writing or not self._waiting:
            return
        if self._now or self._clock is None:
            if self._lingering is not None:
                if self._lingering.active():
                    self._lingering.cancel()
                self._lingering = None
            self._writing = True
            Deferred.fromCoroutine(self._write_rows())
        elif self._lingering is None:
            self._lingering = self._clock.callLater(LINGER, self._linger_over)

    def _linger_over(self) -> None:
        self._lingering = None
        self.write_now()

    def _echo(self, entry: LogEntry) -> None:
        """Count a committed row in the metrics and write its line to the daemon's log."""
        if self._metrics is not None:
            self._metrics.observe(entry)
        # the line made here with one f-string: Twisted formats a format string field by
        # field with Python's string.Formatter, which cost more than the rest of a small
        # FTP download's audit on the reactor (the fields stay in the event as well)
        user, path, message = clean(entry.username), clean(entry.path), clean(entry.message)
        line = (
            f"audit org={entry.org_id} user={user} protocol={entry.protocol} action={entry.action} "
            f"address={entry.remote_address} path={path} bytes={entry.bytes}: {message}"
        )
        log.info(
            "{audit}",
            audit=line,
            org=entry.org_id,
            user=user,
            protocol=entry.protocol,
            action=entry.action,
            address=entry.remote_address,
            path=path,
            bytes=entry.bytes,
            message=message,
        )

    async def _write_rows(self) -> None:
        """Group commit: the rows recorded while one transaction is on the database
        thread go together into the next (one commit for many rows, under load);
        each caller's wait ends when its own row's transaction has committed. Rows
        that come while a transaction is on the way go in the next without lingering."""
        try:
            while self._waiting:
                batch, self._waiting = self._waiting[:GROUP_COMMIT_ROWS], self._waiting[GROUP_COMMIT_ROWS:]
                try:
                    results = await self._store.run(queries.insert_logs, [entry for entry, _ in batch])
                except Exception as e:  # noqa: BLE001 - handed to every caller of the batch
                    results = [e] * len(batch)
                for (_, committed), result in zip(batch, results, strict=True):
                    if isinstance(result, Exception):
                        committed.errback(result)
                    else:
                        committed.callback(result)
        finally:
            self._writing = False
            self._now = False
            idle, self._idle = self._idle, []
            for waiter in idle:
                waiter.callback(None)

    async def transfer(
        self,
        account,
        protocol: str,
        address: str,
        action: str,
        path: str,
        size: int,
        share: str | None = None,
        of: int | None = None,
        linger: bool = False,
    ) -> None:
        """One row per finished upload or download. `share` names the share link an
        anonymous visitor went through (the row still belongs to the sharing profile).
        `of`: a download's file size; when fewer bytes went out (a client that stopped,
        a range, a resumed download), the message says how many of how many.
        `linger`: as `record`'s."""
        verb = {"upload": "uploaded", "download": "downloaded"}[action]
        name = account.profile.username
        how = f"through {clean(share)}" if share else f"over {PROTOCOL_NAMES.get(protocol, protocol)}"
        amount = human_bytes(size) if of is None or of == size else f"{human_bytes(size)} of {human_bytes(of)}"
        await self.record(
            LogEntry(
                org_id=account.organisation.id,
                profile_id=account.profile.id,
                username=name,
                protocol=protocol,
                action=action,
                path=path,
                bytes=size,
                remote_address=address,
                message=f"{'anonymous' if share else clean(name)} {verb} {clean(path)} ({amount}) {how}",
            ),
            linger,
        )

    async def change(self, account, protocol: str, address: str, action: str, path: str, message: str) -> None:
        """A file change (delete, rename, mkdir) in a session of `protocol` (an admin's
        change: `acted`)."""
        await self.record(
            LogEntry(
                org_id=account.organisation.id,
                profile_id=account.profile.id,
                username=account.profile.username,
                protocol=protocol,
                action=action,
                path=path,
                remote_address=address,
                message=message,
            )
        )

    async def acted(
        self, actor, action: str, message: str, *, address: str = "", path: str = "", org_id: int | None = None
    ) -> None:
        """A change a signed-in principal made (an admin's, a user's to their own account,
        a link visitor's). Its row names the door `actor` signed in by, which that sign-in
        recorded on it (`Account.protocol`: "web" for a console session or a link, "api"
        for an API token): no service names it. `org_id`: the log it goes in, when not
        the actor's own (the operator's change to another organisation)."""
        if actor.protocol is None:  # a principal no sign-in made: its row could not say how it came
            raise ValueError(f"audit action {action!r} by an account that did not sign in by any door")
        await self.record(
            LogEntry(
                org_id=actor.organisation.id if org_id is None else org_id,
                profile_id=actor.profile.id,
                username=actor.profile.username,
                protocol=actor.protocol,
                action=action,
                path=path,
                remote_address=address,
                message=message,
            )
        )

    # -- the trail as admins read it ---------------------------------------------------

    async def _organisation_of(self, account, org_id: int | None) -> int:
        """Whose rows `account` reads: its own organisation's (an admin's); another
        organisation's only for the operator, and only one that exists."""
        if not account.profile.is_admin:
            raise PermissionDenied(NOT_ALLOWED)
        if org_id is None or org_id == account.organisation.id:
            return account.organisation.id
        require_operator(account.profile)
        if await self._store.run(queries.get_organisation, org_id) is None:
            raise NotFound("No such organisation.")
        return org_id

    async def search(
        self, account, given: Mapping[str, str], limit: int, offset: int, org_id: int | None = None
    ) -> tuple[int, list]:
        """(count, rows) of the log rows matching the filters `given`, newest first: of
        `account`'s organisation, or (the operator's view) of the organisation `org_id`."""
        org_id = await self._organisation_of(account, org_id)
        return await self._store.run(log_queries.search_logs, org_id, log_filters(given), limit, offset)

    async def export(self, account, given: Mapping[str, str]) -> AsyncIterator[bytes]:
        """Every row of `account`'s organisation matching the filters, as CSV: the header
        line, then one chunk per batch read, so the caller writes as the client reads."""
        org_id = await self._organisation_of(account, None)
        return self._csv_batches(org_id, log_filters(given))  # the filters are checked before any byte goes out

    async def _csv_batches(self, org_id: int, filters: dict) -> AsyncIterator[bytes]:
        yield _csv([COLUMN_NAMES])
        before = None
        while True:
            rows = await self._store.run(log_queries.export_logs, org_id, filters, before, EXPORT_BATCH)
            if not rows:
                return
            yield _csv(rows)
            before = rows[-1][0]
