"""The files service: one profile's view of its source, the same for every protocol.

A FileSession is what SFTP, FTP, HTTP and mailboxes call. It confines every path
to the profile's home (see tree.py), checks the profile's permissions and quota,
uploads through temporary files (handles.py), and writes one audit row per
transfer and change. Nothing here runs disk work on the reactor.
"""

from __future__ import annotations

import posixpath
import time
from pathlib import Path

from twisted.internet import defer, task
from twisted.logger import Logger

from ...errors import AlreadyExists, ApplianceError, Invalid, NotFound, PermissionDenied, Unavailable, Unsupported
from ...models import Source
from ...storage.interface import Backend, Download, SpaceInfo, Upload
from ...storage.paths import Entry, nfc, split_path, virtual
from ...storage.registry import Backends
from ...threads import Threads
from ..audit import PROTOCOL_NAMES, ROWS_BEHIND, AuditLog, clean
from ..auth import Account
from .batches import EntryBatches
from .own import OwnUploads
from .quota import Limits, QuotaTracker

log = Logger()

# The protocols whose connection keeps one session until the client ends it (FTP's QUIT,
# an SSH channel's exit: see FileSession.end): a download's audit row is written after
# its reply (FTP's 226, SFTP's CLOSE), while the client goes on with its next requests.
ROWS_TRAIL = frozenset(("ftp", "sftp"))

Reader = Download  # what open_read returns (a backend's download, or an upload read back)
Writer = Upload  # what open_write returns


class FilesService:
    def __init__(self, threads: Threads, audit: AuditLog, quotas: QuotaTracker, data_dir: Path, backends: Backends):
        self._threads = threads
        self.backends = backends  # the storage registry the composition root chose (service.py)
        self.local = backends.local
        # the pools of remote SFTP sources and the clients of S3 sources (None: not available)
        self.remote = backends.sftp.sources if backends.sftp is not None else None
        self.s3 = backends.s3.sources if backends.s3 is not None else None
        self._audit = audit
        self._quotas = quotas
        self._data_dir = Path(data_dir)
        self.uploads: set[Upload] = set()  # in progress, for draining at shutdown
        self.read_ahead = self.local.read_ahead  # shared by every open local download

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
        return self.local.root(source)

    async def session(self, account: Account, protocol: str, address: str, share: str | None = None) -> FileSession:
        """Open the profile's home (creating it on first use) for one connection
        (`share`: an anonymous visitor's, through this share link of the profile)."""
        source = account.source
        if source is None:
            raise PermissionDenied("No source is assigned to your account. Ask your administrator to assign one.")
        storage = await self.backends.open(source, split_path(account.profile.home))
        profile = account.profile
        usage = None
        if profile.quota_bytes is not None or profile.quota_files is not None:
            usage = await self._quotas.usage(storage.root, storage.usage)
        limits = Limits(usage, profile.quota_bytes, profile.quota_files)
        return FileSession(self, account, storage, limits, protocol, address, share)

    async def sweep(self, sources: list[Source]) -> int:
        """Remove temporary files of uploads cut short by a crash (at start-up)."""
        removed = 0
        now = time.time()
        for source in sources:
            if source.type == "local":
                removed += await self.local.sweep(source, now)
        # the remote sources side by side: a slow or down one holds up no other
        remote = [s for s in sources if s.type != "local" and self.backends.kind(s.type) is not None]
        counts = await defer.gatherResults([defer.Deferred.fromCoroutine(self._sweep_remote(s, now)) for s in remote])
        removed += sum(counts)
        if removed:
            log.info("removed {count} unfinished uploads left by an earlier stop", count=removed)
        return removed

    async def _sweep_remote(self, source: Source, now: float) -> int:
        """One remote source's sweep; a failure is logged, never raised (start-up goes on)."""
        try:
            return await self.backends.kind(source.type).sweep(source, now)
        except ApplianceError as e:
            log.warn("could not look for unfinished uploads in {source}: {error}", source=source.name, error=e)
        except Exception:  # noqa: BLE001 - a bug here must not stop the other sources' sweeps
            log.failure("looking for unfinished uploads in {source} failed", source=source.name)
        return 0


READ_ONLY = frozenset(("list", "download"))  # the permissions a read-only source leaves
ALLOWED_MODE = 0o775  # permission bits a client may set: never setuid, setgid, sticky or others' write


