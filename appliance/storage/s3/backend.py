"""A profile's home in an S3 bucket: the storage backend of s3 sources.

The work is done by the bucket through the source's client (client.py); an upload
is a multipart upload that appears only when complete (client.S3Writer).
Folders follow S3's convention: `name/` marker objects, or any key under the
prefix. A folder that loses its last object keeps a marker, so it stays until it
is removed, as on a disk. Renames copy and delete, key by key for a folder: they
are not atomic (a failure half way leaves some keys under each name, none lost).
Quotas: the home's keys are counted once (then every REFRESH seconds) and kept
current by the changes made here.
"""

from __future__ import annotations

from ...errors import AlreadyExists, Invalid, NotEmpty, NotFound, Unavailable
from ...models import Source
from ...threads import Threads
from ..interface import Budget, Committed, Finished, Found, SpaceInfo
from ..paths import Entry, virtual
from .client import S3Reader, S3Sources, S3Tree, S3Writer, _mtime
from .config import S3Config


def _found(kind: tuple[str, dict] | None) -> Found | None:
    """S3Tree.kind's answer as a Found (a file's size from its HEAD)."""
    if kind is None:
        return None
    return kind[0], int(kind[1].get("ContentLength", 0)) if kind[0] == "file" else 0


class S3Homes:
    """The homes in S3 buckets (source type "s3")."""

    def __init__(self, sources: S3Sources, threads: Threads):
        self.sources = sources
        self.config = S3Config(sources, threads)

    async def open(self, source: Source, home_parts: list[str]) -> S3Storage:
        """The profile's home (a key prefix: nothing to make)."""
        return S3Storage(S3Tree(self.sources.client(source), home_parts))

    async def sweep(self, source: Source, now: float) -> int:
        return await self.sources.sweep(source, now)


