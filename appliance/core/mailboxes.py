"""Mailboxes: poll IMAP folders and file what partners email into sources.

Each run is a row in mailbox_runs (start, end, status, counts, a clear error).
Messages are filed through the same files service as every protocol (confined,
atomic, audited with protocol "mail"); name clashes get a numbered name, never
an overwrite; a message is recorded as filed (by UID and Message-ID) before its
after-processing action, so a crash never files it twice. Scheduled runs follow
each mailbox's interval with jitter, never overlap, and back off on failure.
"""

from __future__ import annotations

import dataclasses
import math
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime

from cryptography.fernet import InvalidToken
from twisted.internet import task
from twisted.internet.defer import Deferred
from twisted.logger import Logger

from ..config import MailSettings
from ..deferreds import spawn
from ..errors import AlreadyExists, ApplianceError, NotFound, Unavailable
from ..mail import parsing
from ..mail.imap import ImapConnection
from ..models import Mailbox, to_iso
from ..netcheck import Destinations
from ..store import Store, queries
from ..store import mailboxes as mailbox_queries
from ..threads import Threads
from .access import AccessPolicy
from .datadir import SecretBox
from .files import FileSession, FilesService
from .validation import control_characters

log = Logger()

TICK = 30.0  # seconds between scheduler looks
MAX_BACKOFF = 12  # a failing mailbox waits at most this many intervals
WRITE_CHUNK = 1 << 20


@dataclass
class RunTally:
    messages: int = 0
    files: int = 0
    bytes: int = 0
    problems: list[str] = field(default_factory=list)


def _extract(raw: bytes, keep: str) -> tuple[parsing.MessageInfo, list[tuple[str, bytes]], str]:
    """Parse one message (CPU work: runs on the work pool): its details, its files, and
    a problem to report. A message that cannot be taken apart (nested thousands of
    parts deep: the parser's recursion gives up) is filed whole, so it neither fails
    every run nor blocks the messages after it."""
    problem = ""
    try:
        message = parsing.parse(raw)
        details = parsing.info(message)
        if keep == "attachments":
            return details, parsing.attachments(message), problem
    except RecursionError:
        details = parsing.info(parsing.parse_headers(raw))
        problem = (
            f"The message {details.subject or '(no subject)'!r} is nested too deeply to take apart; "
            "it was filed whole as a .eml file."
        )
    return details, [(parsing.safe_filename(f"{details.subject or 'message'}.eml", "message.eml"), raw)], problem


def _settings(mailbox: Mailbox) -> tuple:
    """What an admin sets (not what runs record, like the last UID seen)."""
    return dataclasses.astuple(dataclasses.replace(mailbox, uid_validity=None, last_uid=None))


