"""Resumable uploads: what the tus 1.0 protocol (core, creation, termination,
expiration) needs from the files service, for any front end.

An upload is created with its full length and a target path; its bytes then arrive
over any number of requests, each appended at the recorded offset. They go to a
hidden partial file in the target's folder (RESUMABLE_PREFIX + the upload's id:
listings never show it, the crash sweep leaves it alone, and the final rename stays
on one filesystem), which the backend keeps (interface.Partials: local sources,
storage/local/partials.py). Each append is fsynced before its new offset is recorded,
so the offset a client is told survives a dropped connection and a restart. An
upload belongs to its profile, not to the session that began it: a refreshed access
token continues it, another profile is told it does not exist.

When the last byte arrives the permissions are checked again, the partial file is
renamed into place (never over an existing file unless overwrite was asked), one
audit row is written and the upload's row is removed. Uploads left untouched for
`expire_after` seconds are removed by a periodic job; partial files without a row
(a crash between creating one and recording it) are removed at start-up.

Remote sources (S3, remote SFTP: their backend has no `partials`) have no folder
of ours to keep a partial file in, so their uploads are *staged* on the appliance's
own disk: the bytes go to `staging_dir/<upload id>` (mode 0600; the row's temp_name is STAGED +
the id, which tells a staging from an in-tree partial without a schema change),
with the same rules (the quota reserved at creation, offsets, expiry, the start-up
sweep of stagings no row knows). Appends do not touch the remote at all. When the
last byte is there, the staged file is sent through the source's own FileSession
(`open_write` with the overwrite rule, then write/commit: the remote's atomic
visibility, its permission and quota checks and the audit row all hold), read from
disk a chunk at a time on the work pool, and the staging is removed.

If the source refuses the file for good (it exists and overwrite was not asked, the
permission or the quota says no), the upload is dropped, as on a local source. If
the send fails otherwise (the remote is down, or refuses access to its folder), the
request that brought the last byte is answered with SendFailed (503, with the
remote's words) and the staging is kept, complete. Whatever asks about the upload
next retries the send: tus-js-client, after a 5xx on its last PATCH, sends a HEAD,
which sends the file and answers offset == length (it then reports success) or,
still failing, SendFailed again, which the tus front end answers with 423 Locked,
the one failure tus-js-client retries on a HEAD without starting the upload over.
A PATCH of no bytes at the upload's length retries the send too. The upload
expires as any other if it is never sent.
"""

from __future__ import annotations

import io
import os
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from twisted.internet import task
from twisted.internet.defer import DeferredLock
from twisted.logger import Logger

from ...deferreds import spawn
from ...errors import (
    AlreadyExists,
    ApplianceError,
    Gone,
    Invalid,
    NotFound,
    PermissionDenied,
    QuotaExceeded,
    Unavailable,
)
from ...models import Source, from_iso, to_iso
from ...storage.local.partials import append_at, remove_files
from ...storage.local.tree import os_error
from ...storage.paths import RESUMABLE_PREFIX, split_path
from ...store import Store, queries
from ...store import uploads as upload_queries
from ...store.uploads import UploadRow
from ...threads import Threads
from ..audit import AuditLog
from ..auth import Account
from .service import FilesService

log = Logger()

DEFAULT_MAX_SIZE = 1 << 40  # 1 TiB
DEFAULT_EXPIRE_AFTER = 24 * 3600  # seconds after the last append
DEFAULT_SWEEP_INTERVAL = 600  # seconds between removals of expired uploads
NO_SUCH_UPLOAD = "No such upload: it finished, was cancelled, or belongs to someone else."
STAGED = "staged:"  # temp_name of an upload to a remote source: STAGED + id, the file staging_dir/<id>
STAGING_MODE = 0o600
SEND_CHUNK = 1 << 20  # bytes read from a staging per write to the remote source


class OffsetMismatch(Invalid):
    """The client's offset is not the upload's (tus answers 409 Conflict)."""


class TooLarge(Invalid):
    """More bytes than the upload's length or the appliance's limit (413)."""


class SendFailed(Unavailable):
    """Every byte is here but the remote source did not take the file; the upload is
    kept, complete, and asking about it again retries (503; 423 to a HEAD)."""


class _InFlight:
    """An append in progress, among the uploads FilesService.drain waits for at shutdown.
    Aborting it needs nothing: the offset last recorded stays true."""

    async def abort(self, reason: str = "") -> None:
        return None


