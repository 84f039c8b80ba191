"""The IFTPShell over a core FileSession.

Paths arrive as absolute segment lists (the protocol joins the working folder
first); every call goes to the core, which confines, checks permissions and
quota, and does its disk work off the reactor. Never twisted's FTPShell, which
does disk I/O on the reactor and is not confined.
"""

from __future__ import annotations

from twisted.internet import defer
from twisted.protocols.ftp import IFTPShell
from zope.interface import implementer

from ...core.files import Entry, EntryBatches, FileSession
from ...errors import Invalid
from ...threads import as_deferred
from .transfer import ReadFile, WriteFile

CHANGES = ("upload", "overwrite", "delete", "rename", "mkdir")


def entry_value(entry: Entry, key: str):
    """One of IFTPShell's stat keys (and 'kind', 'mode', 'name') for an entry."""
    if key == "size":
        return entry.size
    if key == "directory":
        return entry.is_dir
    if key in ("permissions", "mode"):
        return entry.mode
    if key == "hardlinks":
        return 1
    if key == "modified":
        return entry.mtime
    if key in ("owner", "group"):
        return "ftp"
    if key == "kind":
        return entry.kind
    if key == "name":
        return entry.name
    raise KeyError(key)


@implementer(IFTPShell)
class CoreShell:
    """One signed-in profile's files, for one FTP connection."""

    def __init__(self, session: FileSession):
        self.session = session

    @staticmethod
    def path(segments: list[str]) -> str:
        return "/" + "/".join(segments)

    def normalise(self, path: str) -> str:
        """The canonical virtual path; the core refuses escapes and bad names."""
        return self.session.normalise(path)

    def permissions(self) -> frozenset[str]:
        """What the profile may do, for MLSD's perm fact (the core still enforces)."""
        allowed = set(self.session.account.profile.permissions)
        source = self.session.account.source
        if source is None or source.read_only:
            allowed -= set(CHANGES)
        return frozenset(allowed)

    # -- IFTPShell ------------------------------------------------------------------

    def makeDirectory(self, path):
        return as_deferred(self.session.mkdir(self.path(path)))

    def removeDirectory(self, path):
        return as_deferred(self.session.rmdir(self.path(path)))

    def removeFile(self, path):
        return as_deferred(self.session.remove(self.path(path)))

    def rename(self, fromPath, toPath):
        # FTP's RNTO replaces an existing file, as rename(2) does (the core checks 'overwrite').
        return as_deferred(self.session.rename(self.path(fromPath), self.path(toPath), overwrite=True))

    def access(self, path):
        return as_deferred(self._access(self.path(path)))

    async def _access(self, path: str) -> None:
        entry = await self.session.stat(path)
        if not entry.is_dir:
            raise Invalid(f"{path} is a file, not a folder.")

    def stat(self, path, keys=()):
        return as_deferred(self._stat(self.path(path), keys))

    async def _stat(self, path: str, keys) -> list:
        entry = await self.session.stat(path)
        return [entry_value(entry, key) for key in keys]

    def list(self, path, keys=()):
        return as_deferred(self._list(self.path(path), keys))

    async def _list(self, path: str, keys) -> list:
        entries = await self.session.list(path)
        return [(entry.name, tuple(entry_value(entry, key) for key in keys)) for entry in entries]

    def openForReading(self, path):
        return as_deferred(self._open_read(self.path(path)))

    async def _open_read(self, path: str) -> ReadFile:
        return ReadFile(await self.session.open_read(path))

    def openForWriting(self, path, resume: bool = False):
        """An upload; with `resume` it starts as a copy of the existing file (REST, APPE)."""
        return as_deferred(self._open_write(self.path(path), resume))

    async def _open_write(self, path: str, resume: bool) -> WriteFile:
        return WriteFile(await self.session.open_write(path, truncate=not resume))

    # -- beyond IFTPShell ---------------------------------------------------------------

    def list_in_order(self, path) -> defer.Deferred[EntryBatches]:
        """The folder's entries sorted by name, read a batch at a time (LIST, NLST, MLSD)."""
        return as_deferred(self.session.list_in_order(self.path(path)))

    def setModified(self, path, mtime: float):
        return as_deferred(self.session.set_times(self.path(path), mtime, mtime))

    def logout(self) -> None:
        """Nothing to release: open files belong to the transfers, which the protocol ends."""
