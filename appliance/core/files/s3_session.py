"""A FileSession over an S3 source: the same rules (permissions, quotas, audit rows,
uploads that appear only when complete, confinement by `split_path`), the work
done by the bucket through the source's client (see remote_s3.py).

Folders follow S3's convention: `name/` marker objects, or any key under the
prefix. A folder that loses its last object keeps a marker, so it stays until it
is removed, as on a disk. Renames copy and delete, key by key for a folder: they
are not atomic (a failure half way leaves some keys under each name, none lost).
Quotas: the home's keys are counted once (then every REFRESH seconds) and kept
current by the changes made here.
"""

from __future__ import annotations

from ...errors import AlreadyExists, Invalid, NotEmpty, NotFound, PermissionDenied
from ..audit import clean
from .quota import Limits
from .remote_s3 import S3Reader, S3Tree, S3Writer
from .service import FileSession, SpaceInfo
from .tree import Entry, split_path, virtual


class S3FileSession(FileSession):
    remote = True

    def __init__(
        self,
        service,
        account,
        tree: S3Tree,
        limits: Limits,
        protocol: str,
        address: str,
        share: str | None = None,
    ):
        super().__init__(service, account, tree, limits, protocol, address, share)
        self.tree: S3Tree = tree
        self._call = tree.client.call

    # -- reading ------------------------------------------------------------------

    async def stat(self, path: str, follow: bool = True) -> Entry:
        return await self.tree.stat(split_path(path))

    async def list(self, path: str) -> list[Entry]:
        parts = split_path(path)
        self._require("list", virtual(parts))
        return await self.tree.list(parts)

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

    async def open_read(self, path: str) -> S3Reader:
        parts = split_path(path)
        where = virtual(parts)
        self._require("download", where)
        head = await self._file(parts)

        async def finished(sent: int) -> None:
            await self._audit.transfer(self.account, self.protocol, self.address, "download", where, sent, self.share)

        size = int(head.get("ContentLength", 0))
        return S3Reader(self.tree.client, self.tree.key(parts), where, size, head.get("ETag", ""), finished)

    async def check_download(self, path: str) -> str:
        parts = split_path(path)
        self._require("download", virtual(parts))
        await self._file(parts)
        return virtual(parts)

    # -- writing --------------------------------------------------------------------

    async def _target(self, parts: list[str]) -> tuple[str, dict] | None:
        """What stands at an upload's name now (refusing a folder), after checking its folder exists."""
        where = virtual(parts)
        if not parts:
            raise Invalid("/ is a folder.")
        found = await self.tree.kind(parts)
        if found is not None and found[0] == "dir":
            raise Invalid(f"{where} is a folder.")
        if found is None and len(parts) > 1:
            parent = await self.tree.kind(parts[:-1])
            if parent is None:
                raise NotFound(f"No such folder: {virtual(parts[:-1])}")
            if parent[0] != "dir":
                raise Invalid(f"{virtual(parts[:-1])} is a file, not a folder.")
        return found

    async def open_write(self, path: str, *, truncate: bool = True, exclusive: bool = False) -> S3Writer:
        parts = split_path(path)
        where = virtual(parts)
        found = await self._target(parts)
        if found is not None:
            if exclusive:
                raise AlreadyExists(f"{where} already exists.")
            self._require("overwrite", where)
        else:
            self._require("upload", where)
            self.limits.check_new_file()
        replaced = int(found[1].get("ContentLength", 0)) if found is not None else None
        writer = S3Writer(self.tree, parts, self.limits, replaced, self._uploaded, self._service.uploads, exclusive)
        if found is not None and not truncate and replaced:
            try:
                self.limits.grow(replaced, replaced)
                await writer.start_from(replaced)
            except BaseException:
                await writer.abort()
                raise
        return writer

    async def _replaced_size(self, parts: list[str]) -> int | None:
        found = await self._target(parts)
        return int(found[1].get("ContentLength", 0)) if found is not None else None

    # -- changes --------------------------------------------------------------------

    async def mkdir(self, path: str, parents: bool = False) -> str:
        parts = split_path(path)
        if not parts:
            raise AlreadyExists("/ already exists.")
        where = virtual(parts)
        self._require("mkdir", where)
        for depth in range(1, len(parts)) if parents else []:
            found = await self.tree.kind(parts[:depth])
            if found is not None and found[0] == "file":
                raise Invalid(f"{virtual(parts[:depth])} is a file, not a folder.")
        found = await self.tree.kind(parts)
        if found is not None:
            if found[0] == "dir" and parents:
                return where
            if found[0] == "file" and parents:
                raise Invalid(f"{where} is a file, not a folder.")
            raise AlreadyExists(f"A file or folder named {where} already exists.")
        if not parents and len(parts) > 1:
            parent = await self.tree.kind(parts[:-1])
            if parent is None:
                raise NotFound(f"No such folder: {virtual(parts[:-1])}")
            if parent[0] != "dir":
                raise Invalid(f"{virtual(parts[:-1])} is a file, not a folder.")
        await self._call(where, "put_object", Key=self.tree.folder(parts), Body=b"")
        await self._changed("mkdir", where, f"{self._who} created the folder {clean(where)} over {self._over}")
        return where

    async def _folder(self, parts: list[str]) -> None:
        if not parts:
            raise PermissionDenied("Your home folder cannot be removed.")
        self._require("delete", virtual(parts))
        found = await self.tree.kind(parts)
        if found is None:
            raise NotFound(f"No such folder: {virtual(parts)}")
        if found[0] != "dir":
            raise Invalid(f"{virtual(parts)} is not a folder.")

    async def _removed_folder(self, parts: list[str]) -> None:
        await self.tree.keep_folder(parts[:-1])
        await self._changed(
            "delete", virtual(parts), f"{self._who} removed the folder {clean(virtual(parts))} over {self._over}"
        )

    async def rmdir(self, path: str) -> None:
        parts = split_path(path)
        await self._folder(parts)
        _, _, holds = await self.tree.folder_state(parts)
        if holds:
            raise NotEmpty(f"The folder {virtual(parts)} is not empty.")
        await self._call(virtual(parts), "delete_object", Key=self.tree.folder(parts))
        await self._removed_folder(parts)

    async def remove_tree(self, path: str) -> None:
        parts = split_path(path)
        await self._folder(parts)
        keys = await self.tree.keys_under(parts)
        await self.tree.delete_keys(virtual(parts), [key for key, _ in keys])
        self._service._quotas.forget(self.tree.root)
        await self._removed_folder(parts)

    async def remove(self, path: str) -> None:
        parts = split_path(path)
        if not parts:
            raise PermissionDenied("Your home folder cannot be removed.")
        where = virtual(parts)
        self._require("delete", where)
        found = await self.tree.kind(parts)
        if found is None:
            raise NotFound(f"No such file: {where}")
        if found[0] == "dir":
            raise Invalid(f"{where} is a folder: remove it as a folder.")
        await self._call(where, "delete_object", Key=self.tree.key(parts))
        self.limits.removed(int(found[1].get("ContentLength", 0)))
        await self.tree.keep_folder(parts[:-1])
        await self._changed("delete", where, f"{self._who} deleted {clean(where)} over {self._over}")

    async def rename(self, source: str, target: str, overwrite: bool = False) -> None:
        src, dst = split_path(source), split_path(target)
        if not src or not dst:
            raise PermissionDenied("Your home folder cannot be renamed.")
        self._require("rename", virtual(src))
        if src == dst:
            return
        found = await self.tree.kind(src)
        if found is None:
            raise NotFound(f"No such file or folder: {virtual(src)}")
        existing = await self._target_of_rename(dst)
        replaced = None
        if existing is not None:
            if not overwrite or found[0] == "dir" or existing[0] == "dir":
                raise AlreadyExists(f"{virtual(dst)} already exists.")
            if "overwrite" not in self.account.profile.permissions:
                raise PermissionDenied(f"You may not overwrite files ({virtual(dst)}).")
            replaced = int(existing[1].get("ContentLength", 0))
        if found[0] == "file":
            size = int(found[1].get("ContentLength", 0))
            await self.tree.copy(virtual(dst), self.tree.key(src), self.tree.key(dst), size)
            await self._call(virtual(src), "delete_object", Key=self.tree.key(src))
        else:
            if dst[: len(src)] == src:
                raise Invalid(f"{virtual(src)} cannot be moved into itself.")
            old, new = self.tree.folder(src), self.tree.folder(dst)
            keys = await self.tree.keys_under(src)
            for key, size in keys:
                await self.tree.copy(virtual(dst), key, new + key[len(old) :], size)
            await self.tree.delete_keys(virtual(src), [key for key, _ in keys])
        if replaced is not None:
            self.limits.removed(replaced)
        await self.tree.keep_folder(src[:-1])
        await self._changed(
            "rename",
            virtual(src),
            f"{self._who} renamed {clean(virtual(src))} to {clean(virtual(dst))} over {self._over}",
        )

    async def _target_of_rename(self, dst: list[str]):
        found = await self.tree.kind(dst)
        if found is None and len(dst) > 1:
            parent = await self.tree.kind(dst[:-1])
            if parent is None:
                raise NotFound(f"No such folder: {virtual(dst[:-1])}")
            if parent[0] != "dir":
                raise Invalid(f"{virtual(dst[:-1])} is a file, not a folder.")
        return found

    async def set_times(self, path: str, atime: float, mtime: float) -> None:
        """Accepted and ignored: S3 keeps an object's upload time."""
        parts = split_path(path)
        if "upload" not in self.account.profile.permissions and "overwrite" not in self.account.profile.permissions:
            raise PermissionDenied(f"You may not change files ({virtual(parts)}).")
        if self._read_only:
            raise PermissionDenied("The source is read-only.")
        if await self.tree.kind(parts) is None:
            raise NotFound(f"No such file or folder: {virtual(parts)}")

    async def space(self) -> SpaceInfo:
        """The quota when the profile has one, else a large unknown (a bucket has no size)."""
        block = 4096
        total = free = 1 << 40
        if self.limits.quota_bytes is not None:
            total = self.limits.quota_bytes // block
            free = (self.limits.free_bytes() or 0) // block
        files_total = files_free = 1 << 30
        if self.limits.quota_files is not None and self.limits.usage is not None:
            files_total = self.limits.quota_files
            files_free = max(0, self.limits.quota_files - self.limits.usage.files)
        return SpaceInfo(block, total, free, files_total, files_free)