@dataclass(frozen=True)
class UploadState:
    """What a client is told about an upload."""

    id: str
    path: str  # the target, a virtual path in the profile's home
    length: int
    offset: int
    metadata: dict  # as the client sent it (values still base64), for echoing back
    expires_at: float | None  # epoch seconds; None once complete
    complete: bool


def _owned(row: UploadRow, account: Account) -> bool:
    """Is the upload the caller's own (same profile, source and home as when it began)?"""
    return (
        row.org_id == account.organisation.id
        and row.profile_id == account.profile.id
        and account.source is not None
        and row.source_id == account.source.id
        and row.home == account.profile.home
    )


class ResumableUploads:
    def __init__(
        self,
        store: Store,
        threads: Threads,
        files: FilesService,
        audit: AuditLog,
        clock,
        *,
        max_size: int = DEFAULT_MAX_SIZE,
        expire_after: float = DEFAULT_EXPIRE_AFTER,
        sweep_interval: float = DEFAULT_SWEEP_INTERVAL,
        staging_dir: Path | None = None,
    ):
        self._store = store
        self._threads = threads
        self._files = files
        self._audit = audit
        self._clock = clock
        self.max_size = max_size
        self.expire_after = expire_after
        self._sweep_interval = sweep_interval
        # uploads to remote sources wait here, on the appliance's own disk, until complete
        self.staging_dir = Path(staging_dir) if staging_dir else Path(files._data_dir) / "uploads" / "staging"
        self._locks: dict[str, DeferredLock] = {}
        self._creating: set[str] = set()  # partial files made but not yet recorded
        self._loop: task.LoopingCall | None = None

    # -- the periodic job ------------------------------------------------------------

    def start(self) -> None:
        self._loop = task.LoopingCall(lambda: spawn(self.expire(), "removing expired resumable uploads"))
        self._loop.clock = self._clock
        self._loop.start(self._sweep_interval, now=True)

    def stop(self) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self._loop = None

    # -- one request at a time per upload -----------------------------------------------

    @asynccontextmanager
    async def exclusive(self, upload_id: str) -> AsyncIterator[None]:
        """Hold the upload: appends, status, termination and expiry of one upload never
        overlap. Taken at once when free (a caller can claim it before its first await)."""
        lock = self._locks.setdefault(upload_id, DeferredLock())
        await lock.acquire()
        try:
            yield
        finally:
            lock.release()
            if not lock.locked and not lock.waiting:
                self._locks.pop(upload_id, None)

    # -- the protocol's operations ---------------------------------------------------------

    async def create(
        self,
        account: Account,
        protocol: str,
        address: str,
        *,
        folder: str,
        name: str,
        length: int,
        metadata: dict,
        overwrite: bool = False,
    ) -> UploadState:
        """Begin an upload of `length` bytes to `folder`/`name` (`name` may hold folders,
        created like a multipart upload creates them)."""
        if length < 0:
            raise Invalid("The upload's length cannot be negative.")
        if length > self.max_size:
            raise TooLarge(f"The upload is larger than the {self.max_size} bytes this appliance accepts.")
        relative = (name or "").replace("\\", "/").lstrip("/")
        if not relative.strip("/"):
            raise Invalid("Name the file to upload.", {"filename": ["This field is required."]})
        if ".." in relative.split("/"):
            raise Invalid("File names may not contain '..'.", {"filename": ["Invalid file name."]})
        files = await self._files.session(account, protocol, address)
        target = await files.upload_path(folder, relative)
        reserved = await self._store.run(upload_queries.reserved_bytes, account.profile.id)
        await files.check_upload(target, overwrite=overwrite, size=length, reserved=reserved)
        upload_id = secrets.token_hex(16)
        now = self._clock.seconds()
        expires = now + self.expire_after
        parts = split_path(target)
        partials = files.storage.partials
        if partials is None:  # a remote source: staged on the appliance's own disk
            temp_name = STAGED + upload_id
            staged = self._staged_path(upload_id)

            def make_partial():
                return self._threads.work(_create_staged, str(staged), length)

            def remove_partial():
                return self._threads.work(_remove_staged, str(staged))

        else:
            temp_name = RESUMABLE_PREFIX + upload_id

            def make_partial():
                return partials.create(parts, temp_name)

            def remove_partial():
                return partials.remove(parts, temp_name)

        self._creating.add(temp_name)
        try:
            await make_partial()
            try:
                await self._store.run(
                    upload_queries.insert_upload,
                    {
                        "id": upload_id,
                        "org_id": account.organisation.id,
                        "profile_id": account.profile.id,
                        "source_id": account.source.id,
                        "home": account.profile.home,
                        "path": target,
                        "temp_name": temp_name,
                        "length": length,
                        "metadata": metadata,
                        "overwrite": overwrite,
                        "expires_at": _iso(expires),
                        "created_at": _iso(now),
                    },
                )
            except BaseException:
                await remove_partial()
                raise
        finally:
            self._creating.discard(temp_name)
        state = UploadState(upload_id, target, length, 0, metadata, expires, False)
        if length == 0:  # nothing will be sent: it is complete now
            async with self.exclusive(upload_id):
                row = await self._store.run(upload_queries.get_upload, upload_id)
                return await self._complete(account, protocol, address, files, row)
        return state

    async def status(self, account: Account, protocol: str, address: str, upload_id: str) -> UploadState:
        """The upload's offset and length (HEAD). One whose bytes had all arrived but
        that was not put in place (a crash in between) is completed now."""
        async with self.exclusive(upload_id):
            row = await self._reachable(account, upload_id)
            if row.offset >= row.length:
                return await self._complete(account, protocol, address, None, row)
            return self._state(row)

    async def append(
        self,
        account: Account,
        protocol: str,
        address: str,
        upload_id: str,
        offset: int,
        body: io.IOBase,
        *,
        held: bool = False,
    ) -> UploadState:
        """Write the readable `body` (read from its start to its end, in chunks, on the
        work pool) at `offset`, which must be the upload's offset. `held`: the caller
        already holds `exclusive(upload_id)`."""
        if not held:
            async with self.exclusive(upload_id):
                return await self.append(account, protocol, address, upload_id, offset, body, held=True)
        row = await self._reachable(account, upload_id)
        # a staged upload's appends need nothing of the source, which may be out of reach meanwhile
        files = None if _staged(row) else await self._files.session(account, protocol, address)
        if offset != row.offset:
            raise OffsetMismatch(f"The upload is at offset {row.offset}, not {offset}: ask for its offset and resume.")
        size = await self._threads.work(_body_size, body)
        if row.offset + size > row.length:
            raise TooLarge(f"That is more than the upload's length of {row.length} bytes.")
        parts = split_path(row.path)
        in_flight = _InFlight()  # a shutdown gives it the grace uploads get, so its offset is recorded
        self._files.uploads.add(in_flight)
        try:
            try:
                if files is None:
                    written = await self._threads.bulk(
                        _append_staged, str(self._staged_path(row.id)), offset, body, size
                    )
                else:
                    written = await files.storage.partials.append(parts, row.temp_name, offset, body, size)
            except NotFound:
                await self._discard(row)
                raise Gone("The upload's partial file is gone: start the upload again.") from None
            expires = self._clock.seconds() + self.expire_after
            await self._store.run(upload_queries.set_offset, row.id, offset + written, _iso(expires))
        finally:
            self._files.uploads.discard(in_flight)
        row = await self._store.run(upload_queries.get_upload, row.id)
        if row.offset >= row.length:
            return await self._complete(account, protocol, address, files, row)
        return self._state(row)

    async def check_append(self, account: Account, upload_id: str, size: int | None) -> int:
        """May `size` bytes (None: not known yet) be appended to the caller's upload now:
        asked before a PATCH's body is read. Returns how many bytes the upload still takes."""
        row = await self._store.run(upload_queries.get_upload, upload_id)
        if row is not None and self._expired(row):
            raise Gone("The upload expired: start it again.")  # append() removes it, under the lock
        if row is None or not _owned(row, account):
            raise NotFound(NO_SUCH_UPLOAD)
        remaining = row.length - row.offset
        if size is not None and size > remaining:
            raise TooLarge(f"That is more than the upload's length of {row.length} bytes.")
        return remaining

    async def terminate(self, account: Account, protocol: str, address: str, upload_id: str) -> None:
        """Cancel an upload: its partial file and row go; the target is untouched."""
        async with self.exclusive(upload_id):
            row = await self._reachable(account, upload_id)
            await self._discard(row)

    # -- housekeeping ------------------------------------------------------------------------

    async def expire(self) -> int:
        """Remove uploads whose time ran out (the periodic job); return how many."""
        rows = await self._store.run(upload_queries.expired_uploads, _iso(self._clock.seconds()))
        removed = 0
        for stale in rows:
            async with self.exclusive(stale.id):
                row = await self._store.run(upload_queries.get_upload, stale.id)
                if row is not None and self._expired(row):  # not renewed meanwhile
                    await self._discard(row)
                    removed += 1
        if removed:
            log.info("removed {count} expired resumable uploads", count=removed)
        return removed

    async def sweep(self, sources: list[Source]) -> int:
        """Remove partial files no upload row knows (at start-up); return how many."""
        removed = 0
        for source in sources:
            if source.type != "local":
                continue
            found = await self._files.local.find_partials(source)
            if not found:
                continue
            creating = set(self._creating)  # read before the rows: see create()
            known = await self._store.run(upload_queries.temp_names, source.id)
            orphans = [path for path in found if os.path.basename(path) not in known | creating]
            removed += await self._threads.work(remove_files, orphans)
        found = await self._threads.work(_find_staged, str(self.staging_dir))
        if found:
            creating = set(self._creating)
            known = await self._store.run(upload_queries.temp_names_staged)
            orphans = [str(self.staging_dir / name) for name in found if STAGED + name not in known | creating]
            removed += await self._threads.work(remove_files, orphans)
        if removed:
            log.info("removed {count} partial resumable uploads without a record", count=removed)
        return removed

    # -- helpers ----------------------------------------------------------------------------

    def _expired(self, row: UploadRow) -> bool:
        return _epoch(row.expires_at) <= self._clock.seconds()

    def _state(self, row: UploadRow) -> UploadState:
        return UploadState(row.id, row.path, row.length, row.offset, row.metadata, _epoch(row.expires_at), False)

    def _staged_path(self, upload_id: str) -> Path:
        return self.staging_dir / upload_id

    async def _reachable(self, account: Account, upload_id: str) -> UploadRow:
        """The caller's own upload; 404 for anyone else's, 410 when expired."""
        row = await self._store.run(upload_queries.get_upload, upload_id)
        if row is None or not _owned(row, account):
            raise NotFound(NO_SUCH_UPLOAD)
        if self._expired(row):
            await self._discard(row)
            raise Gone("The upload expired: start it again.")
        return row

    async def _complete(self, account: Account, protocol: str, address: str, files, row: UploadRow) -> UploadState:
        """Every byte is there: check again, put the file in place, record it once
        (`files`: the session, None to open one)."""
        if _staged(row):
            return await self._send(account, protocol, address, files, row)
        if files is None:
            files = await self._files.session(account, protocol, address)
        try:
            replaced = await files.check_upload(row.path, overwrite=row.overwrite)
            await files.storage.partials.commit(split_path(row.path), row.temp_name, row.overwrite)
        except (AlreadyExists, Invalid, NotFound, PermissionDenied) as e:  # it can never complete now
            await self._discard(row)
            if isinstance(e, NotFound):
                raise Gone("The upload's partial file is gone: start the upload again.") from None
            raise
        await self._store.run(upload_queries.delete_upload, row.id)
        files.limits.committed(row.length, replaced)
        await self._audit.transfer(account, protocol, address, "upload", row.path, row.length)
        return UploadState(row.id, row.path, row.length, row.length, row.metadata, None, True)

    async def _send(self, account: Account, protocol: str, address: str, files, row: UploadRow) -> UploadState:
        """Send a complete staging to its remote source through the session's own upload
        (the audit row and the quota's accounting are the writer's), then remove it."""
        try:
            if files is None:
                files = await self._files.session(account, protocol, address)
            await files.check_upload(row.path, overwrite=row.overwrite)
        except (AlreadyExists, Invalid, NotFound, PermissionDenied) as e:  # it can never complete now
            await self._discard(row)
            raise e from None
        except ApplianceError as e:  # the source is out of reach: keep it, complete
            raise self._send_failed(account, row, e) from None
        staged = str(self._staged_path(row.id))
        try:
            fd = await self._threads.work(_open_staged, staged)
        except NotFound:
            await self._discard(row)
            raise Gone("The upload's partial file is gone: start the upload again.") from None
        writer = None
        try:
            writer = await files.open_write(row.path, exclusive=not row.overwrite)
            sent = 0
            while sent < row.length:
                chunk = await self._threads.bulk(os.pread, fd, min(SEND_CHUNK, row.length - sent), sent)
                if not chunk:
                    raise Gone("The upload's partial file was cut short: start the upload again.")
                await writer.write(sent, chunk)
                sent += len(chunk)
            await writer.commit()
        except (AlreadyExists, Gone, Invalid, QuotaExceeded) as e:  # refused for good: drop it, as on a disk
            if writer is not None:
                await writer.abort()
            await self._discard(row)
            raise e from None
        except ApplianceError as e:  # the remote is out of reach or refuses for now: keep it, complete
            if writer is not None:
                await writer.abort()
            raise self._send_failed(account, row, e) from None
        except BaseException:  # cancelled (the client left) or a fault: the staging stays for a retry
            if writer is not None:
                await writer.abort()
            raise
        finally:
            await self._threads.work(os.close, fd)
        await self._store.run(upload_queries.delete_upload, row.id)
        await self._threads.work(_remove_staged, staged)  # a crash before this: the start-up sweep
        return UploadState(row.id, row.path, row.length, row.length, row.metadata, None, True)

    @staticmethod
    def _send_failed(account: Account, row: UploadRow, error: ApplianceError) -> SendFailed:
        log.info("upload {id}: sending {path} failed, kept to retry: {error}", id=row.id, path=row.path, error=error)
        source = account.source.name if account.source else ""
        return SendFailed(
            f"All {row.length} bytes arrived, but the source {source!r} did not take the file: {error.message} "
            "The upload is kept: resume it to try again."
        )

    async def _discard(self, row: UploadRow) -> None:
        """Remove the partial file (wherever the profile's home now is) and the row."""
        if _staged(row):
            try:
                await self._threads.work(_remove_staged, str(self._staged_path(row.id)))
            except Exception as e:  # noqa: BLE001 - the row goes anyway; the start-up sweep retries
                log.warn("could not remove the staged upload {id}: {error}", id=row.id, error=e)
            await self._store.run(upload_queries.delete_upload, row.id)
            return
        source = await self._store.run(queries.get_source, row.org_id, row.source_id)
        if source is not None and source.type == "local":
            try:
                await self._files.local.remove_partial(
                    source, split_path(row.home), split_path(row.path), row.temp_name
                )
            except Exception as e:  # noqa: BLE001 - the row goes anyway; the start-up sweep retries
                log.warn("could not remove the partial upload {name}: {error}", name=row.temp_name, error=e)
        await self._store.run(upload_queries.delete_upload, row.id)


