"""The file commands (RFC 959 4.1.3 service commands, RFC 3659 SIZE and MDTM,
the MFMT draft): FileCommands, the part of an FTP session that owns its working
folder and a pending rename.

Every path is joined with the working folder here and normalised by the core
(`resolve`); the shell (a CoreShell) does the rest, and every core error becomes
a reply through errors.ftp_reply.
"""

from __future__ import annotations

from collections.abc import Callable

from .errors import BadArgument
from .listing import mdtm, time_val
from .shell import CoreShell, segments

FEATURES = (
    "AUTH TLS",
    "EPRT",
    "EPSV",
    "MDTM",
    "MFMT",
    "MLST type*;size*;modify*;perm*;",
    "PASV",
    "PBSZ",
    "PROT",
    "REST STREAM",
    "SIZE",
    "TVFS",
    "UTF8",
)
ALIASES = {"XCWD": "CWD", "XCUP": "CDUP", "XPWD": "PWD", "XMKD": "MKD", "XRMD": "RMD"}


def quote_path(path: str) -> str:
    """A path inside a 257 reply: in double quotes, quotes doubled (RFC 959)."""
    return '"' + path.replace('"', '""') + '"'


class FileCommands:
    """Paths and the file commands of one signed-in FTP session.

    It owns the working folder (`cwd`) and RNFR's path until the RNTO right after it;
    `command` tells it the command line being run (as the client named it), for the
    reply to a missing path.
    """

    def __init__(self, shell: CoreShell, command: Callable[[], str]):
        self.shell = shell
        self.cwd = "/"
        self._command = command
        self._rename_from: str | None = None

    # -- paths -----------------------------------------------------------------------------

    def resolve(self, path: str) -> str:
        """The absolute virtual path for a client's path (the core normalises)."""
        if not path:
            raise BadArgument(f"{self._command()} needs a path.")
        joined = path if path.startswith("/") else self.cwd.rstrip("/") + "/" + path
        return self.shell.normalise(joined)

    def forget_rename(self) -> None:
        """A command other than RNTO came after RNFR: the rename is forgotten."""
        self._rename_from = None

    # -- the commands ---------------------------------------------------------------------

    def ftp_PWD(self):
        return 257, f"{quote_path(self.cwd)} is the current folder."

    async def ftp_CWD(self, path):
        target = self.resolve(path)
        await self.shell.access(segments(target))
        self.cwd = target
        return 250, f"Folder changed to {target}."

    def ftp_CDUP(self):
        return self.ftp_CWD("..")

    async def ftp_MKD(self, path):
        target = self.resolve(path)
        await self.shell.makeDirectory(segments(target))
        return 257, f"{quote_path(target)} created."

    async def ftp_RMD(self, path):
        target = self.resolve(path)
        await self.shell.removeDirectory(segments(target))
        return 250, f"Folder {target} removed."

    async def ftp_DELE(self, path):
        target = self.resolve(path)
        await self.shell.removeFile(segments(target))
        return 250, f"{target} deleted."

    async def ftp_RNFR(self, path):
        target = self.resolve(path)
        await self.shell.stat(segments(target), ("kind",))
        self._rename_from = target
        return 350, f"{target} exists; send RNTO with the new name."

    async def ftp_RNTO(self, path):
        source, self._rename_from = self._rename_from, None
        if source is None:
            return 503, "Send RNFR first."
        target = self.resolve(path)
        await self.shell.rename(segments(source), segments(target))
        return 250, f"Renamed {source} to {target}."

    async def ftp_SIZE(self, path):
        target = self.resolve(path)
        kind, size = await self.shell.stat(segments(target), ("kind", "size"))
        if kind != "file":
            return 550, f"{target} is not a file."
        return 213, str(size)

    async def ftp_MDTM(self, path):
        target = self.resolve(path)
        (modified,) = await self.shell.stat(segments(target), ("modified",))
        return 213, mdtm(modified)

    async def ftp_MFMT(self, arg):
        stamp, _, path = arg.partition(" ")
        try:
            mtime = time_val(stamp)
        except ValueError:
            raise BadArgument("MFMT needs a time as YYYYMMDDHHMMSS (UTC) and a path.") from None
        target = self.resolve(path)
        await self.shell.setModified(segments(target), mtime)
        return 213, f"Modify={stamp}; {target}"
