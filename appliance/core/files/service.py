"""The files service: one profile's view of its source, the same for every protocol.

A FileSession is what SFTP, FTP, HTTP and mailboxes call. It confines every path
to the profile's home (see tree.py), checks the profile's permissions and quota,
uploads through temporary files (handles.py), and writes one audit row per
transfer and change. Nothing here runs disk work on the reactor.
"""

from __future__ import annotations

import os
import secrets
import shutil
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from twisted.internet import defer, task
from twisted.logger import Logger

from ...errors import AlreadyExists, ApplianceError, Invalid, NotFound, PermissionDenied, Unavailable
from ...models import Source
from ...threads import Threads
from ..audit import PROTOCOL_NAMES, AuditLog, clean
from ..auth import Account
from .handles import ReadAhead, Reader, UploadReader, Writer
from .own import OwnUploads
from .quota import Limits, QuotaTracker
from .socket_send import memory_check
from .tree import TEMP_PREFIX, Entry, Location, Tree, os_error, split_path, sweep_uploads, virtual

log = Logger()

FILE_MODE = 0o640
DIR_MODE = 0o750


@dataclass(frozen=True)
class SpaceInfo:
    """What statvfs reports: the quota when there is one, else the disk."""

    block_size: int
    total_blocks: int
    free_blocks: int
    total_files: int
    free_files: int


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


class FilesService:
    def __init__(self, threads: Threads, audit: AuditLog, quotas: QuotaTracker, data_dir: Path, remote=None, s3=None):
        self._threads = threads
        self.remote = remote  # RemoteSources: the pools of remote SFTP sources (None: not available)
        self.s3 = s3  # S3Sources: the clients of S3 sources (None: not available)
        self._audit = audit
        self._quotas = quotas
        self._data_dir = Path(data_dir)
        self.uploads: set[Writer] = set()  # in progress, for draining at shutdown
        self.read_ahead = ReadAhead()  # shared by every open local download

    async def drain(self, clock, grace: float) -> int:
        """Wait up to `grace` seconds for uploads in progress, then abort the rest
        (their temporary files are removed). Returns how many were aborted."""
        waited = 0.0
        while self.uploads and waited < grace:
            await task.deferLater(clock, 0.2, lambda: None)
            waited += 0.2
        unfinished = list(self.uploads)
        for writer in unfinished:
            await writer.abort("The server is shutting down: this upload was not saved. Send it again later.")
        if unfinished:
            log.warn("shutdown aborted {count} unfinished uploads", count=len(unfinished))
        return len(unfinished)

    def source_root(self, source: Source) -> Path:
        """The folder of a local source (relative paths are inside the data dir)."""
        path = Path(source.config.get("path", ""))
        return path if path.is_absolute() else self._data_dir / path

    async def session(self, account: Account, protocol: str, address: str, share: str | None = None) -> FileSession:
        """Open the profile's home (creating it on first use) for one connection
        (`share`: an anonymous visitor's, through this share link of the profile)."""
        source = account.source
        if source is None:
            raise PermissionDenied("No source is assigned to your account. Ask your administrator to assign one.")
        if source.type == "sftp" and self.remote is not None:
            return await self._remote_session(account, protocol, address, share)
        if source.type == "s3" and self.s3 is not None:
            return await self._s3_session(account, protocol, address, share)
        if source.type != "local":
            raise Unavailable(f"The source {source.name!r} is of type {source.type}, which is not available yet.")
        home_parts = split_path(account.profile.home)
        root = self.source_root(source)
        home = await self._threads.work(self._prepare_home, root, home_parts, source)
        tree = Tree(home)
        profile = account.profile
        usage = None
        if profile.quota_bytes is not None or profile.quota_files is not None:
            usage = await self._quotas.usage(tree)
        limits = Limits(usage, profile.quota_bytes, profile.quota_files)
        return FileSession(self, account, tree, limits, protocol, address, share)

    async def _remote_session(self, account: Account, protocol: str, address: str, share: str | None):
        from .remote_session import RemoteFileSession  # it builds on FileSession, below
        from .remote_sftp import DIR_MODE as REMOTE_DIR_MODE
        from .remote_sftp import RemoteTree, _encode

        source = account.source
        home_parts = split_path(account.profile.home)
        pool = self.remote.pool(source)
        tree = RemoteTree(pool, home_parts)
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
                    {"permissions": REMOTE_DIR_MODE},
                )
            except ApplianceError:
                # another first session of this profile (the console lists and uploads at once) made it
                if await home.attrs(home_parts[:depth]) is None:
                    raise
        profile = account.profile
        usage = None
        if profile.quota_bytes is not None or profile.quota_files is not None:
            usage = await self._quotas.remote_usage(tree.root, tree.usage)
        limits = Limits(usage, profile.quota_bytes, profile.quota_files)
        return RemoteFileSession(self, account, tree, limits, protocol, address, share)

    async def _s3_session(self, account: Account, protocol: str, address: str, share: str | None):
        from .remote_s3 import S3Tree
        from .s3_session import S3FileSession  # it builds on FileSession, below

        tree = S3Tree(self.s3.client(account.source), split_path(account.profile.home))
        profile = account.profile
        usage = None
        if profile.quota_bytes is not None or profile.quota_files is not None:
            usage = await self._quotas.remote_usage(tree.root, tree.usage)
        limits = Limits(usage, profile.quota_bytes, profile.quota_files)
        return S3FileSession(self, account, tree, limits, protocol, address, share)

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

    async def sweep(self, sources: list[Source]) -> int:
        """Remove temporary files of uploads cut short by a crash (at start-up)."""
        removed = 0
        for source in sources:
            if source.type == "local":
                root = self.source_root(source)
                if root.is_dir():
                    removed += await self._threads.work(sweep_uploads, str(root))
            elif source.type == "s3" and self.s3 is not None:
                try:
                    removed += await self.s3.sweep(source, time.time())
                except ApplianceError as e:
                    log.warn("could not look for unfinished uploads in {source}: {error}", source=source.name, error=e)
        if self.remote is not None:  # remote SFTP servers side by side: a slow or down one holds up no other
            remote = [s for s in sources if s.type == "sftp"]
            counts = await defer.gatherResults([defer.Deferred.fromCoroutine(self._sweep_remote(s)) for s in remote])
            removed += sum(counts)
        if removed:
            log.info("removed {count} unfinished uploads left by an earlier stop", count=removed)
        return removed

    async def _sweep_remote(self, source: Source) -> int:
        """One remote SFTP source's sweep; a failure is logged, never raised (start-up goes on)."""
        try:
            return await self.remote.sweep(source, time.time())
        except ApplianceError as e:
            log.warn("could not look for unfinished uploads in {source}: {error}", source=source.name, error=e)
        except Exception:  # noqa: BLE001 - a bug here must not stop the other sources' sweeps
            log.failure("looking for unfinished uploads in {source} failed", source=source.name)
        return 0