class S3Storage:
    """One home under a key prefix of a bucket (see interface.Backend)."""

    remote = True
    modes = False  # an object has no mode: the one shown is the appliance's
    resizes = False  # a stored object is rewritten as a whole: it can only be emptied
    renames_open_uploads = False
    partials = None  # resumable uploads are staged on the appliance's own disk
    rename_onto_itself_does_nothing = True
    begins_uploads_blind = False
    lists_names = False

    def __init__(self, tree: S3Tree):
        self.tree = tree
        self.root = tree.root

    def _call(self, path: str, method: str, **kwargs):
        return self.tree.client.call(path, method, **kwargs)

    async def lookup(self, parts: list[str]) -> Found | None:
        return _found(await self.tree.kind(parts))

    async def _in_folder(self, parts: list[str]) -> None:
        """Refuse a name whose folder does not exist (S3 would make it)."""
        parent = await self.tree.kind(parts[:-1])
        if parent is None:
            raise NotFound(f"No such folder: {virtual(parts[:-1])}")
        if parent[0] != "dir":
            raise Invalid(f"{virtual(parts[:-1])} is a file, not a folder.")

    # -- reading ------------------------------------------------------------------

    async def _file(self, parts: list[str]) -> dict:
        where = virtual(parts)
        if not parts:
            raise Invalid("/ is a folder.")
        found = await self.tree.kind(parts)
        if found is None:
            raise NotFound(f"No such file: {where}")
        if found[0] != "file":
            raise Invalid(f"{where} is a folder, not a file.")
        return found[1]

    async def stat(self, parts: list[str], follow: bool) -> Entry:
        return await self.tree.stat(parts, follow)

    async def list(self, parts: list[str]) -> list[Entry]:
        return await self.tree.list(parts)

    async def open_reader(self, parts: list[str], where: str, finished: Finished) -> S3Reader:
        head = await self._file(parts)
        size = int(head.get("ContentLength", 0))
        return S3Reader(
            self.tree.client,
            self.tree.key(parts),
            where,
            size,
            head.get("ETag", ""),
            finished,
            _mtime(head.get("LastModified")) if head.get("LastModified") else None,
        )

    async def check_file(self, parts: list[str]) -> None:
        await self._file(parts)

    # -- writing --------------------------------------------------------------------

    async def upload_target(self, parts: list[str]) -> Found | None:
        """What stands at an upload's name now (refusing a folder), after checking its folder exists."""
        if not parts:
            raise Invalid("/ is a folder.")
        found = await self.tree.kind(parts)
        if found is not None and found[0] == "dir":
            raise Invalid(f"{virtual(parts)} is a folder.")
        if found is None and len(parts) > 1:
            await self._in_folder(parts)
        return _found(found)

    async def begin_upload(
        self,
        parts: list[str],
        replaced: int | None,
        truncate: bool,
        exclusive: bool,
        budget: Budget,
        committed: Committed,
        uploads: set,
    ) -> S3Writer:
        writer = S3Writer(self.tree, parts, budget, replaced, committed, uploads, exclusive)
        if replaced and not truncate:
            try:
                await writer.start_from(replaced)  # its bytes are counted by the files service
            except BaseException:
                await writer.abort()
                raise
        return writer

    # -- changes --------------------------------------------------------------------

    async def make_folders(self, parts: list[str], parents: bool) -> bool:
        where = virtual(parts)
        for depth in range(1, len(parts)) if parents else []:
            found = await self.tree.kind(parts[:depth])
            if found is not None and found[0] == "file":
                raise Invalid(f"{virtual(parts[:depth])} is a file, not a folder.")
        found = await self.tree.kind(parts)
        if found is not None:
            if found[0] == "dir" and parents:
                return False
            if found[0] == "file" and parents:
                raise Invalid(f"{where} is a file, not a folder.")
            raise AlreadyExists(f"A file or folder named {where} already exists.")
        if not parents and len(parts) > 1:
            await self._in_folder(parts)
        await self._call(where, "put_object", Key=self.tree.folder(parts), Body=b"")
        return True

    async def kept(self, parts: list[str]) -> None:
        await self.tree.keep_folder(parts)

    async def remove_empty_folder(self, parts: list[str]) -> None:
        _, _, holds = await self.tree.folder_state(parts)
        if holds:
            raise NotEmpty(f"The folder {virtual(parts)} is not empty.")
        await self._call(virtual(parts), "delete_object", Key=self.tree.folder(parts))

    async def remove_all(self, parts: list[str]) -> None:
        keys = await self.tree.keys_under(parts)
        await self.tree.delete_keys(virtual(parts), [key for key, _ in keys])

    async def delete_file(self, parts: list[str], found: Found) -> int | None:
        await self._call(virtual(parts), "delete_object", Key=self.tree.key(parts))
        return found[1] if found[0] == "file" else None

    async def rename_target(self, parts: list[str]) -> Found | None:
        found = await self.tree.kind(parts)
        if found is None and len(parts) > 1:
            await self._in_folder(parts)
        return _found(found)

    def may_replace(self, found: Found, existing: Found) -> bool:
        return found[0] == "file" and existing[0] == "file"  # a folder is many keys: never replaced by a rename

    async def move(self, src: list[str], dst: list[str], found: Found, existing: Found | None) -> int | None:
        replaced = existing[1] if existing is not None and existing[0] == "file" and src != dst else None
        if found[0] == "file":
            await self.tree.copy(virtual(dst), self.tree.key(src), self.tree.key(dst), found[1])
            await self._call(virtual(src), "delete_object", Key=self.tree.key(src))
            return replaced
        if dst[: len(src)] == src:
            raise Invalid(f"{virtual(src)} cannot be moved into itself.")
        old, new = self.tree.folder(src), self.tree.folder(dst)
        keys = await self.tree.keys_under(src)
        for key, size in keys:
            await self.tree.copy(virtual(dst), key, new + key[len(old) :], size)
        await self.tree.delete_keys(virtual(src), [key for key, _ in keys])
        return replaced

    async def move_upload(self, upload, src: list[str], dst: list[str]) -> tuple[int | None, int | None]:
        raise Unavailable(f"{virtual(src)} is still being uploaded to a remote source: it cannot be renamed yet.")

    async def set_times(self, parts: list[str], atime: float, mtime: float) -> None:
        """Accepted and ignored: S3 keeps an object's upload time."""
        if await self.tree.kind(parts) is None:
            raise NotFound(f"No such file or folder: {virtual(parts)}")

    async def space(self) -> SpaceInfo:
        """A large unknown: a bucket has no size (the session narrows it to the quota)."""
        return SpaceInfo(4096, 1 << 40, 1 << 40, 1 << 30, 1 << 30)

    async def usage(self) -> tuple[int, int]:
        return await self.tree.usage()
