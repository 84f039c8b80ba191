"""A FileSession over a remote SFTP source: the same rules (permissions, audit,
atomic uploads, confinement by `split_path`), the work done by the remote server
through the source's connection pool instead of the local disk.

Quotas: a profile with a quota has its remote home walked once (then every
REFRESH seconds, as on local sources) and kept current by the changes made here;
changes made on the remote server by others are seen at the next walk.
"""

from __future__ import annotations

import stat
import struct

from twisted.conch.ssh import common, filetransfer

from ...errors import AlreadyExists, Invalid, NotEmpty, NotFound, PermissionDenied, Unavailable
from ..audit import clean
from .quota import Limits
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
from .service import FileSession, SpaceInfo
from .tree import Entry, split_path, virtual


class RemoteFileSession(FileSession):
    remote = True

    def __init__(
        self,
        service,
        account,
        tree: RemoteTree,
        limits: Limits,
        protocol: str,
        address: str,
        share: str | None = None,
    ):
        super().__init__(service, account, tree, limits, protocol, address, share)
        self.tree: RemoteTree = tree

    async def _client(self):
        return await self.tree.pool.client()

    async def _do(self, path: str, method: str, *args):
        client = await self._client()
        try:
            return await getattr(client, method)(*args)
        except Exception as e:  # noqa: BLE001 - mapped to the domain error
            raise remote_error(e, path, self.tree.remote) from None

    # -- reading ------------------------------------------------------------------

    async def stat(self, path: str, follow: bool = True) -> Entry:
        return await self.tree.stat(split_path(path), follow)

    async def list(self, path: str) -> list[Entry]:
        parts = split_path(path)
        self._require("list", virtual(parts))
        return await self.tree.list(parts)

    async def open_read(self, path: str) -> RemoteReader:
        parts = split_path(path)
        where = virtual(parts)
        self._require("download", where)
        if not parts:
            raise Invalid("/ is a folder.")
        entry = await self.tree.stat(parts)
        if entry.kind != "file":
            raise Invalid(f"{where} is a folder, not a file.")
        handle = await self.tree.open_file(parts, filetransfer.FXF_READ, {})

        async def finished(sent: int) -> None:
            await self._audit.transfer(self.account, self.protocol, self.address, "download", where, sent, self.share)

        return RemoteReader(handle, where, entry.size, self.tree.remote, finished)

    async def check_download(self, path: str) -> str:
        parts = split_path(path)
        self._require("download", virtual(parts))
        if not parts:
            raise Invalid("/ is a folder.")
        entry = await self.tree.stat(parts, follow=False)
        if entry.kind != "file":
            raise Invalid(
                f"{virtual(parts)} is a folder, not a file." if entry.is_dir else f"{virtual(parts)} is not a file."
            )
        return virtual(parts)

    # -- writing --------------------------------------------------------------------

    async def open_write(self, path: str, *, truncate: bool = True, exclusive: bool = False) -> RemoteWriter:
        parts = split_path(path)
        if not parts:
            raise Invalid("/ is a folder.")
        where = virtual(parts)
        attrs = await self.tree.attrs(parts, follow=False)
        if attrs is not None:
            if exclusive:
                raise AlreadyExists(f"{where} already exists.")
            if stat.S_ISDIR(attrs.get("permissions", 0)):
                raise Invalid(f"{where} is a folder.")
            self._require("overwrite", where)
        else:
            self._require("upload", where)
            self.limits.check_new_file()
        temp_parts = parts[:-1] + [temp_name()]
        client = await self._client()
        flags = filetransfer.FXF_WRITE | filetransfer.FXF_CREAT | filetransfer.FXF_EXCL
        try:
            handle = await client.openFile(_encode(self.tree.path(temp_parts)), flags, {"permissions": FILE_MODE})
        except Exception as e:  # noqa: BLE001
            raise remote_error(e, where, self.tree.remote) from None
        start = 0
        if attrs is not None and not truncate:
            try:
                source = await client.openFile(_encode(self.tree.path(parts)), filetransfer.FXF_READ, {})
                try:
                    await copy_into(client, source, handle)
                finally:
                    await source.close()
                start = attrs.get("size", 0)
            except Exception as e:  # noqa: BLE001
                await handle.close()
                await client.removeFile(_encode(self.tree.path(temp_parts)))
                raise remote_error(e, where, self.tree.remote) from None
        replaced = attrs.get("size", 0) if attrs is not None else None
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

    async def _replaced_size(self, parts: list[str]) -> int | None:
        attrs = await self.tree.attrs(parts, follow=False)
        if attrs is None:
            return None
        if stat.S_ISDIR(attrs.get("permissions", 0)):
            raise Invalid(f"{virtual(parts)} is a folder.")
        return attrs.get("size", 0)

    # -- changes --------------------------------------------------------------------

    async def mkdir(self, path: str, parents: bool = False) -> str:
        parts = split_path(path)
        if not parts:
            raise AlreadyExists("/ already exists.")
        self._require("mkdir", virtual(parts))
        made = False
        for depth in range(1, len(parts) + 1) if parents else [len(parts)]:
            here = parts[:depth]
            attrs = await self.tree.attrs(here, follow=False)
            if attrs is not None:
                if not parents:
                    raise AlreadyExists(f"A file or folder named {virtual(here)} already exists.")
                if not stat.S_ISDIR(attrs.get("permissions", 0)):
                    raise Invalid(f"{virtual(here)} is a file, not a folder.")
                continue
            await self._do(virtual(here), "makeDirectory", _encode(self.tree.path(here)), {"permissions": DIR_MODE})
            made = True
        if made:
            await self._changed(
                "mkdir", virtual(parts), f"{self._who} created the folder {clean(virtual(parts))} over {self._over}"
            )
        return virtual(parts)

    async def _folder(self, parts: list[str]) -> None:
        if not parts:
            raise PermissionDenied("Your home folder cannot be removed.")
        self._require("delete", virtual(parts))
        attrs = await self.tree.attrs(parts, follow=False)
        if attrs is None:
            raise NotFound(f"No such folder: {virtual(parts)}")
        if not stat.S_ISDIR(attrs.get("permissions", 0)):
            raise Invalid(f"{virtual(parts)} is not a folder.")

    async def rmdir(self, path: str) -> None:
        parts = split_path(path)
        await self._folder(parts)
        await self._rmdir(parts)
        await self._removed_folder(parts)

    async def _rmdir(self, parts: list[str]) -> None:
        try:
            await self._do(virtual(parts), "removeDirectory", _encode(self.tree.path(parts)))
        except Unavailable:
            if await self.tree.list(parts):  # OpenSSH answers a bare failure for a folder not empty
                raise NotEmpty(f"The folder {virtual(parts)} is not empty.") from None
            raise

    async def _removed_folder(self, parts: list[str]) -> None:
        await self._changed(
            "delete", virtual(parts), f"{self._who} removed the folder {clean(virtual(parts))} over {self._over}"
        )

    async def remove_tree(self, path: str) -> None:
        parts = split_path(path)
        await self._folder(parts)
        await self._remove_under(parts)
        self._service._quotas.forget(self.tree.root)
        await self._removed_folder(parts)

    async def _remove_under(self, parts: list[str]) -> None:
        folder = _encode(self.tree.path(parts))
        client = await self._client()
        names = await self.tree.call(virtual(parts), parts, "openDirectory", folder)
        children = []
        try:
            while True:
                try:
                    batch = await names.read()
                except EOFError:
                    break
                children.extend(
                    (raw.decode("utf-8", "surrogateescape"), item.get("permissions", 0))
                    for raw, _long, item in batch
                    if raw not in (b".", b"..")
                )
        finally:
            await names.close()
        for name, mode in children:
            if stat.S_ISDIR(mode):
                await self._remove_under(parts + [name])
            else:
                try:
                    await client.removeFile(_encode(self.tree.path(parts + [name])))
                except Exception as e:  # noqa: BLE001
                    raise remote_error(e, virtual(parts + [name]), self.tree.remote) from None
        await self._rmdir(parts)

    async def remove(self, path: str) -> None:
        parts = split_path(path)
        if not parts:
            raise PermissionDenied("Your home folder cannot be removed.")
        where = virtual(parts)
        self._require("delete", where)
        attrs = await self.tree.attrs(parts, follow=False)
        if attrs is None:
            raise NotFound(f"No such file: {where}")
        if stat.S_ISDIR(attrs.get("permissions", 0)):
            raise Invalid(f"{where} is a folder: remove it as a folder.")
        await self._do(where, "removeFile", _encode(self.tree.path(parts)))
        if stat.S_ISREG(attrs.get("permissions", 0)):
            self.limits.removed(attrs.get("size", 0))
        await self._changed("delete", where, f"{self._who} deleted {clean(where)} over {self._over}")

    async def rename(self, source: str, target: str, overwrite: bool = False) -> None:
        src, dst = split_path(source), split_path(target)
        if not src or not dst:
            raise PermissionDenied("Your home folder cannot be renamed.")
        self._require("rename", virtual(src))
        if await self.tree.attrs(src, follow=False) is None:
            raise NotFound(f"No such file or folder: {virtual(src)}")
        existing = await self.tree.attrs(dst, follow=False)
        old, new = _encode(self.tree.path(src)), _encode(self.tree.path(dst))
        client = await self._client()
        try:
            if existing is not None:
                if not overwrite:
                    raise AlreadyExists(f"{virtual(dst)} already exists.")
                if "overwrite" not in self.account.profile.permissions:
                    raise PermissionDenied(f"You may not overwrite files ({virtual(dst)}).")
                await posix_rename(client, old, new)
                if stat.S_ISREG(existing.get("permissions", 0)):
                    self.limits.removed(existing.get("size", 0))
            else:
                await client.renameFile(old, new)
        except (filetransfer.SFTPError, NotImplementedError, ConnectionError) as e:
            raise remote_error(e, virtual(dst), self.tree.remote) from None
        await self._changed(
            "rename",
            virtual(src),
            f"{self._who} renamed {clean(virtual(src))} to {clean(virtual(dst))} over {self._over}",
        )

    async def set_times(self, path: str, atime: float, mtime: float) -> None:
        parts = split_path(path)
        if "upload" not in self.account.profile.permissions and "overwrite" not in self.account.profile.permissions:
            raise PermissionDenied(f"You may not change files ({virtual(parts)}).")
        if self._read_only:
            raise PermissionDenied("The source is read-only.")
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