class FileSession:
    """A signed-in profile's files for one connection of one protocol: the rules
    (confinement, permissions, quota, temp-then-commit, the audit sentences), the
    same for every backend (storage/interface.py) the work is done by."""

    def __init__(
        self,
        service: FilesService,
        account: Account,
        storage: Backend,
        limits: Limits,
        protocol: str,
        address: str,
        share: str | None = None,
    ):
        self._service = service
        self._audit = service._audit
        self.account = account
        self.storage = storage
        self.limits = limits
        self.protocol = protocol
        self.address = address
        self.share = share  # transfers are logged as an anonymous visitor's through this share
        self._read_only = account.source.read_only if account.source else True
        self.own = OwnUploads()  # this session's uploads in progress, which it alone sees
        self._rows_trail = protocol in ROWS_TRAIL
        self._rows_behind: set[defer.Deferred] = set()  # finished downloads' rows being written

    @property
    def remote(self) -> bool:
        """Not on the appliance's own disk (a remote SFTP or S3 source)."""
        return self.storage.remote

    @property
    def resizes(self) -> bool:
        """A stored file can be truncated or extended in place of a rewrite (local disk)."""
        return self.storage.resizes

    @property
    def tree(self):
        """The backend's tree of names (its `root` names the home)."""
        return self.storage.tree

    def refresh(self, account: Account) -> None:
        """Take the profile's new settings (read again after an admin's change; same
        source and home): its permissions, quota figures and the source's read-only
        flag hold from the next call. core/open_sessions.py ends sessions that cannot."""
        self.account = account
        self._read_only = account.source.read_only if account.source else True
        self.limits.quota_bytes = account.profile.quota_bytes
        self.limits.quota_files = account.profile.quota_files

    # -- rules ------------------------------------------------------------------

    @property
    def allowed(self) -> frozenset[str]:
        """What this profile may do here now: its permissions, less every change on a
        read-only source (what a listing shows: MLSD's perm facts, the web listing's
        permissions; `_require` enforces the same)."""
        permissions = frozenset(self.account.profile.permissions)
        return permissions & READ_ONLY if self._read_only else permissions

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
        if permission not in READ_ONLY and self._read_only:
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
        """What a reader calls when it closes: one audit row for the download of `path`.
        In a session whose rows trail (ROWS_TRAIL) the close returns at once and the row
        is written behind the client's next requests, lingering for others to go with it
        (core/audit.py LINGER): rows are committed in the order recorded, so a later
        change's row still comes after it."""

        async def finished(sent: int, size: int) -> None:
            row = self._audit.transfer(
                self.account,
                self.protocol,
                self.address,
                "download",
                path,
                sent,
                self.share,
                of=size,
                linger=self._rows_trail,
            )
            if not self._rows_trail:
                await row
                return
            written = defer.Deferred.fromCoroutine(row)
            if not written.called:
                self._rows_behind.add(written)
                written.addBoth(self._row_written, written)
            written.addErrback(lambda f: log.failure("writing the audit row of a download of {path}", f, path=path))

        return finished

    def _row_written(self, result, written: defer.Deferred):
        self._rows_behind.discard(written)
        return result

    def _rows_written(self) -> defer.Deferred | None:
        """A Deferred that fires once the download rows recorded so far are in the log
        (written now, without lingering); None when none is being written."""
        if not self._rows_behind:
            return None
        self._audit.write_now()
        return defer.DeferredList(list(self._rows_behind), consumeErrors=True)

    def end(self) -> defer.Deferred | None:
        """The client is done (FTP's QUIT or its connection's end, an SSH channel's exit):
        a Deferred that fires once this session's download rows are in the log, so a
        client that waits for its session's end finds them; None when none is pending.
        Nothing is closed: an SSH connection's other channels go on with the session."""
        return self._rows_written()

    async def _uploaded(self, writer: Upload) -> None:
        await self._audit.transfer(
            self.account, self.protocol, self.address, "upload", writer.path, writer.size, self.share
        )

    # -- reading ------------------------------------------------------------------

    def normalise(self, path: str) -> str:
        """The canonical virtual path (realpath for clients); refuses escapes."""
        return virtual(split_path(path))

    async def resolve(self, path: str) -> str:
        """The virtual path a call with `path` reaches (`_parts`): where an upload lands."""
        return virtual(await self._parts(path))

    async def _parts(self, path: str) -> list[str]:
        """`path` split and checked, its names in Unicode NFC: "é" typed as one character
        or as "e" and a combining accent is one name, so no file can stand beside a
        look-alike twin, and new names are made in NFC. A path as given that exists (named
        before this rule, or by hand on the disk) is kept, so its files stay reachable;
        otherwise its longest existing prefix as given, the rest in NFC. Only a path not in
        NFC costs a look (ASCII never does)."""
        parts = split_path(path)
        composed = nfc(parts)
        if composed is parts:
            return parts
        for end in range(len(parts), 0, -1):
            if composed[:end] == parts[:end]:
                break
            if self.own.get(parts[:end]) is not None or await self._exists(parts[:end]):
                return parts[:end] + composed[end:]
        return composed

    async def _exists(self, parts: list[str]) -> bool:
        try:
            await self.storage.stat(parts, False)
        except NotFound:
            return False
        return True

    async def stat(self, path: str, follow: bool = True) -> Entry:
        """What is at `path`; this session's own upload in progress there shows as it
        is so far (others see the old file or nothing)."""
        parts = await self._parts(path)
        await self.own.settled(parts)
        writer = self.own.get(parts)
        if writer is not None:
            return self.own.entry(parts, writer)
        return await self.storage.stat(parts, follow)

    async def list(self, path: str) -> list[Entry]:
        parts = await self._parts(path)
        self._require("list", virtual(parts))
        entries = {entry.name: entry for entry in await self.storage.list(parts)}
        for entry in self.own.in_folder(parts):  # this session's uploads in progress, as stat shows them
            entries[entry.name] = entry
        return list(entries.values())

    async def list_in_order(self, path: str) -> EntryBatches:
        """The entries of the folder at `path` sorted by name, in batches (a client's
        listing): a backend that can (`lists_names`) reads the names in one pass, then
        stats them a batch at a time while the caller sends the batch before."""
        parts = await self._parts(path)
        self._require("list", virtual(parts))
        if not self._listed_by_name(parts):
            return EntryBatches.of(sorted(await self.list(path), key=lambda e: e.name))
        names = await self.storage.list_sorted_names(parts)  # sorted off the reactor too
        return EntryBatches(names, lambda chunk, shape: self.storage.list_entries(parts, chunk, shape))

    def _listed_by_name(self, parts: list[str]) -> bool:
        """Whether a listing of the folder may read its names first and stat only those it
        sends: the backend can, and no upload of this session in the folder must show."""
        return self.storage.lists_names and not self.own.in_folder(parts)

    async def list_page(self, path: str, offset: int, limit: int) -> tuple[int, list[Entry]]:
        """(how many entries, the entries from `offset` on, at most `limit`) of the folder
        at `path`, folders first, then by name regardless of case. A backend that can
        (`lists_names`) stats only the page's entries: a first page of a folder of
        50,000 files costs one pass over its names."""
        parts = await self._parts(path)
        self._require("list", virtual(parts))
        if not self._listed_by_name(parts):
            entries = sorted(await self.list(path), key=lambda e: (not e.is_dir, e.name.lower(), e.name))
            return len(entries), entries[offset : offset + limit]
        names = await self.storage.list_names(parts)
        folders = sorted(sorted(name for name, is_dir in names if is_dir), key=str.lower)  # by name, then case
        files = sorted(sorted(name for name, is_dir in names if not is_dir), key=str.lower)
        page = (folders + files)[offset : offset + limit]
        entries = await self.storage.list_entries(parts, page) if page else []
        return len(names), entries

    async def open_read(self, path: str) -> Reader:
        """A reader of the file at `path`; of this session's own upload in progress
        there, what it holds so far (and more as it is written; no download is logged)."""
        parts = await self._parts(path)
        self._require("download", virtual(parts))
        if len(self._rows_behind) >= ROWS_BEHIND:
            await self._rows_written()  # a client cannot pile up rows while the database is held up
        await self.own.settled(parts)
        writer = self.own.get(parts)
        if writer is not None:
            return await writer.reader()
        where = virtual(parts)
        return await self.storage.open_reader(parts, where, self._download_logger(where))

    async def check_download(self, path: str) -> str:
        """That `path` is a file this profile may download now, as `open_read` would
        find it (nothing is read or logged); its normalised path."""
        parts = await self._parts(path)
        self._require("download", virtual(parts))
        if not parts:
            raise Invalid("/ is a folder.")
        await self.own.settled(parts)
        if self.own.get(parts) is None:  # this session's own upload in progress is a file
            await self.storage.check_file(parts)
        return virtual(parts)

    # -- writing --------------------------------------------------------------------

    async def upload_path(self, folder: str, name: str) -> str:
        """Where an upload of `name` into `folder` lands. A name with folders in it
        ("q3/report.pdf": a browser's folder upload) lands in those folders, made as
        needed, as mkdir makes them (its permission, its audit row)."""
        folder = self.normalise(folder or "/")
        target = await self.resolve(posixpath.join(folder, name.replace("\\", "/").lstrip("/")))
        if posixpath.dirname(target) != folder:
            await self.mkdir(posixpath.dirname(target), parents=True)
        return target

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
        parts = await self._parts(path)
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

    async def _start_write(self, parts: list[str], truncate: bool, exclusive: bool, create: bool) -> Upload:
        if truncate and not self._read_only and self.storage.begins_uploads_blind:
            # the name looked up and the temporary file made in one trip to the disk: the
            # rules are the same, checked on what was found; a refusal drops the new file
            found, writer = await self.storage.begin_upload_blind(
                parts, truncate, exclusive, self.limits, self._uploaded, self._service.uploads
            )
            try:
                self._may_write(parts, found, exclusive, create)
            except BaseException:
                await writer.abort()
                raise
            return writer
        found = await self.storage.upload_target(parts)
        self._may_write(parts, found, exclusive, create)
        replaced = found[1] if found is not None else None
        writer = await self.storage.begin_upload(
            parts, replaced, truncate, exclusive, self.limits, self._uploaded, self._service.uploads
        )
        if writer.size:
            # a resumed upload (REST and STOR, APPE, an SFTP open that keeps the file)
            # starts as a copy of the file it replaces: those bytes count, on any backend
            try:
                self.limits.grow(writer.size, writer.replaced or 0)
            except BaseException:
                await writer.abort()
                raise
        return writer

    def _may_write(self, parts: list[str], found, exclusive: bool, create: bool) -> None:
        """The rules of an upload to `parts`, where `found` stands (None: nothing)."""
        where = virtual(parts)
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

    async def check_upload(
        self, path: str, *, overwrite: bool, size: int | None = None, reserved: int = 0
    ) -> int | None:
        """May an upload to `path` go ahead now: the upload (or overwrite) permission, no
        overwrite unless asked, and with `size` the quota, counting `reserved` bytes of
        other uploads in progress. Returns the size of the file it would replace, None
        for a new one. (Resumable uploads ask at creation and again at completion.)"""
        parts = await self._parts(path)
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
        a folder there is refused."""
        found = await self.storage.upload_target(parts)
        if found is None:
            return None
        if found[0] == "dir":
            raise Invalid(f"{virtual(parts)} is a folder.")
        return found[1]

    # -- changes --------------------------------------------------------------------

    async def mkdir(self, path: str, parents: bool = False) -> str:
        parts = await self._parts(path)
        if not parts:
            raise AlreadyExists("/ already exists.")
        self._require("mkdir", virtual(parts))
        if await self.storage.make_folders(parts, parents):
            await self._changed(
                "mkdir", virtual(parts), f"{self._who} created the folder {clean(virtual(parts))} over {self._over}"
            )
        return virtual(parts)

    async def _folder(self, parts: list[str]) -> None:
        """Refuse anything but a folder this profile may remove."""
        if not parts:
            raise PermissionDenied("Your home folder cannot be removed.")
        self._require("delete", virtual(parts))
        found = await self.storage.lookup(parts)
        if found is None:
            raise NotFound(f"No such folder: {virtual(parts)}")
        if found[0] != "dir":
            raise Invalid(f"{virtual(parts)} is not a folder.")

    async def _removed_folder(self, parts: list[str]) -> None:
        await self.storage.kept(parts[:-1])
        await self._changed(
            "delete", virtual(parts), f"{self._who} removed the folder {clean(virtual(parts))} over {self._over}"
        )

    async def rmdir(self, path: str) -> None:
        """Remove an empty folder."""
        parts = await self._parts(path)
        await self._folder(parts)
        await self.storage.remove_empty_folder(parts)
        await self._removed_folder(parts)

    async def remove_tree(self, path: str) -> None:
        """Delete a folder and everything in it."""
        parts = await self._parts(path)
        await self._folder(parts)
        await self.storage.remove_all(parts)
        self._service._quotas.forget(self.storage.root)
        await self._removed_folder(parts)

    async def delete(self, path: str) -> None:
        """Delete what is at `path`: a file (or a link), or a folder and everything in it
        (the web console's delete)."""
        entry = await self.stat(path, follow=False)
        if entry.is_dir:
            await self.remove_tree(path)
        else:
            await self.remove(path)

    async def remove(self, path: str) -> None:
        """Delete a file (or a link: never what it points to)."""
        parts = await self._parts(path)
        if not parts:
            raise PermissionDenied("Your home folder cannot be removed.")
        where = virtual(parts)
        self._require("delete", where)
        await self.own.settled(parts)
        dropped = self.own.orphan(parts)  # this session's upload there saves nothing now
        found = await self.storage.lookup(parts)
        if found is None:
            if dropped is not None:
                return  # it was only an upload in progress: nobody else ever saw it
            raise NotFound(f"No such file: {where}")
        if found[0] == "dir":
            raise Invalid(f"{where} is a folder: remove it as a folder.")
        freed = await self.storage.delete_file(parts, found)
        if freed is not None:
            self.limits.removed(freed)
        await self.storage.kept(parts[:-1])
        await self._changed("delete", where, f"{self._who} deleted {clean(where)} over {self._over}")

    async def rename(self, source: str, target: str, overwrite: bool = False) -> None:
        src, dst = await self._parts(source), await self._parts(target)
        if not src or not dst:
            raise PermissionDenied("Your home folder cannot be renamed.")
        self._require("rename", virtual(src))
        await self.own.settled(src, dst)
        if not self.storage.renames_open_uploads:
            if self.own.under(src) or self.own.get(dst) is not None:
                raise Unavailable(
                    f"{virtual(src)} (or a file in it) is still being uploaded to a remote source: it cannot be "
                    "renamed before it is closed (only files on the appliance's own disk can). Close it first."
                )
        elif src != dst and self.own.get(dst) is not None and not overwrite:
            raise AlreadyExists(f"{virtual(dst)} already exists.")
        writer = self.own.get(src)
        if writer is not None and src != dst:
            await self._rename_upload(writer, src, dst, overwrite)
        else:
            if src == dst and self.storage.rename_onto_itself_does_nothing:
                return
            found = await self.storage.lookup(src)
            if found is None:
                raise NotFound(f"No such file or folder: {virtual(src)}")
            existing = await self.storage.rename_target(dst)
            if existing is not None:
                if not overwrite or not self.storage.may_replace(found, existing):
                    raise AlreadyExists(f"{virtual(dst)} already exists.")
                self._may_overwrite(dst)
            replaced = await self.storage.move(src, dst, found, existing)
            if replaced is not None:
                self.limits.removed(replaced)
            if src != dst and self.storage.renames_open_uploads:
                self.own.orphan(dst)
                self.own.moved(src, dst)  # a folder: the uploads inside it follow
            await self.storage.kept(src[:-1])
        await self._changed(
            "rename",
            virtual(src),
            f"{self._who} renamed {clean(virtual(src))} to {clean(virtual(dst))} over {self._over}",
        )

    def _may_overwrite(self, parts: list[str]) -> None:
        if "overwrite" not in self.account.profile.permissions:
            raise PermissionDenied(f"You may not overwrite files ({virtual(parts)}).")

    async def _rename_upload(self, writer: Upload, src: list[str], dst: list[str], overwrite: bool) -> None:
        """Rename this session's own upload in progress (an editor or sshfs renames a
        file before its CLOSE arrives): what stands at `src` in the storage, if
        anything, moves as any rename would, and the upload will be committed at `dst`."""
        if self.own.get(dst) is not None:
            self._may_overwrite(dst)
        existing = await self.storage.lookup(dst)
        if existing is not None:
            if existing[0] == "dir":
                raise Invalid(f"{virtual(dst)} is a folder.")
            if not overwrite:
                raise AlreadyExists(f"{virtual(dst)} already exists.")
            self._may_overwrite(dst)
        moved, replaced = await self.storage.move_upload(writer, src, dst)
        if moved is not None and replaced is not None:
            self.limits.removed(replaced)  # the old version from `src` replaced it
        if moved is None:
            writer.replaced = replaced  # the upload will replace what stands at `dst` now
        self.own.orphan(dst)
        self.own.moved(src, dst)

    def _require_stamp(self, parts: list[str]) -> None:
        """Times and modes are a file's to change for whoever may write files."""
        if "upload" not in self.account.profile.permissions and "overwrite" not in self.account.profile.permissions:
            raise PermissionDenied(f"You may not change files ({virtual(parts)}).")
        if self._read_only:
            raise PermissionDenied("The source is read-only.")

    def mode_check(self, entry: Entry, mode: int) -> int | None:
        """The permission bits to apply for a chmod of `entry` to `mode`, None when it
        has them already; Unsupported (nothing changed) for what is not applied: any mode
        change on a source that keeps no modes, setuid/setgid/sticky or others' write,
        or taking away the owner's read and write (a folder's search) the appliance needs
        to serve and keep the file."""
        wanted = mode & 0o7777
        if wanted == entry.mode & 0o7777:
            return None  # what it is: nothing to change (`put -p` of a file as the appliance made it)
        name = entry.name or "/"
        if not self.storage.modes:
            raise Unsupported(
                f"This source keeps no file modes: {name} stays {entry.mode & 0o777:03o} (asked {wanted:03o})."
            )
        needed = 0o700 if entry.kind == "dir" else 0o600
        if wanted & ~ALLOWED_MODE or wanted & needed != needed:
            raise Unsupported(
                f"Mode {wanted:04o} is not applied to {name}: the owner keeps read and write"
                f"{' and search' if entry.kind == 'dir' else ''}; setuid, setgid, sticky and others' write "
                "are never set."
            )
        return wanted

    async def set_mode(self, path: str, mode: int) -> None:
        """chmod (SFTP SETSTAT with permissions, scp's modes): applied where mode_check allows."""
        parts = await self._parts(path)
        self._require_stamp(parts)
        await self.own.settled(parts)
        writer = self.own.get(parts)
        if writer is not None:
            self._upload_mode(writer, parts, mode)
            return
        wanted = self.mode_check(await self.storage.stat(parts, True), mode)
        if wanted is not None:
            await self.storage.set_mode(parts, wanted)

    def set_upload_mode(self, writer, path: str, mode: int) -> None:
        """chmod of this session's upload in progress (an open handle): given to the file
        when it is committed."""
        self._upload_mode(writer, split_path(path), mode)

    def _upload_mode(self, writer, parts: list[str], mode: int) -> None:
        wanted = self.mode_check(self.own.entry(parts, writer), mode)
        if wanted is not None:
            writer.set_mode(wanted)

    async def set_times(self, path: str, atime: float, mtime: float) -> None:
        parts = await self._parts(path)
        self._require_stamp(parts)
        await self.own.settled(parts)
        writer = self.own.get(parts)
        if writer is not None:
            writer.set_times(atime, mtime)  # stamped when it is committed
            return
        await self.storage.set_times(parts, atime, mtime)

    async def resize(self, path: str, size: int) -> None:
        """Truncate or extend the file at `path` to `size` bytes (SFTP SETSTAT with a
        size: `truncate -s`, sshfs). This session's upload in progress there is
        resized in place; a stored file is rewritten as an upload would: a private
        copy, resized, committed atomically (the overwrite permission, the quota
        and one audit row, as for any upload)."""
        parts = await self._parts(path)
        if not parts:
            raise Invalid("/ is a folder.")
        await self.own.settled(parts)
        writer = self.own.get(parts)
        if writer is not None:
            await writer.truncate(size)
            return
        entry = await self.storage.stat(parts, True)
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

    async def space(self) -> SpaceInfo:
        """Space left: the quota when the profile has one, else the storage's."""
        st = await self.storage.space()
        return self._within_quota(st.block_size, st.total_blocks, st.free_blocks, st.total_files, st.free_files)

    def _within_quota(self, block: int, total: int, free: int, files_total: int, files_free: int) -> SpaceInfo:
        """The space a source reports, narrowed to the profile's quota when it has one."""
        if self.limits.quota_bytes is not None:
            total = self.limits.quota_bytes // block
            free = min(free, (self.limits.free_bytes() or 0) // block)
        if self.limits.quota_files is not None and self.limits.usage is not None:
            files_total = self.limits.quota_files
            files_free = max(0, self.limits.quota_files - self.limits.usage.files)
        return SpaceInfo(block, total, free, files_total, files_free)