class MailboxService:
    def __init__(
        self,
        store: Store,
        threads: Threads,
        files: FilesService,
        secrets: SecretBox,
        settings: MailSettings,
        reactor,
        metrics,
        destinations: Destinations,
        policy: AccessPolicy | None = None,
    ):
        self._policy = policy or AccessPolicy(store, reactor)
        self._destinations = destinations
        self._store = store
        self._threads = threads
        self._files = files
        self._secrets = secrets
        self._settings = settings
        self._reactor = reactor
        self._metrics = metrics
        self._running: dict[int, object] = {}
        self._next_due: dict[int, float] = {}
        self._failures: dict[int, int] = {}
        self._seen: dict[int, tuple] = {}  # each mailbox's settings when last scheduled
        self._loop: task.LoopingCall | None = None

    # -- scheduling ------------------------------------------------------------------

    async def start(self) -> None:
        """Fail runs a previous stop interrupted, then poll on schedule."""
        await self._store.run(mailbox_queries.interrupt_runs, self._now_iso())
        self._loop = task.LoopingCall(lambda: spawn(self.tick(), "mailbox scheduler"))
        self._loop.clock = self._reactor
        self._loop.start(TICK, now=True)

    def stop(self) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()

    async def tick(self) -> None:
        """Start the runs that are due."""
        now = self._reactor.seconds()
        mailboxes = await self._store.run(mailbox_queries.enabled_mailboxes)
        for mailbox in mailboxes:
            if self._seen.get(mailbox.id) != _settings(mailbox) and mailbox.id not in self._running:
                # first sight (spread start-up polls over the first interval), or an admin
                # changed it, or a new mailbox got a deleted one's id: a fixed password or
                # server is tried within a minute, not after the backoff of the old failures
                self._seen[mailbox.id] = _settings(mailbox)
                self._failures.pop(mailbox.id, None)
                self._next_due[mailbox.id] = now + random.uniform(0, min(60.0, mailbox.interval_minutes * 60))
            if now >= self._next_due.get(mailbox.id, math.inf) and mailbox.id not in self._running:
                await self._begin(mailbox)
        known = {m.id for m in mailboxes}
        for stale in set(self._next_due) - known:
            self._next_due.pop(stale, None)
            self._failures.pop(stale, None)
            self._seen.pop(stale, None)

    def next_due(self, mailbox_id: int) -> float | None:
        """When the mailbox is next checked (reactor seconds); None when not scheduled."""
        return self._next_due.get(mailbox_id)

    def _schedule_next(self, mailbox: Mailbox, failed: bool) -> None:
        self._seen[mailbox.id] = _settings(mailbox)  # the run's: tick() notices a change since
        failures = self._failures.get(mailbox.id, 0) + 1 if failed else 0
        self._failures[mailbox.id] = failures
        interval = mailbox.interval_minutes * 60 * min(2**failures, MAX_BACKOFF)
        self._next_due[mailbox.id] = self._reactor.seconds() + interval + random.uniform(0, interval * 0.1)

    # -- running -----------------------------------------------------------------------

    async def run_now(self, org_id: int, mailbox_id: int) -> int:
        """Start a run of one mailbox now; return the run's id."""
        mailbox = await self._store.run(mailbox_queries.get_mailbox, org_id, mailbox_id)
        if mailbox is None:
            raise NotFound("No such mailbox.")
        if mailbox.id in self._running:
            raise AlreadyExists("This mailbox is being checked right now; wait for that run to finish.")
        return await self._begin(mailbox)

    async def _begin(self, mailbox: Mailbox) -> int:
        run_id = await self._store.run(mailbox_queries.start_run, mailbox.org_id, mailbox.id, self._now_iso())
        # in place before the run's first line: a run can end before spawn returns (its
        # database trips answered in place), and its end takes it out of _running
        ended: Deferred = Deferred()
        self._running[mailbox.id] = ended
        spawn(self._run(mailbox, run_id), f"mailbox {mailbox.id} run {run_id}").addBoth(ended.callback)
        return run_id

    async def wait(self, mailbox_id: int) -> None:
        """Wait for a run in progress (tests and shutdown)."""
        running = self._running.get(mailbox_id)
        if running is not None:
            await running

    async def _run(self, mailbox: Mailbox, run_id: int) -> None:
        tally = RunTally()
        error = ""
        try:
            await self._poll(mailbox, tally)
        except ApplianceError as e:
            error = e.message
        except Exception:  # noqa: BLE001 - the run must end with a row, whatever happened
            log.failure("mailbox {id} run {run} failed", id=mailbox.id, run=run_id)
            error = "Internal error while checking this mailbox; see the appliance's log."
        finally:
            self._running.pop(mailbox.id, None)
        if error:
            status = "failed"
        elif tally.problems:
            status, error = "partial", " ".join(tally.problems)
        else:
            status = "success"
        if error:  # the operator's log says it too, not only the run history
            log.warn(
                "mailbox {name!r} (id {id}, organisation {org}) run {run} {status}: {error}",
                name=mailbox.name, id=mailbox.id, org=mailbox.org_id, run=run_id, status=status, error=error,
            )  # fmt: skip
        await self._store.run(
            mailbox_queries.finish_run,
            run_id,
            {
                "finished_at": self._now_iso(),
                "status": status,
                "messages": tally.messages,
                "files": tally.files,
                "bytes": tally.bytes,
                "error": error,
            },
        )
        if self._metrics is not None:
            self._metrics.mailbox_runs.labels(status).inc()
        self._schedule_next(mailbox, failed=status == "failed")

    async def _still_collecting(self, mailbox: Mailbox) -> bool:
        """False once the mailbox is deleted; refused once its organisation may not use
        the appliance (checked before each message, so a change stops a run in flight)."""
        if await self._store.run(mailbox_queries.collecting_state, mailbox.id) is None:
            return False
        organisation = await self._store.run(queries.get_organisation, mailbox.org_id)
        refused = self._policy.organisation(organisation)  # the access policy's organisation half
        if refused is not None:
            raise Unavailable(f"{refused.message}: the organisation's mailboxes are not checked.")
        return True

    async def _poll(self, mailbox: Mailbox, tally: RunTally) -> None:
        if not await self._still_collecting(mailbox):
            return
        session = await self._session(mailbox)
        try:
            password = self._secrets.decrypt(mailbox.password_encrypted) if mailbox.password_encrypted else ""
        except InvalidToken:
            raise Unavailable(
                "The stored mailbox password cannot be decrypted (was the data dir's secrets.key replaced?). "
                "Enter the password again."
            ) from None
        for label, value in (("folder", mailbox.folder), ("folder to move messages to", mailbox.move_to)):
            if control_characters(value):  # saved before they were refused (twisted.mail would mangle it)
                raise Unavailable(f"The mailbox's stored {label} holds a control character: enter it again.")
        address = await self._threads.work(
            self._destinations.address, mailbox.host, mailbox.port, self._settings.allow_loopback
        )
        connection = await ImapConnection.open(
            self._reactor,
            address=address,
            host=mailbox.host,
            port=mailbox.port,
            security=mailbox.security,
            verify_tls=mailbox.verify_tls,
            username=mailbox.username,
            password=password,
        )
        try:
            uid_validity = await connection.select(mailbox.folder)
            # messages left on the server for their size stay untouched until the limit changes
            left_prefix = f"left:{uid_validity}:"
            left = await self._store.run(mailbox_queries.keys_like, mailbox.id, left_prefix)
            limit = self._settings.max_message_bytes
            uids = [uid for uid in await connection.unseen() if f"{left_prefix}{uid}:{limit}" not in left]
            uids = uids[: self._settings.batch]
            keys = {uid: f"uid:{uid_validity}:{uid}" for uid in uids}
            filed = await self._store.run(mailbox_queries.filed_keys, mailbox.id, list(keys.values()))
            for uid in uids:
                if not await self._still_collecting(mailbox):
                    return  # deleted during the run: stop here
                if keys[uid] in filed:
                    await self._after(connection, mailbox, uid)  # filed before a crash: finish its action
                    continue
                await self._one(connection, mailbox, session, uid, keys[uid], f"{left_prefix}{uid}:{limit}", tally)
            if uids:
                await self._store.run(mailbox_queries.set_uid_state, mailbox.id, uid_validity, max(uids))
        finally:
            await connection.close()

    async def _one(
        self,
        connection: ImapConnection,
        mailbox: Mailbox,
        session: FileSession,
        uid: int,
        key: str,
        left_key: str,
        tally: RunTally,
    ) -> None:
        size = await connection.size(uid)
        if size > self._settings.max_message_bytes:
            tally.problems.append(
                f"A message of {size:,} bytes is over the {self._settings.max_message_bytes:,}-byte limit "
                "and was left on the server, untouched (it is collected once [mail] max_message_bytes allows it)."
            )
            # not recorded as filed: that would apply the after-processing action (delete!) next run
            await self._store.run(mailbox_queries.mark_filed, mailbox.id, [left_key], self._now_iso())
            return
        raw = await connection.fetch(uid)
        details, found, problem = await self._threads.bulk(_extract, raw, mailbox.keep)
        if problem:
            tally.problems.append(problem)
        message_keys = [key] + ([f"mid:{details.message_id}"] if details.message_id else [])
        already = await self._store.run(mailbox_queries.filed_keys, mailbox.id, message_keys[1:])
        if not already:
            folder = parsing.render_folder(mailbox.target_folder, details)
            written = await self._file_all(session, folder, found)
            tally.files += len(written)
            tally.bytes += sum(size for _, size in written)
        tally.messages += 1
        await self._store.run(mailbox_queries.mark_filed, mailbox.id, message_keys, self._now_iso())
        await self._after(connection, mailbox, uid)

    async def _file_all(
        self, session: FileSession, folder: str, found: list[tuple[str, bytes]]
    ) -> list[tuple[str, int]]:
        """Write every file of one message, or none: a failure removes what was written."""
        written: list[tuple[str, int]] = []
        try:
            if found:
                await session.mkdir(folder, parents=True)
            for name, data in found:
                written.append((await self._write_unique(session, folder, name, data), len(data)))
        except BaseException:
            for path, _ in written:
                try:
                    await session.remove(path)
                except ApplianceError:
                    pass
            raise
        return written

    async def _write_unique(self, session: FileSession, folder: str, name: str, data: bytes) -> str:
        stem, dot, extension = name.rpartition(".")
        if not dot or not stem:
            stem, dot, extension = name, "", ""
        for attempt in range(1000):
            candidate = name if attempt == 0 else f"{stem} ({attempt}){dot}{extension}"
            path = f"{folder.rstrip('/')}/{candidate}"
            try:
                writer = await session.open_write(path, exclusive=True)
            except AlreadyExists:
                continue
            try:
                for offset in range(0, len(data), WRITE_CHUNK):
                    await writer.write(offset, data[offset : offset + WRITE_CHUNK])
                await writer.commit()
            except BaseException:
                await writer.abort()
                raise
            return path
        raise AlreadyExists(f"Too many files named like {name} in {folder}.")

    async def _after(self, connection: ImapConnection, mailbox: Mailbox, uid: int) -> None:
        if mailbox.after == "delete":
            await connection.delete(uid)
        elif mailbox.after == "move" and mailbox.move_to:
            await connection.move(uid, mailbox.move_to)
        else:
            await connection.mark_seen(uid)

    async def _session(self, mailbox: Mailbox) -> FileSession:
        """The files of the mailbox's source, written as the mailbox itself: its own
        principal, with only what filing needs (core.access.MailboxPrincipal)."""
        return await self._files.session(await self._policy.mailbox(mailbox), "mail", mailbox.host)

    def _now_iso(self) -> str:
        return to_iso(datetime.fromtimestamp(self._reactor.seconds(), UTC))
