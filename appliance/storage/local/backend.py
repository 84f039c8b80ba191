"""A profile's home on the appliance's own disk: the storage backend of local sources.

Every walk is confined by tree.Tree (directory descriptors, no escape); all disk
work runs on the work pool. Uploads go to a temporary file beside their target
(handles.Writer) and are renamed into place by their commit. Downloads and
uploads have the socket fast path (sendfile/splice, socket_send.py).
"""

from __future__ import annotations

import os
import secrets
import shutil
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...errors import AlreadyExists, Invalid, NotFound, Unavailable
from ...models import Source
from ...threads import Threads
from ..interface import Budget, Committed, Finished, Found, Shape, SpaceInfo
from ..paths import TEMP_PREFIX, Entry, entry_from_stat, virtual
from .handles import ReadAhead, Reader, Writer
from .partials import LocalPartials, find_partials, remove_partial_under
from .socket_send import memory_check
from .tree import DIR_MODE, FILE_MODE, Location, Tree, os_error, sweep_uploads

SMALL_FILE = 64 << 10  # a file up to this size is read whole when it is opened for a download


def _copy_into(src_fd: int, dst_fd: int) -> int:
    """Copy a whole file between descriptors in the kernel; return its size."""
    size = os.fstat(src_fd).st_size
    offset = 0
    while offset < size:
        try:
            copied = os.copy_file_range(src_fd, dst_fd, size - offset, offset, offset)
        except OSError:
            copied = 0
        if copied == 0:  # not supported across these files: plain copy
            chunk = os.pread(src_fd, 1 << 20, offset)
            if not chunk:
                break
            copied = os.pwrite(dst_fd, chunk, offset)
        offset += copied
    return offset


def _found(st: os.stat_result | None) -> Found | None:
    if st is None:
        return None
    kind = "dir" if stat.S_ISDIR(st.st_mode) else "file" if stat.S_ISREG(st.st_mode) else "other"
    return kind, st.st_size


class LocalSources:
    """The local sources: where each one's folder is, its homes, its start-up sweep."""

    # which folder an organisation may use depends on the folders of the others' sources
    # (core/local_folders.py LocalFolders): its config check is the core's (source_admin.py)
    config = None

    def __init__(self, threads: Threads, data_dir: Path):
        self._threads = threads
        self._data_dir = Path(data_dir)
        self.read_ahead = ReadAhead()  # shared by every open local download

    def root(self, source: Source) -> Path:
        """The folder of a local source (relative paths are inside the data dir)."""
        path = Path(source.config.get("path", ""))
        return path if path.is_absolute() else self._data_dir / path

    async def open(self, source: Source, home_parts: list[str]) -> LocalStorage:
        """The profile's home (made on first use)."""
        home = await self._threads.work(self._prepare_home, self.root(source), home_parts, source)
        return LocalStorage(self._threads, Tree(home), self.read_ahead)

    @staticmethod
    def _prepare_home(root: Path, home_parts: list[str], source: Source) -> str:
        if not root.is_dir():
            raise Unavailable(f"The source {source.name!r} is not reachable: its folder does not exist.")
        home = root.joinpath(*home_parts)
        if not home.is_dir():
            if source.read_only:
                raise Unavailable("Your home folder does not exist on a read-only source.")
            try:
                home.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
            except OSError as e:
                raise os_error(e, "/") from None
        return str(home)

    async def remove_partial(self, source: Source, home_parts: list[str], parts: list[str], name: str) -> None:
        """Remove a resumable upload's partial file from a home without opening it (the home may be gone)."""
        home = self.root(source).joinpath(*home_parts)
        await self._threads.work(remove_partial_under, str(home), parts, name)

    async def find_partials(self, source: Source) -> list[str]:
        """The paths of the resumable uploads' partial files under the source's folder."""
        return await self._threads.work(find_partials, str(self.root(source)))

    async def sweep(self, source: Source, now: float | None = None) -> int:
        """Remove temporary files of uploads cut short by a crash (at start-up)."""
        root = self.root(source)
        if not root.is_dir():
            return 0
        return await self._threads.work(sweep_uploads, str(root))