class FileSession:
    """A signed-in profile's files for one connection of one protocol."""

    remote = False  # True for a RemoteFileSession (a remote SFTP source)
    resizes = True  # a stored file can be truncated or extended in place of a rewrite (local disk)

    def __init__(
        self,
        service: FilesService,
        account: Account,
        tree: Tree,
        limits: Limits,
        protocol: str,
        address: str,
        share: str | None = None,
    ):
        self._service = service
        self._threads = service._threads
        self._audit = service._audit
        self.account = account
        self.tree = tree
        self.limits = limits
        self.protocol = protocol
        self.address = address
        self.share = share  # transfers are logged as an anonymous visitor's through this share
        self._read_only = account.source.read_only if account.source else True
        self.own = OwnUploads()  # this session's uploads in progress, which it alone sees

    def refresh(self, account: Account) -> None:
        """Take the profile's new settings (read again after an admin's change; same
        source and home): its permissions, quota figures and the source's read-only
        flag hold from the next call. core/open_sessions.py ends sessions that cannot."""
        self.account = account
        self._read_only = account.source.read_only if account.source else True
        self.limits.quota_bytes = account.profile.quota_bytes
        self.limits.quota_files = account.profile.quota_files

    # -- rules ------------------------------------------------------------------

    def _require(self, permission: str, path: str) -> None:
        if permission not in self.account.profile.permissions:
            what = {
                "list": "list folders",
                "download": "download files",
                "upload": "upload files",
                "overwrite": "overwrite files",
                "delete": "delete files or folders",
                "rename": "rename files or folders",
                "mkdir": "create folders",
            }[permission]
            raise PermissionDenied(f"You may not {what} ({path}). Ask your administrator for access.")
        if permission not in ("list", "download") and self._read_only:
            raise PermissionDenied(f"The source is read-only: {path} cannot be changed.")

    async def _changed(self, action: str, path: str, message: str) -> None:
        await self._audit.change(self.account, self.protocol, self.address, action, path, message)

    @property
    def _who(self) -> str:
        return clean(self.account.profile.username)

    @property
    def _over(self) -> str:
        return PROTOCOL_NAMES.get(self.protocol, self.protocol)

    def _download_logger(self, path: str):
        """What a reader calls when it closes: one audit row for the download of `path`."""

        async def finished(sent: int, size: int) -> None:
            await self._audit.transfer(
                self.account, self.protocol, self.address, "download", path, sent, self.share, of=size
            )

        return finished

    # -- reading ------------------------------------------------------------------

    def normalise(self, path: str) -> str:
        """The canonical virtual path (realpath for clients); refuses escapes."""
        return virtual(split_path(path))

    async def stat(self, path: str, follow: bool = True) -> Entry:
        """What is at `path`; this session's own upload in progress there shows as it
        is so far (others see the old file or nothing)."""
        parts = split_path(path)
        await self.own.settled(parts)
        writer = self.own.get(parts)
        if writer is not None:
            return self.own.entry(parts, writer)
        return await self._stat(parts, follow)

    async def _stat(self, parts: list[str], follow: bool) -> Entry:
        return await self._threads.work(self.tree.stat, parts, follow)

    async def list(self, path: str) -> list[Entry]:
        parts = split_path(path)
        self._require("list", virtual(parts))
        entries = {entry.name: entry for entry in await self._list(parts)}
        for entry in self.own.in_folder(parts):  # this session's uploads in progress, as stat shows them
            entries[entry.name] = entry
        return list(entries.values())

    async def _list(self, parts: list[str]) -> list[Entry]:
        return await self._threads.work(self.tree.list, parts)

    async def open_read(self, path: str):
        """A reader of the file at `path`; of this session's own upload in progress
        there, what it holds so far (and more as it is written; no download is logged)."""
        parts = split_path(path)
        self._require("download", virtual(parts))
        await self.own.settled(parts)
        writer = self.own.get(parts)
        if writer is not None:
            return UploadReader(self._threads, writer, await writer.open_copy())
        return await self._open_reader_at(parts)

    async def _open_reader_at(self, parts: list[str]) -> Reader:
        fd, real_path, size, check = await self._threads.work(self._open_read, parts)
        return Reader(
            self._threads, fd, real_path, size, self._download_logger(real_path), self._service.read_ahead, check
        )

    async def check_download(self, path: str) -> str:
        """That `path` is a file this profile may download now, as `open_read` would
        find it (nothing is read or logged); its normalised path."""
        parts = split_path(path)
        self._require("download", virtual(parts))
        if not parts:
            raise Invalid("/ is a folder.")
        await self._check_file(parts)
        return virtual(parts)

    async def _check_file(self, parts: list[str]) -> None:
        """Refuse anything at `parts` but a file (a download does not follow a last link)."""
        entry = await self.stat(virtual(parts), follow=False)
        if entry.kind != "file":
            raise Invalid(
                f"{virtual(parts)} is a folder, not a file." if entry.is_dir else f"{virtual(parts)} is not a file."
            )

    def _open_read(self, parts: list[str]) -> tuple[int, str, int, str | None]:
        """The open file, its path, size, and how a socket send learns which of its
        pages are in memory (socket_send.memory_check, asked here, off the reactor)."""
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
            return fd, location.path, st.st_size, memory_check(fd, st.st_dev)

    # -- writing --------------------------------------------------------------------

    async def open_write(
        self,
        path: str,
        *,
        truncate: bool = True,
        exclusive: bool = False,
        create: bool = True,
        readable: bool = False,
    ) -> Writer:
        """Start an upload. Without `truncate`, the upload starts as a copy of the
        existing file (resume, append, read-write opens, writes at offsets): a
        private copy, committed atomically when closed. Without `create`, a missing
        file is refused; `readable` (a read-write open) needs the download permission.
        This session's own upload in progress at `path` is shared (the last close
        commits it), as a second open of one file on a disk."""
        parts = split_path(path)
        if not parts:
            raise Invalid("/ is a folder.")
        if readable:
            self._require("download", virtual(parts))
        await self.own.settled(parts)
        writer = self.own.get(parts)
        if writer is not None:
            if exclusive:
                raise AlreadyExists(f"{virtual(parts)} already exists.")
            if truncate:
                await writer.truncate(0)
            writer.handles += 1
            return writer
        release = self.own.hold(parts)  # before anything waits: a STAT right behind this OPEN waits for it
        try:
            writer = await self._start_write(parts, truncate, exclusive, create)
            self.own.add(parts, writer)
        finally:
            release()
        return writer

    async def _start_write(self, parts: list[str], truncate: bool, exclusive: bool, create: bool) -> Writer:
        location = await self._threads.work(self.tree.locate, parts)
        try:
            st = await self._threads.work(location.lstat)
            if st is None and not create:
                raise NotFound(f"No such file: {location.path}")
            if st is not None:
                if exclusive:
                    raise AlreadyExists(f"{location.path} already exists.")
                if stat.S_ISDIR(st.st_mode):
                    raise Invalid(f"{location.path} is a folder.")
                self._require("overwrite", location.path)
            else:
                self._require("upload", location.path)
                self.limits.check_new_file()
            temp_name, fd, start = await self._threads.work(
                self._create_temp, location, st is not None and not truncate
            )
        except BaseException:
            location.close()
            raise
        replaced = st.st_size if st is not None else None
        writer = Writer(
            self._threads,
            location,
            temp_name,
            fd,
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

    async def check_upload(
        self, path: str, *, overwrite: bool, size: int | None = None, reserved: int = 0
    ) -> int | None:
        """May an upload to `path` go ahead now: the upload (or overwrite) permission, no
        overwrite unless asked, and with `size` the quota, counting `reserved` bytes of
        other uploads in progress. Returns the size of the file it would replace, None
        for a new one. (Resumable uploads ask at creation and again at completion.)"""
        parts = split_path(path)
        if not parts:
            raise Invalid("/ is a folder.")
        replaced = await self._replaced_size(parts)
        if replaced is not None:
            if not overwrite:
                raise AlreadyExists(f"{virtual(parts)} already exists.")
            self._require("overwrite", virtual(parts))
        else:
            self._require("upload", virtual(parts))
            if size is not None:
                self.limits.check_new_file()
        if size is not None:  # a check only: the bytes are not pending in this session
            self.limits.grow(size + reserved, replaced or 0)
            self.limits.release(size + reserved)
        return replaced

    async def check_receive(self, folder: str, size: int | None, *, overwrite: bool = False) -> int | None:
        """May files of `size` bytes in all (None: not known yet) be uploaded into
        `folder` now: the upload permission (or overwrite, when asked and that is all
        the profile has), a writable source and room in the quota. Asked before a
        request body is read, so nothing arrives that could not be kept. Returns the
        bytes the quota still has room for (None: no byte quota)."""
        folder = self.normalise(folder)
        permissions = self.account.profile.permissions
        self._require("overwrite" if overwrite and "upload" not in permissions else "upload", folder)
        if not overwrite:
            self.limits.check_new_file()
        if size is not None:  # a check only, as in check_upload: nothing is pending yet
            self.limits.grow(size, 0)
            self.limits.release(size)
        return self.limits.room(0)

    async def _replaced_size(self, parts: list[str]) -> int | None:
        """The size of the file an upload to `parts` would replace (None: nothing there);
        a folder there is refused. Each kind of source finds it its own way."""
        st = await self._threads.work(self._target_stat, parts)
        if st is None:
            return None
        if stat.S_ISDIR(st.st_mode):
            raise Invalid(f"{virtual(parts)} is a folder.")
        return st.st_size

    def _target_stat(self, parts: list[str]) -> os.stat_result | None:
        with self.tree.locate(parts) as location:
            return location.lstat()

    async def _uploaded(self, writer: Writer) -> None:
        await self._audit.transfer(
            self.account, self.protocol, self.address, "upload", writer.path, writer.size, self.share
        )

    # -- changes --------------------------------------------------------------------

    async def mkdir(self, path: str, parents: bool = False) -> str:
        parts = split_path(path)
        if not parts:
            raise AlreadyExists("/ already exists.")
        self._require("mkdir", virtual(parts))
        if await self._make_folders(parts, parents):
            await self._changed(
                "mkdir", virtual(parts), f"{self._who} created the folder {clean(virtual(parts))} over {self._over}"
            )
        return virtual(parts)

    async def _make_folders(self, parts: list[str], parents: bool) -> bool:
        """Make the folder (with `parents`, the missing ones above it); whether any was made."""
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

    async def rmdir(self, path: str) -> None:
        """Remove an empty folder."""
        await self._remove_folder(path, lambda name, dir_fd: os.rmdir(name, dir_fd=dir_fd))

    async def _remove_folder(self, path: str, remove) -> None:
        parts = split_path(path)
        if not parts:
            raise PermissionDenied("Your home folder cannot be removed.")
        self._require("delete", virtual(parts))
        await self._threads.work(self._remove_folder_on_disk, parts, remove)
        await self._changed(
            "delete", virtual(parts), f"{self._who} removed the folder {clean(virtual(parts))} over {self._over}"
        )

    def _remove_folder_on_disk(self, parts: list[str], remove) -> None:
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

    async def remove(self, path: str) -> None:
        """Delete a file (or a link: never what it points to)."""
        parts = split_path(path)
        if not parts:
            raise PermissionDenied("Your home folder cannot be removed.")
        self._require("delete", virtual(parts))
        await self.own.settled(parts)
        dropped = self.own.orphan(parts)  # this session's upload there saves nothing now
        try:
            size = await self._threads.work(self._remove, parts)
        except NotFound:
            if dropped is not None:
                return  # it was only an upload in progress: nobody else ever saw it
            raise
        self.limits.removed(size)
        await self._changed("delete", virtual(parts), f"{self._who} deleted {clean(virtual(parts))} over {self._over}")

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

    async def remove_tree(self, path: str) -> None:
        """Delete a folder and everything in it (the web console's delete)."""
        await self._remove_folder(path, lambda name, dir_fd: shutil.rmtree(name, dir_fd=dir_fd))
        self._service._quotas.forget(self.tree.root)

    async def rename(self, source: str, target: str, overwrite: bool = False) -> None:
        src, dst = split_path(source), split_path(target)
        if not src or not dst:
            raise PermissionDenied("Your home folder cannot be renamed.")
        self._require("rename", virtual(src))
        await self.own.settled(src, dst)
        if src != dst and self.own.get(dst) is not None and not overwrite:
            raise AlreadyExists(f"{virtual(dst)} already exists.")
        writer = self.own.get(src)
        if writer is not None and src != dst:
            await self._rename_upload(writer, src, dst, overwrite)
        else:
            replaced = await self._threads.work(self._rename, src, dst, overwrite)
            if replaced is not None:
                self.limits.removed(replaced)
            if src != dst:
                self.own.orphan(dst)
                self.own.moved(src, dst)  # a folder: the uploads inside it follow
        await self._changed(
            "rename",
            virtual(src),
            f"{self._who} renamed {clean(virtual(src))} to {clean(virtual(dst))} over {self._over}",
        )

    async def _rename_upload(self, writer: Writer, src: list[str], dst: list[str], overwrite: bool) -> None:
        """Rename this session's own upload in progress (an editor or sshfs renames a
        file before its CLOSE arrives): what stands at `src` on the disk, if anything,
        moves as any rename would, and the upload will be committed at `dst`."""
        if "overwrite" not in self.account.profile.permissions and self.own.get(dst) is not None:
            raise PermissionDenied(f"You may not overwrite files ({virtual(dst)}).")
        moved, existing, location = await self._threads.work(self._rename_upload_on_disk, src, dst, overwrite)
        if moved is not None and existing is not None:
            self.limits.removed(existing)  # the old version from `src` replaced it
        if moved is None:
            writer.replaced = existing  # the upload will replace what stands at `dst` now
        await writer.move_to(location)
        self.own.orphan(dst)
        self.own.moved(src, dst)

    def _rename_upload_on_disk(
        self, src: list[str], dst: list[str], overwrite: bool
    ) -> tuple[int | None, int | None, Location]:
        """Move what `src` holds on the disk (if anything) to `dst`; returns its size
        (None: nothing), the size of the file it replaced (None: none) and the
        upload's new location."""
        with self.tree.locate(src, follow=False) as old:
            new = self.tree.locate(dst, follow=False)
            try:
                moved = old.lstat()
                existing = new.lstat()
                if existing is not None:
                    if stat.S_ISDIR(existing.st_mode):
                        raise Invalid(f"{new.path} is a folder.")
                    if not overwrite:
                        raise AlreadyExists(f"{new.path} already exists.")
                    if "overwrite" not in self.account.profile.permissions:
                        raise PermissionDenied(f"You may not overwrite files ({new.path}).")
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

    def _rename(self, src: list[str], dst: list[str], overwrite: bool) -> int | None:
        with self.tree.locate(src, follow=False) as old, self.tree.locate(dst, follow=False) as new:
            moved = old.lstat()
            if moved is None:
                raise NotFound(f"No such file or folder: {old.path}")
            existing = new.lstat()
            replaced = None
            if existing is not None:
                if not overwrite:
                    raise AlreadyExists(f"{new.path} already exists.")
                if "overwrite" not in self.account.profile.permissions:
                    raise PermissionDenied(f"You may not overwrite files ({new.path}).")
                if stat.S_ISREG(existing.st_mode) and not os.path.samestat(moved, existing):
                    replaced = existing.st_size  # (onto itself, or another link of it: nothing goes)
            try:
                os.rename(old.name, new.name, src_dir_fd=old.dir_fd, dst_dir_fd=new.dir_fd)
            except OSError as e:
                raise os_error(e, new.path) from None
            return replaced

    async def set_times(self, path: str, atime: float, mtime: float) -> None:
        parts = split_path(path)
        if "upload" not in self.account.profile.permissions and "overwrite" not in self.account.profile.permissions:
            raise PermissionDenied(f"You may not change files ({virtual(parts)}).")
        if self._read_only:
            raise PermissionDenied("The source is read-only.")
        await self.own.settled(parts)
        writer = self.own.get(parts)
        if writer is not None:
            writer.set_times(atime, mtime)  # stamped when it is committed
            return
        await self._store_times(parts, atime, mtime)

    async def resize(self, path: str, size: int) -> None:
        """Truncate or extend the file at `path` to `size` bytes (SFTP SETSTAT with a
        size: `truncate -s`, sshfs). This session's upload in progress there is
        resized in place; a stored file is rewritten as an upload would: a private
        copy, resized, committed atomically (the overwrite permission, the quota
        and one audit row, as for any upload)."""
        parts = split_path(path)
        if not parts:
            raise Invalid("/ is a folder.")
        await self.own.settled(parts)
        writer = self.own.get(parts)
        if writer is not None:
            await writer.truncate(size)
            return
        entry = await self._stat(parts, True)
        if entry.kind != "file":
            raise Invalid(f"{virtual(parts)} is not a file.")
        if entry.size == size:
            return  # nothing changes: not rewritten
        if size and not self.resizes:
            raise Unavailable(
                f"{virtual(parts)} cannot be resized on this source (remote SFTP or S3): only emptied. "
                "Upload the file again instead."
            )
        writer = await self.open_write(virtual(parts), truncate=size == 0, create=False)
        try:
            await writer.truncate(size)
        except BaseException:
            await writer.abort()
            raise
        await writer.commit()

    async def _store_times(self, parts: list[str], atime: float, mtime: float) -> None:
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

    async def space(self) -> SpaceInfo:
        """Space left: the quota when the profile has one, else the disk's."""
        st = await self._threads.work(os.statvfs, self.tree.root)
        return self._within_quota(st.f_frsize or 4096, st.f_blocks, st.f_bavail, st.f_files, st.f_favail)

    def _within_quota(self, block: int, total: int, free: int, files_total: int, files_free: int) -> SpaceInfo:
        """The space a source reports, narrowed to the profile's quota when it has one."""
        if self.limits.quota_bytes is not None:
            total = self.limits.quota_bytes // block
            free = min(free, (self.limits.free_bytes() or 0) // block)
        if self.limits.quota_files is not None and self.limits.usage is not None:
            files_total = self.limits.quota_files
            files_free = max(0, self.limits.quota_files - self.limits.usage.files)
        return SpaceInfo(block, total, free, files_total, files_free)
