"""The FTP session's files: a core FileSession behind the calls the FTP commands make.

Paths arrive as absolute segment lists (the protocol joins the working folder
first); every call goes to the core, which confines, checks permissions and
quota, and does its disk work off the reactor. Never twisted's FTPShell, which
does disk I/O on the reactor and is not confined.

The calls are Twisted's IFTPShell, but coroutines instead of methods returning
Deferreds: every caller is a command of ours that awaits it, and a Deferred around
each (`as_deferred`) cost ~10 us a command (MDTM 130 -> 121 us a round trip).
"""

from __future__ import annotations

from twisted.internet import defer
from zope.interface import Interface, implementer

from ...core.files import Entry, EntryBatches, FileSession
from ...errors import Invalid
from .transfer import ReadFile, WriteFile


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


def segments(path: str) -> list[str]:
    """An absolute virtual path as the segment list the shell's calls take."""
    return [part for part in path.split("/") if part]


class IFilesShell(Interface):
    """What an FTP sign-in gives its session: a CoreShell (the portal's avatar interface)."""


@implementer(IFilesShell)
class CoreShell:
    """One signed-in profile's files, for one FTP connection."""

    def __init__(self, session: FileSession):
        self.session = session

    def end(self) -> defer.Deferred | None:
        """The client signs off (QUIT): FileSession.end."""
        return self.session.end()

    @staticmethod
    def path(segments: list[str]) -> str:
        return "/" + "/".join(segments)

    def normalise(self, path: str) -> str:
        """The canonical virtual path; the core refuses escapes and bad names."""
        return self.session.normalise(path)

    def permissions(self) -> frozenset[str]:
        """What the profile may do here, for MLSD's perm fact (FileSession.allowed)."""
        return self.session.allowed

    # -- IFTPShell's calls, as coroutines ----------------------------------------------

    async def makeDirectory(self, path):
        await self.session.mkdir(self.path(path))

    async def removeDirectory(self, path):
        await self.session.rmdir(self.path(path))

    async def removeFile(self, path):
        await self.session.remove(self.path(path))

    async def rename(self, fromPath, toPath):
        # FTP's RNTO replaces an existing file, as rename(2) does (the core checks 'overwrite').
        await self.session.rename(self.path(fromPath), self.path(toPath), overwrite=True)

    async def access(self, path):
        where = self.path(path)
        entry = await self.session.stat(where)
        if not entry.is_dir:
            raise Invalid(f"{where} is a file, not a folder.")

    async def stat(self, path, keys=()):
        entry = await self.session.stat(self.path(path))
        return [entry_value(entry, key) for key in keys]

    async def list(self, path, keys=()):
        entries = await self.session.list(self.path(path))
        return [(entry.name, tuple(entry_value(entry, key) for key in keys)) for entry in entries]

    async def openForReading(self, path) -> ReadFile:
        return ReadFile(await self.session.open_read(self.path(path)))

    async def openForWriting(self, path, resume: bool = False) -> WriteFile:
        """An upload; with `resume` it starts as a copy of the existing file (REST, APPE)."""
        return WriteFile(await self.session.open_write(self.path(path), truncate=not resume))

    # -- beyond IFTPShell ---------------------------------------------------------------

    async def list_in_order(self, path) -> EntryBatches:
        """The folder's entries sorted by name, read a batch at a time (LIST, NLST, MLSD)."""
        return await self.session.list_in_order(self.path(path))

    async def setModified(self, path, mtime: float):
        await self.session.set_times(self.path(path), mtime, mtime)

    def logout(self) -> None:
        """The connection ended: the session's last rows are written without lingering
        (open files belong to the transfers, which the protocol ends)."""
        self.session.end()
