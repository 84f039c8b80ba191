"""A profile's home on a remote SFTP server: the storage backend of sftp sources.

The work is done by the remote server through the source's connection pool
(client.py); uploads go to a temporary name beside their target and are renamed
into place by their commit (client.RemoteWriter). Quotas: a profile with a quota
has its remote home walked once (then every REFRESH seconds, as on local sources)
and kept current by the changes made through the appliance; changes made on the
remote server by others are seen at the next walk.
"""

from __future__ import annotations

import stat
import struct

from twisted.conch.ssh import common, filetransfer

from ...errors import AlreadyExists, ApplianceError, Invalid, NotEmpty, Unavailable
from ...models import Source
from ..interface import Budget, Committed, Finished, Found, SpaceInfo
from ..paths import Entry, virtual
from .client import (
    DIR_MODE,
    FILE_MODE,
    RemoteReader,
    RemoteSources,
    RemoteTree,
    RemoteWriter,
    _encode,
    copy_into,
    posix_rename,
    remote_error,
    temp_name,
)
from .config import SftpConfig


class SftpHomes:
    """The homes on remote SFTP sources (source type "sftp")."""

    def __init__(self, sources: RemoteSources):
        self.sources = sources
        self.config = SftpConfig(sources)

    async def open(self, source: Source, home_parts: list[str]) -> SftpStorage:
        """The profile's home (made on first use)."""
        pool = self.sources.pool(source)
        home = RemoteTree(pool, [])
        for depth in range(len(home_parts) + 1):  # the home folder, made on first use
            if await home.attrs(home_parts[:depth]) is not None:
                continue
            if depth == 0:
                raise Unavailable(f"The source {source.name!r} is not reachable: its folder does not exist.")
            if source.read_only:
                raise Unavailable("Your home folder does not exist on a read-only source.")
            try:
                await home.call(
                    virtual(home_parts[:depth]),
                    home_parts[:depth],
                    "makeDirectory",
                    _encode(home.path(home_parts[:depth])),
                    {"permissions": DIR_MODE},
                )
            except ApplianceError:
                # another first session of this profile (the console lists and uploads at once) made it
                if await home.attrs(home_parts[:depth]) is None:
                    raise
        return SftpStorage(RemoteTree(pool, home_parts))

    async def sweep(self, source: Source, now: float) -> int:
        return await self.sources.sweep(source, now)