class LocalStorage:
    """One home folder on the local disk (see interface.Backend)."""

    remote = False
    resizes = True
    modes = True
    renames_open_uploads = True
    rename_onto_itself_does_nothing = False
    begins_uploads_blind = True
    lists_names = True

    def __init__(self, threads: Threads, tree: Tree, read_ahead: ReadAhead):
        self._threads = threads
        self.tree = tree
        self.root = tree.root
        self._read_ahead = read_ahead
        self.partials = LocalPartials(threads, tree)

    # -- reading ------------------------------------------------------------------

    async def stat(self, parts: list[str], follow: bool) -> Entry:
        return await self._threads.work(self.tree.stat, parts, follow)

    async def list(self, parts: list[str]) -> list[Entry]:
        return await self._threads.work(self.tree.list, parts)

    async def list_names(self, parts: list[str]) -> list[tuple[str, bool]]:
        return await self._threads.work(self.tree.names, parts)

    async def list_sorted_names(self, parts: list[str]) -> Sequence[str]:
        return await self._threads.work(self.tree.sorted_names, parts)

    async def list_entries(self, parts: list[str], names: Sequence[str], shape: Shape | None = None) -> Any:
        if shape is None:
            return await self._threads.work(self.tree.entries, parts, names)
        return await self._threads.work(lambda: shape(self.tree.entries(parts, names)))

    async def lookup(self, parts: list[str]) -> Found | None:
        return _found(await self._threads.work(self._lstat, parts))

    def _lstat(self, parts: list[str]) -> os.stat_result | None:
        with self.tree.locate(parts, follow=False) as location:
            return location.lstat()

    async def check_file(self, parts: list[str]) -> None:
        entry = await self.stat(parts, False)
        if entry.kind != "file":
            raise Invalid(
                f"{virtual(parts)} is a folder, not a file." if entry.is_dir else f"{virtual(parts)} is not a file."
            )

    async def open_reader(self, parts: list[str], where: str, finished: Finished) -> Reader:
        fd, real_path, st, check, whole = await self._threads.work(self._open_read, parts)
        reader = Reader(self._threads, fd, real_path, st.st_size, finished, self._read_ahead, check, whole)
        reader.entry = entry_from_stat(parts[-1], st)
        reader.mtime = st.st_mtime
        return reader

    def _open_read(self, parts: list[str]) -> tuple[int, str, os.stat_result, str | None, bytes | None]:
        """The open file, its path, its stat, how a socket send learns which of its
        pages are in memory (socket_send.memory_check, asked here, off the reactor),
        and a small file's bytes, read in the same trip (its READs then need none)."""
        with self.tree.locate(parts) as location:
            if location.name is None:
                raise Invalid("/ is a folder.")
            try:
                fd = os.open(location.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=location.dir_fd)
            except OSError as e:
                raise os_error(e, location.path) from None
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                os.close(fd)
                raise Invalid(f"{location.path} is a folder, not a file.")
            whole = None
            if st.st_size <= SMALL_FILE:
                try:
                    whole = os.pread(fd, SMALL_FILE + 1, 0)
                except OSError as e:
                    os.close(fd)
                    raise os_error(e, location.path) from None
                if len(whole) > SMALL_FILE:
                    whole = None  # it grew since the fstat: read as a big one
            return fd, location.path, st, memory_check(fd, st.st_dev), whole

    # -- writing --------------------------------------------------------------------

    async def upload_target(self, parts: list[str]) -> Found | None:
        return _found(await self._threads.work(self._target_stat, parts))

    def _target_stat(self, parts: list[str]) -> os.stat_result | None:
        with self.tree.locate(parts) as location:
            return location.lstat()

    async def begin_upload(
        self,
        parts: list[str],
        replaced: int | None,
        truncate: bool,
        exclusive: bool,
        budget: Budget,
        committed: Committed,
        uploads: set,
    ) -> Writer:
        location, temp_name, fd, start = await self._threads.work(
            self._locate_and_create_temp, parts, replaced is not None and not truncate
        )
        return self._writer(location, temp_name, fd, start, replaced, exclusive, budget, committed, uploads)

    def _writer(
        self,
        location: Location,
        temp_name: str,
        fd: int,
        start: int,
        replaced: int | None,
        exclusive: bool,
        budget: Budget,
        committed: Committed,
        uploads: set,
    ) -> Writer:
        # a copy's bytes (`start`) are counted by the files service
        return Writer(
            self._threads, location, temp_name, fd, start, budget, replaced, committed, uploads, no_replace=exclusive
        )

    async def begin_upload_blind(
        self, parts: list[str], truncate: bool, exclusive: bool, budget: Budget, committed: Committed, uploads: set
    ) -> tuple[Found | None, Writer]:
        """`upload_target` and `begin_upload` in one trip to the disk thread: what stands
        at the name, and an upload to it (the caller checks the rules on the first, and
        aborts the second when they refuse)."""
        found, location, temp_name, fd, start = await self._threads.work(self._look_and_create_temp, parts, truncate)
        replaced = found[1] if found is not None else None
        return found, self._writer(location, temp_name, fd, start, replaced, exclusive, budget, committed, uploads)

    def _look_and_create_temp(self, parts: list[str], truncate: bool) -> tuple[Found | None, Location, str, int, int]:
        location = self.tree.locate(parts)
        try:
            found = _found(location.lstat())
            copy = found is not None and found[0] != "dir" and not truncate
            return (found, location, *self._create_temp(location, copy))
        except BaseException:
            location.close()
            raise

    def _locate_and_create_temp(self, parts: list[str], copy_existing: bool) -> tuple[Location, str, int, int]:
        """The upload's folder and its temporary file there, in one trip to the disk thread."""
        location = self.tree.locate(parts)
        try:
            return (location, *self._create_temp(location, copy_existing))
        except BaseException:
            location.close()
            raise

    def _create_temp(self, location: Location, copy_existing: bool) -> tuple[str, int, int]:
        temp_name = TEMP_PREFIX + secrets.token_hex(8)
        try:
            fd = os.open(
                temp_name,
                os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                FILE_MODE,
                dir_fd=location.dir_fd,
            )
        except OSError as e:
            raise os_error(e, location.path) from None
        start = 0
        if copy_existing:
            try:
                src = os.open(location.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=location.dir_fd)
                try:
                    start = _copy_into(src, fd)
                finally:
                    os.close(src)
            except OSError as e:
                os.close(fd)
                os.unlink(temp_name, dir_fd=location.dir_fd)
                raise os_error(e, location.path) from None
        return temp_name, fd, start

    # -- changes --------------------------------------------------------------------

    async def make_folders(self, parts: list[str], parents: bool) -> bool:
        return await self._threads.work(self._mkdir, parts, parents)

    def _mkdir(self, parts: list[str], parents: bool) -> bool:
        made = False
        for depth in range(1, len(parts) + 1) if parents else [len(parts)]:
            with self.tree.locate(parts[:depth]) as location:
                try:
                    os.mkdir(location.name, DIR_MODE, dir_fd=location.dir_fd)
                    made = True
                except FileExistsError:
                    st = location.lstat()
                    if not parents:
                        raise AlreadyExists(f"A file or folder named {location.path} already exists.") from None
                    if st is None or not stat.S_ISDIR(st.st_mode):
                        raise Invalid(f"{location.path} is a file, not a folder.") from None
                except OSError as e:
                    raise os_error(e, location.path) from None
        return made

    async def remove_empty_folder(self, parts: list[str]) -> None:
        await self._threads.work(self._remove_folder, parts, lambda name, dir_fd: os.rmdir(name, dir_fd=dir_fd))

    async def remove_all(self, parts: list[str]) -> None:
        await self._threads.work(self._remove_folder, parts, lambda name, dir_fd: shutil.rmtree(name, dir_fd=dir_fd))

    def _remove_folder(self, parts: list[str], remove) -> None:
        with self.tree.locate(parts, follow=False) as location:
            st = location.lstat()
            if st is None:
                raise NotFound(f"No such folder: {location.path}")
            if not stat.S_ISDIR(st.st_mode):
                raise Invalid(f"{location.path} is not a folder.")
            try:
                remove(location.name, location.dir_fd)
            except OSError as e:
                raise os_error(e, location.path) from None

    async def delete_file(self, parts: list[str], found: Found) -> int | None:
        """Delete a file or a link (never what it points to); the bytes it held."""
        return await self._threads.work(self._remove, parts)

    def _remove(self, parts: list[str]) -> int:
        with self.tree.locate(parts, follow=False) as location:
            st = location.lstat()
            if st is None:
                raise NotFound(f"No such file: {location.path}")
            if stat.S_ISDIR(st.st_mode):
                raise Invalid(f"{location.path} is a folder: remove it as a folder.")
            try:
                os.unlink(location.name, dir_fd=location.dir_fd)
            except OSError as e:
                raise os_error(e, location.path) from None
            return st.st_size if stat.S_ISREG(st.st_mode) else 0

    async def rename_target(self, parts: list[str]) -> Found | None:
        return await self.lookup(parts)

    def may_replace(self, found: Found, existing: Found) -> bool:
        return True

    async def move(self, src: list[str], dst: list[str], found: Found, existing: Found | None) -> int | None:
        """Rename; the bytes of the file it replaced (None: none, or itself under another name)."""
        return await self._threads.work(self._rename, src, dst, existing is not None)

    def _rename(self, src: list[str], dst: list[str], replace: bool) -> int | None:
        with self.tree.locate(src, follow=False) as old, self.tree.locate(dst, follow=False) as new:
            moved = old.lstat()
            if moved is None:
                raise NotFound(f"No such file or folder: {old.path}")
            existing = new.lstat()
            replaced = None
            if existing is not None:
                if not replace:  # made since it was looked up
                    raise AlreadyExists(f"{new.path} already exists.")
                if stat.S_ISREG(existing.st_mode) and not os.path.samestat(moved, existing):
                    replaced = existing.st_size  # (onto itself, or another link of it: nothing goes)
            try:
                os.rename(old.name, new.name, src_dir_fd=old.dir_fd, dst_dir_fd=new.dir_fd)
            except OSError as e:
                raise os_error(e, new.path) from None
            return replaced

    async def move_upload(self, upload: Writer, src: list[str], dst: list[str]) -> tuple[int | None, int | None]:
        """Move what `src` holds on the disk (if anything) to `dst`, and the upload's
        commit with it; returns the size moved (None: nothing) and the size of the
        file it replaced (None: none)."""
        moved, existing, location = await self._threads.work(self._move_upload_on_disk, src, dst)
        await upload.move_to(location)
        return moved, existing

    def _move_upload_on_disk(self, src: list[str], dst: list[str]) -> tuple[int | None, int | None, Location]:
        with self.tree.locate(src, follow=False) as old:
            new = self.tree.locate(dst, follow=False)
            try:
                moved = old.lstat()
                existing = new.lstat()
                if existing is not None and stat.S_ISDIR(existing.st_mode):
                    raise Invalid(f"{new.path} is a folder.")
                if moved is not None:
                    try:
                        os.rename(old.name, new.name, src_dir_fd=old.dir_fd, dst_dir_fd=new.dir_fd)
                    except OSError as e:
                        raise os_error(e, new.path) from None
                replaced = None
                if existing is not None and not (moved is not None and os.path.samestat(moved, existing)):
                    replaced = existing.st_size
                return (moved.st_size if moved is not None else None), replaced, new
            except BaseException:
                new.close()
                raise

    async def kept(self, parts: list[str]) -> None:
        """Nothing to do: a folder on a disk stays when its last file goes."""

    async def set_times(self, parts: list[str], atime: float, mtime: float) -> None:
        await self._threads.work(self._set_times, parts, atime, mtime)

    def _set_times(self, parts: list[str], atime: float, mtime: float) -> None:
        with self.tree.locate(parts) as location:
            try:
                if location.name is None:
                    os.utime(location.dir_fd, (atime, mtime))
                else:
                    os.utime(location.name, (atime, mtime), dir_fd=location.dir_fd, follow_symlinks=False)
            except OSError as e:
                raise os_error(e, location.path) from None

    async def set_mode(self, parts: list[str], mode: int) -> None:
        await self._threads.work(self._set_mode, parts, mode)

    def _set_mode(self, parts: list[str], mode: int) -> None:
        with self.tree.locate(parts) as location:
            try:
                if location.name is None:
                    os.fchmod(location.dir_fd, mode)
                    return
                fd = os.open(location.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=location.dir_fd)
                try:
                    os.fchmod(fd, mode)  # through a descriptor: a link is never followed
                finally:
                    os.close(fd)
            except OSError as e:
                raise os_error(e, location.path) from None

    # -- space ----------------------------------------------------------------------

    async def space(self) -> SpaceInfo:
        st = await self._threads.work(os.statvfs, self.tree.root)
        return SpaceInfo(st.f_frsize or 4096, st.f_blocks, st.f_bavail, st.f_files, st.f_favail)

    async def usage(self) -> tuple[int, int]:
        return await self._threads.work(self.tree.usage)
