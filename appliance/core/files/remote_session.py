"""A FileSession over a remote SFTP source: the same rules (permissions, audit,
atomic uploads, confinement by `split_path`), the work done by the remote server
through the source's connection pool instead of the local disk. The rules live in
RemoteSessionBase (remote_base.py); this says how SFTP finds, opens and changes.

Quotas: a profile with a quota has its remote home walked once (then every
REFRESH seconds, as on local sources) and kept current by the changes made here;
changes made on the remote server by others are seen at the next walk.
"""

from __future__ import annotations

import stat
import struct

from twisted.conch.ssh import common, filetransfer

from ...errors import AlreadyExists, Invalid, NotEmpty, Unavailable
from .remote_base import Found, RemoteSessionBase
from .remote_sftp import (
    DIR_MODE,
    FILE_MODE,
    RemoteReader,
    RemoteTree,
    RemoteWriter,
    _encode,
    copy_into,
    posix_rename,
    remote_error,
    temp_name,
)
from .service import SpaceInfo
from .tree import virtual


class RemoteFileSession(RemoteSessionBase):
    tree: RemoteTree

    async def _client(self):
        return await self.tree.pool.client()

    async def _do(self, path: str, method: str, *args):
        client = await self._client()
        try:
            return await getattr(client, method)(*args)
        except Exception as e:  # noqa: BLE001 - mapped to the domain error
            raise remote_error(e, path, self.tree.remote) from None

    async def _lookup(self, parts: list[str]) -> Found | None:
        attrs = await self.tree.attrs(parts, follow=False)
        if attrs is None:
            return None
        mode = attrs.get("permissions", 0)
        kind = "dir" if stat.S_ISDIR(mode) else "file" if stat.S_ISREG(mode) else "other"
        return kind, attrs.get("size", 0)

    # -- reading ------------------------------------------------------------------

    async def _open_reader(self, parts: list[str], where: str, finished) -> RemoteReader:
        entry = await self.tree.stat(parts)
        if entry.kind != "file":
            raise Invalid(f"{where} is a folder, not a file.")
        handle = await self.tree.open_file(parts, filetransfer.FXF_READ, {})
        return RemoteReader(handle, where, entry.size, self.tree.remote, finished)

    # -- writing --------------------------------------------------------------------

    async def _start_upload(
        self, parts: list[str], replaced: int | None, truncate: bool, exclusive: bool
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
        writer = RemoteWriter(
            self.tree,
            parts,
            temp_parts,
            handle,
            client,
            start,
            self.limits,
            replaced,
            self._uploaded,
            self._service.uploads,
            no_replace=exclusive,
        )
        if start:
            try:
                self.limits.grow(start, replaced or 0)
            except BaseException:
                await writer.abort()
                raise
        return writer

    # -- changes --------------------------------------------------------------------

    async def _make_folders(self, parts: list[str], parents: bool) -> bool:
        made = False
        for depth in range(1, len(parts) + 1) if parents else [len(parts)]:
            here = parts[:depth]
            found = await self._lookup(here)
            if found is not None:
                if not parents:
                    raise AlreadyExists(f"A file or folder named {virtual(here)} already exists.")
                if found[0] != "dir":
                    raise Invalid(f"{virtual(here)} is a file, not a folder.")
                continue
            await self._do(virtual(here), "makeDirectory", _encode(self.tree.path(here)), {"permissions": DIR_MODE})
            made = True
        return made

    async def _remove_empty_folder(self, parts: list[str]) -> None:
        try:
            await self._do(virtual(parts), "removeDirectory", _encode(self.tree.path(parts)))
        except Unavailable:
            if await self.tree.list(parts):  # OpenSSH answers a bare failure for a folder not empty
                raise NotEmpty(f"The folder {virtual(parts)} is not empty.") from None
            raise

    async def _remove_all(self, parts: list[str]) -> None:
        client = await self._client()
        for name, item in await self.tree.folder_items(parts):
            if stat.S_ISDIR(item.get("permissions", 0)):
                await self._remove_all(parts + [name])
            else:
                try:
                    await client.removeFile(_encode(self.tree.path(parts + [name])))
                except Exception as e:  # noqa: BLE001
                    raise remote_error(e, virtual(parts + [name]), self.tree.remote) from None
        await self._remove_empty_folder(parts)

    async def _delete_file(self, parts: list[str]) -> None:
        await self._do(virtual(parts), "removeFile", _encode(self.tree.path(parts)))

    async def _move(self, src: list[str], dst: list[str], found: Found, existing: Found | None) -> None:
        old, new = _encode(self.tree.path(src)), _encode(self.tree.path(dst))
        client = await self._client()
        try:
            if existing is not None:
                await posix_rename(client, old, new)
            else:
                await client.renameFile(old, new)
        except (filetransfer.SFTPError, NotImplementedError, ConnectionError) as e:
            raise remote_error(e, virtual(dst), self.tree.remote) from None

    async def _store_times(self, parts: list[str], atime: float, mtime: float) -> None:
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
