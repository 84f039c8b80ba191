"""What the sessions on remote sources (remote SFTP, S3) share, written once: the
order of the checks, the permissions, the quota bookkeeping and the audit rows of
every read and change. Each backend (remote_session.py, s3_session.py) says only
how it finds what stands at a name, opens a download, starts an upload, makes,
moves and deletes.

What stands at a name is a `Found`: ("file" | "dir" | "other", size); "other"
is what a remote SFTP server may hold besides (a link, a device...).
"""

from __future__ import annotations

from ...errors import AlreadyExists, Invalid, NotFound, PermissionDenied, Unavailable
from ..audit import clean
from .service import FileSession
from .tree import Entry, split_path, virtual

Found = tuple[str, int]


class RemoteSessionBase(FileSession):
    """A FileSession whose files are on another server, reached without threads of ours."""

    remote = True
    resizes = False  # a stored file is rewritten through the remote's streams: it can only be emptied
    rename_onto_itself_does_nothing = False  # S3: renaming a name to itself is a no-op

    # -- what each backend provides --------------------------------------------------

    async def _lookup(self, parts: list[str]) -> Found | None:
        """What stands at `parts` (links not followed), None when nothing does."""
        raise NotImplementedError

    async def _upload_target(self, parts: list[str]) -> Found | None:
        """What an upload to `parts` would replace (it may refuse the name)."""
        return await self._lookup(parts)

    async def _rename_target(self, parts: list[str]) -> Found | None:
        """What a rename to `parts` would replace (it may refuse the name)."""
        return await self._lookup(parts)

    async def _open_reader(self, parts: list[str], where: str, finished):
        """A reader of the file at `parts`, refusing anything else."""
        raise NotImplementedError

    async def _start_upload(self, parts: list[str], replaced: int | None, truncate: bool, exclusive: bool):
        """A writer for `parts`: with `replaced` and not `truncate`, it begins as a copy of the file there."""
        raise NotImplementedError

    async def _remove_empty_folder(self, parts: list[str]) -> None:
        raise NotImplementedError

    async def _remove_all(self, parts: list[str]) -> None:
        """Remove a folder and everything in it."""
        raise NotImplementedError

    async def _delete_file(self, parts: list[str]) -> None:
        raise NotImplementedError

    async def _move(self, src: list[str], dst: list[str], found: Found, existing: Found | None) -> None:
        """Move what is at `src` (`found`) to `dst`, replacing `existing` there."""
        raise NotImplementedError

    def _may_replace(self, found: Found, existing: Found) -> bool:
        """Whether a rename may put `found` over `existing` (when asked to overwrite)."""
        return True

    async def _kept(self, parts: list[str]) -> None:
        """After something under the folder `parts` went: what the backend must do to keep it."""

    # -- reading ----------------------------------------------------------------------

    async def _stat(self, parts: list[str], follow: bool) -> Entry:
        return await self.tree.stat(parts, follow)

    async def _list(self, parts: list[str]) -> list[Entry]:
        return await self.tree.list(parts)

    async def _open_reader_at(self, parts: list[str]):
        where = virtual(parts)
        if not parts:
            raise Invalid("/ is a folder.")
        return await self._open_reader(parts, where, self._download_logger(where))

    # -- writing --------------------------------------------------------------------

    async def _start_write(self, parts: list[str], truncate: bool, exclusive: bool, create: bool):
        where = virtual(parts)
        found = await self._upload_target(parts)
        if found is None and not create:
            raise NotFound(f"No such file: {where}")
        if found is not None:
            if exclusive:
                raise AlreadyExists(f"{where} already exists.")
            if found[0] == "dir":
                raise Invalid(f"{where} is a folder.")
            self._require("overwrite", where)
        else:
            self._require("upload", where)
            self.limits.check_new_file()
        return await self._start_upload(parts, found[1] if found is not None else None, truncate, exclusive)

    async def _replaced_size(self, parts: list[str]) -> int | None:
        found = await self._upload_target(parts)
        if found is None:
            return None
        if found[0] == "dir":
            raise Invalid(f"{virtual(parts)} is a folder.")
        return found[1]

    # -- changes --------------------------------------------------------------------

    async def _folder(self, parts: list[str]) -> None:
        """Refuse anything but a folder this profile may remove."""
        if not parts:
            raise PermissionDenied("Your home folder cannot be removed.")
        self._require("delete", virtual(parts))
        found = await self._lookup(parts)
        if found is None:
            raise NotFound(f"No such folder: {virtual(parts)}")
        if found[0] != "dir":
            raise Invalid(f"{virtual(parts)} is not a folder.")

    async def _removed_folder(self, parts: list[str]) -> None:
        await self._kept(parts[:-1])
        await self._changed(
            "delete", virtual(parts), f"{self._who} removed the folder {clean(virtual(parts))} over {self._over}"
        )

    async def rmdir(self, path: str) -> None:
        parts = split_path(path)
        await self._folder(parts)
        await self._remove_empty_folder(parts)
        await self._removed_folder(parts)

    async def remove_tree(self, path: str) -> None:
        parts = split_path(path)
        await self._folder(parts)
        await self._remove_all(parts)
        self._service._quotas.forget(self.tree.root)
        await self._removed_folder(parts)

    async def remove(self, path: str) -> None:
        parts = split_path(path)
        if not parts:
            raise PermissionDenied("Your home folder cannot be removed.")
        where = virtual(parts)
        self._require("delete", where)
        await self.own.settled(parts)
        dropped = self.own.orphan(parts)  # this session's upload there saves nothing now
        found = await self._lookup(parts)
        if found is None:
            if dropped is not None:
                return  # it was only an upload in progress: nobody else ever saw it
            raise NotFound(f"No such file: {where}")
        if found[0] == "dir":
            raise Invalid(f"{where} is a folder: remove it as a folder.")
        await self._delete_file(parts)
        if found[0] == "file":
            self.limits.removed(found[1])
        await self._kept(parts[:-1])
        await self._changed("delete", where, f"{self._who} deleted {clean(where)} over {self._over}")

    async def rename(self, source: str, target: str, overwrite: bool = False) -> None:
        src, dst = split_path(source), split_path(target)
        if not src or not dst:
            raise PermissionDenied("Your home folder cannot be renamed.")
        self._require("rename", virtual(src))
        await self.own.settled(src, dst)
        if self.own.under(src) or self.own.get(dst) is not None:
            raise Unavailable(
                f"{virtual(src)} (or a file in it) is still being uploaded to a remote source: it cannot be "
                "renamed before it is closed (only files on the appliance's own disk can). Close it first."
            )
        if src == dst and self.rename_onto_itself_does_nothing:
            return
        found = await self._lookup(src)
        if found is None:
            raise NotFound(f"No such file or folder: {virtual(src)}")
        existing = await self._rename_target(dst)
        if existing is not None:
            if not overwrite or not self._may_replace(found, existing):
                raise AlreadyExists(f"{virtual(dst)} already exists.")
            if "overwrite" not in self.account.profile.permissions:
                raise PermissionDenied(f"You may not overwrite files ({virtual(dst)}).")
        await self._move(src, dst, found, existing)
        if existing is not None and existing[0] == "file" and src != dst:  # onto itself: nothing goes
            self.limits.removed(existing[1])
        await self._kept(src[:-1])
        await self._changed(
            "rename",
            virtual(src),
            f"{self._who} renamed {clean(virtual(src))} to {clean(virtual(dst))} over {self._over}",
        )
