"""The storage interface: what the files rules (core/files/service.py) work on.

A backend holds one profile's home on one source (the local disk, a remote SFTP
server, an S3 bucket). It knows how to find, read, write, move and remove names
below that home; it knows no rule: permissions, quotas, the order of the checks
and the audit sentences are the files session's, written once for every backend.

Paths reach a backend already split and checked (paths.split_path): `parts`, the
names below the home. What stands at a name is a `Found`: ("file" | "dir" |
"other", size); "other" is what a disk or a remote SFTP server may hold besides
(a link, a device...).

An upload goes to a temporary name (`begin_upload`) and appears under its real
name only when its last handle commits (`Upload.commit`); `Upload.abort` leaves
no trace. A resumable upload's partial file (`Backend.partials`) is an optional
capability too. The socket fast path (sendfile/splice between a file and a plain TCP
socket) is an optional, declared capability: `Download.socket_sender` and
`Upload.socket_receiver` are the handle itself when it has one, else None.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from twisted.internet.defer import Deferred

if TYPE_CHECKING:
    from .paths import Entry

Found = tuple[str, int]
Finished = Callable[[int, int], Awaitable[None]]  # a download's close: (bytes sent, file size)
Committed = Callable[["Upload"], Awaitable[None]]  # an upload's commit: writes its audit row
Shape = Callable[[list["Entry"]], Any]  # what a caller makes of a batch of entries (a listing's lines)


@dataclass(frozen=True)
class SpaceInfo:
    """What statvfs reports: the quota when there is one, else the storage's."""

    block_size: int
    total_blocks: int
    free_blocks: int
    total_files: int
    free_files: int


class Budget(Protocol):
    """The quota an upload counts its bytes against (core/files/quota.py Limits): the
    rule lives there; a backend's upload only reports growth, release and commit."""

    def grow(self, growth: int, allowance: int) -> None: ...
    def room(self, allowance: int) -> int | None: ...
    def release(self, pending: int) -> None: ...
    def committed(self, size: int, replaced: int | None) -> None: ...


class SocketSender(Protocol):
    """The fast path of a download: the file sent straight to a connected socket."""

    def socket_slot(self) -> threading.Event | None: ...

    async def send_socket(
        self, sock_fd: int, offset: int, stop: threading.Event, on_data: Callable[[], None]
    ) -> tuple[str, int]: ...


class SocketReceiver(Protocol):
    """The fast path of an upload: what arrives on a connected socket written straight to the file."""

    def socket_slot(self) -> threading.Event | None: ...

    async def receive_socket(
        self, sock_fd: int, offset: int, stop: threading.Event, on_data: Callable[[], None]
    ) -> tuple[str, int]: ...


class Partials(Protocol):
    """Resumable uploads' partial files, kept in the home beside their target under a hidden
    name (paths.RESUMABLE_PREFIX + the upload's id) until the last byte is there: an optional
    capability (local sources; a backend without it has its resumable uploads staged on the
    appliance's own disk, see core/files/resumable.py). Not an Upload: a partial outlives the
    session and the process that began it, its offset is recorded by the core after each
    fsynced append, and the quota and audit row are the core's when it is committed."""

    async def create(self, parts: list[str], name: str) -> None: ...
    async def append(self, parts: list[str], name: str, offset: int, body: io.IOBase, size: int) -> int: ...
    async def commit(self, parts: list[str], name: str, overwrite: bool) -> None: ...
    async def remove(self, parts: list[str], name: str) -> None: ...


class Download(Protocol):
    """An open file being read; its close writes the download's audit row (`Finished`)."""

    path: str
    size: int
    mtime: float | None  # when the file last changed, as it was opened (None: not known, or still changing)
    socket_sender: SocketSender | None

    async def read(self, offset: int, length: int) -> bytes: ...
    async def close(self) -> None: ...
    async def discard(self) -> None: ...