class SftpStorage:
    """One home folder on a remote SFTP server (see interface.Backend)."""

    remote = True
    modes = False  # the remote account's modes are the remote's business
    resizes = False  # a stored file is rewritten through the remote's streams: it can only be emptied
    renames_open_uploads = False
    partials = None  # resumable uploads are staged on the appliance's own disk
    rename_onto_itself_does_nothing = False
    begins_uploads_blind = False
    lists_names = False

    def __init__(self, tree: RemoteTree):
        self.tree = tree
        self.root = tree.root

    async def _client(self):
        return await self.tree.pool.client()

    async def _do(self, path: str, method: str, *args):
        client = await self._client()
        try:
            return await getattr(client, method)(*args)
        except Exception as e:  # noqa: BLE001 - mapped to the domain error
            raise remote_error(e, path, self.tree.remote) from None

    async def lookup(self, parts: list[str]) -> Found | None:
        attrs = await self.tree.attrs(parts, follow=False)
        if attrs is None:
            return None
        mode = attrs.get("permissions", 0)
        kind = "dir" if stat.S_ISDIR(mode) else "file" if stat.S_ISREG(mode) else "other"
        return kind, attrs.get("size", 0)

    # -- reading ------------------------------------------------------------------

    async def stat(self, parts: list[str], follow: bool) -> Entry:
        return await self.tree.stat(parts, follow)

    async def list(self, parts: list[str]) -> list[Entry]:
        return await self.tree.list(parts)

    async def check_file(self, parts: list[str]) -> None:
        entry = await self.tree.stat(parts, False)
        if entry.kind != "file":
            raise Invalid(
                f"{virtual(parts)} is a folder, not a file." if entry.is_dir else f"{virtual(parts)} is not a file."
            )

    async def open_reader(self, parts: list[str], where: str, finished: Finished) -> RemoteReader:
        if not parts:
            raise Invalid("/ is a folder.")
        entry = await self.tree.stat(parts)
        if entry.kind != "file":
            raise Invalid(f"{where} is a folder, not a file.")
        handle = await self.tree.open_file(parts, filetransfer.FXF_READ, {})
        return RemoteReader(handle, where, entry.size, self.tree.remote, finished, entry.mtime)

    # -- writing --------------------------------------------------------------------

    async def upload_target(self, parts: list[str]) -> Found | None:
        return await self.lookup(parts)

    async def begin_upload(
        self,
        parts: list[str],
        replaced: int | None,
        truncate: bool,
        exclusive: bool,
        budget: Budget,
        committed: Committed,
        uploads: set,
    ) -> RemoteWriter:
        where = virtual(parts)
        temp_parts = parts[:-1] + [temp_name()]
        client = await self._client()
        flags = filetransfer.FXF_WRITE | filetransfer.FXF_CREAT | filetransfer.FXF_EXCL
        try:
            handle = await client.openFile(_encode(self.tree.path(temp_parts)), flags, {"permissions": FILE_MODE})
        except Exception as e:  # noqa: BLE001
            raise remote_error(e, where, self.tree.remote) from None
        start = 0
        if replaced is not None and not truncate:
            try:
                source = await client.openFile(_encode(self.tree.path(parts)), filetransfer.FXF_READ, {})
                try:
                    await copy_into(client, source, handle)
                finally:
                    await source.close()
                start = replaced
            except Exception as e:  # noqa: BLE001
                await handle.close()
                await client.removeFile(_encode(self.tree.path(temp_parts)))
                raise remote_error(e, where, self.tree.remote) from None
        # a copy's bytes (`start`) are counted by the files service
        return RemoteWriter(
            self.tree,
            parts,
            temp_parts,
            handle,
            client,
            start,
            budget,
            replaced,
            committed,
            uploads,
            no_replace=exclusive,
        )

    # -- changes --------------------------------------------------------------------

    async def make_folders(self, parts: list[str], parents: bool) -> bool:
        made = False
        for depth in range(1, len(parts) + 1) if parents else [len(parts)]:
            here = parts[:depth]
            found = await self.lookup(here)
            if found is not None:
                if not parents:
                    raise AlreadyExists(f"A file or folder named {virtual(here)} already exists.")
                if found[0] != "dir":
                    raise Invalid(f"{virtual(here)} is a file, not a folder.")
                continue
            await self._do(virtual(here), "makeDirectory", _encode(self.tree.path(here)), {"permissions": DIR_MODE})
            made = True
        return made

    async def remove_empty_folder(self, parts: list[str]) -> None:
        try:
            await self._do(virtual(parts), "removeDirectory", _encode(self.tree.path(parts)))
        except Unavailable:
            if await self.tree.list(parts):  # OpenSSH answers a bare failure for a folder not empty
                raise NotEmpty(f"The folder {virtual(parts)} is not empty.") from None
            raise

    async def remove_all(self, parts: list[str]) -> None:
        client = await self._client()
        for name, item in await self.tree.folder_items(parts):
            if stat.S_ISDIR(item.get("permissions", 0)):
                await self.remove_all(parts + [name])
            else:
                try:
                    await client.removeFile(_encode(self.tree.path(parts + [name])))
                except Exception as e:  # noqa: BLE001
                    raise remote_error(e, virtual(parts + [name]), self.tree.remote) from None
        await self.remove_empty_folder(parts)

    async def delete_file(self, parts: list[str], found: Found) -> int | None:
        await self._do(virtual(parts), "removeFile", _encode(self.tree.path(parts)))
        return found[1] if found[0] == "file" else None

    async def rename_target(self, parts: list[str]) -> Found | None:
        return await self.lookup(parts)

    def may_replace(self, found: Found, existing: Found) -> bool:
        return True

    async def move(self, src: list[str], dst: list[str], found: Found, existing: Found | None) -> int | None:
        old, new = _encode(self.tree.path(src)), _encode(self.tree.path(dst))
        client = await self._client()
        try:
            if existing is not None:
                await posix_rename(client, old, new)
            else:
                await client.renameFile(old, new)
        except (filetransfer.SFTPError, NotImplementedError, ConnectionError) as e:
            raise remote_error(e, virtual(dst), self.tree.remote) from None
        return existing[1] if existing is not None and existing[0] == "file" and src != dst else None

    async def move_upload(self, upload, src: list[str], dst: list[str]) -> tuple[int | None, int | None]:
        raise Unavailable(f"{virtual(src)} is still being uploaded to a remote source: it cannot be renamed yet.")

    async def kept(self, parts: list[str]) -> None:
        """Nothing to do: a folder on an SFTP server stays when its last file goes."""

    async def set_times(self, parts: list[str], atime: float, mtime: float) -> None:
        await self._do(
            virtual(parts), "setAttrs", _encode(self.tree.path(parts)), {"atime": int(atime), "mtime": int(mtime)}
        )

    async def space(self) -> SpaceInfo:
        """The remote's statvfs when it offers it, else a large unknown."""
        client = await self._client()
        if b"statvfs@openssh.com" in client.extensions:
            try:
                reply = await client.extendedRequest(b"statvfs@openssh.com", common.NS(_encode(self.tree.path([]))))
                bsize, frsize, blocks, _bfree, bavail, files, _ffree, favail = struct.unpack("!8Q", reply[:64])
                return SpaceInfo(frsize or bsize or 4096, blocks, bavail, files, favail)
            except Exception:  # noqa: BLE001 - fall back to "unknown"
                pass
        return SpaceInfo(4096, 1 << 40, 1 << 40, 1 << 30, 1 << 30)

    async def usage(self) -> tuple[int, int]:
        return await self.tree.usage()