# -- on disk (the work pool) ---------------------------------------------------------------


def _iso(epoch: float) -> str:
    return to_iso(datetime.fromtimestamp(epoch, UTC))


def _epoch(text: str) -> float:
    moment = from_iso(text)
    return moment.timestamp() if moment else 0.0


def _staged(row: UploadRow) -> bool:
    return row.temp_name.startswith(STAGED)


def _create_staged(path: str, length: int) -> None:
    """An empty staging file (0600), after checking the data dir has room for `length` bytes."""
    folder = os.path.dirname(path)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        room = os.statvfs(folder)
        free = room.f_bavail * room.f_frsize
        if length > free:
            raise QuotaExceeded(
                f"The appliance has no room to receive this upload: {length} bytes, {free} free "
                "where it keeps uploads to remote sources until they are complete."
            )
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, STAGING_MODE)
        os.close(fd)
        dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError as e:
        raise os_error(e, "the upload's staging") from None


def _open_staged(path: str) -> int:
    try:
        return os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as e:
        raise os_error(e, "the upload's staging") from None


def _append_staged(path: str, offset: int, body, size: int) -> int:
    """Append the body to a staging at `offset` and fsync; return how many bytes were written."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as e:
        raise os_error(e, "the upload's staging") from None
    try:
        return append_at(fd, offset, body, size)
    except OSError as e:
        raise os_error(e, "the upload's staging") from None
    finally:
        os.close(fd)


def _remove_staged(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _find_staged(folder: str) -> list[str]:
    try:
        return os.listdir(folder)
    except FileNotFoundError:
        return []


def _body_size(body: io.IOBase) -> int:
    """How many bytes the body holds (a cut-off body: as many as arrived)."""
    try:
        return body.seek(0, os.SEEK_END)
    except (ValueError, OSError):  # closed under us: nothing to take
        return 0