class Upload(Protocol):
    """An upload in progress under a temporary name (see commit.SharedCommit)."""

    path: str
    size: int
    handles: int
    replaced: int | None
    orphaned: bool
    socket_receiver: SocketReceiver | None

    async def write(self, offset: int, data: bytes) -> None: ...
    def write_nowait(self, offset: int, data: bytes) -> Deferred | None: ...
    async def read(self, offset: int, length: int) -> bytes: ...
    async def reader(self) -> Download: ...
    async def truncate(self, size: int) -> None: ...
    def set_times(self, atime: float, mtime: float) -> None: ...
    def set_mode(self, mode: int) -> None: ...
    def renamed(self, parts: list[str]) -> None: ...
    async def flush(self) -> None: ...
    async def commit(self, still_wanted: Callable[[], bool] | None = None) -> None: ...
    async def abort(self, reason: str = ...) -> None: ...


class Backend(Protocol):
    """One profile's home on one source."""

    root: str  # what names this home (a folder, a URL): the quota usage is kept per root
    tree: object  # the backend's own tree of names (local: tree.Tree)
    partials: Partials | None  # resumable uploads' partial files in the home, when it keeps them
    remote: bool  # not on the appliance's own disk
    resizes: bool  # a stored file can be truncated or extended in place of a rewrite
    modes: bool  # files' and folders' modes are applied (core/files/service.py MODES says which)
    renames_open_uploads: bool  # an upload in progress can be renamed before it is closed
    rename_onto_itself_does_nothing: bool  # S3: renaming a name to itself is a no-op
    # `begin_upload_blind` looks up the name and makes the temporary file in one trip to
    # the disk (the rules are checked on what it found after: a refusal aborts the upload)
    begins_uploads_blind: bool
    # `list_names` gives a folder's names (and which are folders) without a stat of each,
    # `list_entries` the entries of some of them: a page of a big folder stats only its page
    # (`list_sorted_names`: the names alone, sorted, for a listing sent in name order;
    # `list_entries` with `shape`: what `shape` makes of the entries, made where they are
    # read, so that a listing's lines are made off the reactor too)
    lists_names: bool

    # reading
    async def stat(self, parts: list[str], follow: bool) -> Entry: ...
    async def list(self, parts: list[str]) -> list[Entry]: ...
    async def list_names(self, parts: list[str]) -> list[tuple[str, bool]]: ...
    async def list_sorted_names(self, parts: list[str]) -> Sequence[str]: ...
    async def list_entries(self, parts: list[str], names: Sequence[str], shape: Shape | None = None) -> Any: ...
    async def lookup(self, parts: list[str]) -> Found | None: ...
    async def check_file(self, parts: list[str]) -> None: ...
    async def open_reader(self, parts: list[str], where: str, finished: Finished) -> Download: ...

    # writing
    async def upload_target(self, parts: list[str]) -> Found | None: ...
    # without `truncate` an upload starts as a copy of the file there (its `size`: a resume,
    # an append): the files service counts those bytes against the quota, never the backend
    async def begin_upload(
        self,
        parts: list[str],
        replaced: int | None,
        truncate: bool,
        exclusive: bool,
        budget: Budget,
        committed: Committed,
        uploads: set,
    ) -> Upload: ...
    async def begin_upload_blind(
        self, parts: list[str], truncate: bool, exclusive: bool, budget: Budget, committed: Committed, uploads: set
    ) -> tuple[Found | None, Upload]: ...

    # changes
    async def make_folders(self, parts: list[str], parents: bool) -> bool: ...
    async def remove_empty_folder(self, parts: list[str]) -> None: ...
    async def remove_all(self, parts: list[str]) -> None: ...
    async def delete_file(self, parts: list[str], found: Found) -> int | None: ...
    async def rename_target(self, parts: list[str]) -> Found | None: ...
    def may_replace(self, found: Found, existing: Found) -> bool: ...
    async def move(self, src: list[str], dst: list[str], found: Found, existing: Found | None) -> int | None: ...
    async def move_upload(self, upload: Upload, src: list[str], dst: list[str]) -> tuple[int | None, int | None]: ...
    async def kept(self, parts: list[str]) -> None: ...
    async def set_times(self, parts: list[str], atime: float, mtime: float) -> None: ...
    async def set_mode(self, parts: list[str], mode: int) -> None: ...

    # space
    async def space(self) -> SpaceInfo | None: ...
    async def usage(self) -> tuple[int, int]: ...
