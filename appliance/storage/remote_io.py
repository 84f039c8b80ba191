"""What downloads and uploads on remote sources (remote SFTP, S3) share, written once:
the refusals, the quota bookkeeping, the callers waiting for room, and the shape of
commit and abort. Each backend (remote_sftp.py, remote_s3.py) says only how bytes
travel: how a read is answered, how writes are sent and settled, how a finished
upload is made visible (SFTP: a rename of the temporary name; S3: the multipart
upload completed) and how an unfinished one is dropped.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from twisted.internet.defer import Deferred, DeferredLock

from ..errors import ApplianceError, Invalid, Unavailable
from .commit import SharedCommit, last_look
from .interface import Budget as Limits
from .paths import virtual

NOT_ON_REMOTE = (
    "{path} is still being uploaded to a remote source: it cannot be {what} before it is closed "
    "(only files on the appliance's own disk can). Close it first, or upload it again."
)


class RemoteDownload:
    """A remote file read at offsets: reads answered one at a time, in the order they came."""

    socket_sender = None  # no socket fast path: the bytes come over the network

    def __init__(
        self, path: str, size: int, on_close: Callable[[int, int], Awaitable[None]], mtime: float | None = None
    ):
        self.path = path
        self.size = size
        self.mtime = mtime
        self._on_close = on_close
        self._lock = DeferredLock()  # reads answer in the order they came
        self.bytes_read = 0
        self.reads = 0
        self._closed = False

    async def read(self, offset: int, length: int) -> bytes:
        if self._closed:
            raise Invalid("The file is closed.")
        if offset < 0 or length < 0:
            raise Invalid("A negative offset or length.")
        self.reads += 1
        await self._lock.acquire()
        try:
            data = await self._read(offset, length)
        finally:
            self._lock.release()
        self.bytes_read += len(data)
        return data

    async def _read(self, offset: int, length: int) -> bytes:
        raise NotImplementedError

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        await self._release()
        await self._on_close(self.bytes_read, self.size)

    async def _release(self) -> None:
        """Drop what is read ahead and the backend's handle (a read handle's close loses nothing)."""


class RemoteUpload(SharedCommit):
    """An upload to a remote source: nothing shows under its name until `commit`,
    `abort` leaves nothing. A refused write (quota, bad offset) or a failed send is
    kept in `_error`: later writes raise it and commit drops the upload.

    Its session sees it meanwhile (own.py) and may open more handles on it; reading
    it back, resizing or moving it before it is closed are local sources' only
    (the remote's upload is a stream), and refused here with NOT_ON_REMOTE."""

    owner = None  # the session's OwnUploads (own.py), told when a commit or abort begins
    orphaned = False  # its name was deleted or replaced meanwhile: closing saves nothing

    socket_receiver = None  # no socket fast path: the bytes go over the network

    def __init__(
        self,
        parts: list[str],
        start_size: int,
        limits: Limits,
        replaced: int | None,
        commit: Callable[..., Awaitable[None]],
        registry: set,
        no_replace: bool,
    ):
        self._parts = parts
        self.size = start_size  # logical size: the highest byte written so far
        self._limits = limits
        self.replaced = replaced  # size of the file this upload replaces, None if new
        self._commit = commit
        self._registry = registry
        registry.add(self)
        self._no_replace = no_replace  # an exclusive upload: never replaces a file made meanwhile
        self._room: list[Deferred] = []  # callers waiting for the backend to take more
        self._error: ApplianceError | None = None
        self._done = False
        self._aborted: ApplianceError | None = None  # why abort() dropped it: commit then raises this
        self.times: tuple[float, float] | None = None
        self.bytes_written = 0
        self.handles = 1  # handles of its session open on it: the last one's close commits

    @property
    def path(self) -> str:
        return virtual(self._parts)

    async def write(self, offset: int, data: bytes) -> None:
        pending = self.write_nowait(offset, data)
        if pending is not None:
            await pending

    def write_nowait(self, offset: int, data: bytes) -> Deferred | None:
        """`write` for callers on a hot path: None when the bytes were taken, else a
        Deferred that fires when there is room again. Refusals raise at once."""
        raise NotImplementedError

    def _check_write(self, offset: int) -> None:
        """Refuse a write to a finished or failed upload, or at a negative offset."""
        if self._done:
            raise self._aborted or Invalid("The upload is already finished.")
        if self._error is not None:
            raise self._error
        if offset < 0:
            self._error = Invalid("A negative offset or length.")
            raise self._error

    def _wait_for_room(self) -> Deferred:
        waiter: Deferred = Deferred()
        self._room.append(waiter)
        return waiter

    def _wake(self) -> None:
        """Let the callers waiting for room go on (or fail them with the upload's error)."""
        waiters, self._room = self._room, []
        for w in waiters:
            if self._error is not None:
                w.errback(self._error)
            else:
                w.callback(None)

    def set_times(self, atime: float, mtime: float) -> None:
        """Times to stamp on the file when it is committed, where the backend keeps them."""
        self.times = (atime, mtime)

    async def _settle(self) -> None:
        """Wait for what was sent so far."""
        raise NotImplementedError

    async def _durable(self) -> None:
        """After the commit's settle: make what was sent durable, where the backend offers it."""

    async def read(self, offset: int, length: int) -> bytes:
        raise Unavailable(NOT_ON_REMOTE.format(path=self.path, what="read back"))

    async def open_copy(self) -> int:
        raise Unavailable(NOT_ON_REMOTE.format(path=self.path, what="read back"))

    async def reader(self):
        """Refused: a remote upload is a stream, it cannot be read back."""
        await self.open_copy()

    async def truncate(self, size: int) -> None:
        if size != self.size:
            raise Unavailable(NOT_ON_REMOTE.format(path=self.path, what="resized"))

    async def flush(self) -> None:
        await self._settle()

    def renamed(self, parts: list[str]) -> None:
        raise Unavailable(NOT_ON_REMOTE.format(path=self.path, what="moved"))

    async def _commit_now(self, still_wanted: Callable[[], bool] | None = None) -> None:
        try:
            await self._settle()
            if self._error is None:
                await self._durable()
            if self._error is not None:
                raise self._error
            last_look(still_wanted)
            await self._finish()
        except BaseException as e:
            await self.abort()
            refused = self._refusal(e)
            if refused is not None:
                raise refused from None
            raise
        self._done = True
        self._registry.discard(self)
        self._limits.release(self.size)
        self._limits.committed(self.size, self.replaced)
        await self._commit(self)

    async def _finish(self) -> None:
        """Make the settled upload visible under its name (atomically)."""
        raise NotImplementedError

    def _refusal(self, error: BaseException) -> ApplianceError | None:
        """The error a failed commit is reported as, when the backend words it better."""
        return None

    async def abort(self, reason: str = "The upload was stopped before it finished: nothing was saved.") -> None:
        """Drop the upload: nothing is left on the remote, its name is untouched; a
        later commit or write raises `reason`."""
        if self._done:
            return
        self._done = True
        self._aborted = Unavailable(reason)
        finished = self.owner.finishing(self) if self.owner is not None else None
        self._registry.discard(self)
        self._limits.release(self.size)
        try:
            await self._drop()
        finally:
            if finished is not None:
                finished()

    async def _drop(self) -> None:
        raise NotImplementedError
