"""The file commands (RFC 959 4.1.3 service commands, RFC 3659 SIZE and MDTM,
the MFMT draft) and the informational ones (FEAT, OPTS, HELP, SITE, STAT, QUIT).

Every path is joined with the working folder here and normalised by the core
(`_resolve`); the shell (a CoreShell) does the rest, and every core error becomes
a reply through errors.ftp_reply.
"""

from __future__ import annotations

from .errors import BadArgument
from .listing import MLST_FACTS, mdtm, time_val

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
    """Paths and the file commands for FTPSession.

    State: `cwd` (the working folder) and `_rename_from` (RNFR's path, until RNTO).
    """

    # -- paths -----------------------------------------------------------------------------

    def _resolve(self, path: str) -> str:
        """The absolute virtual path for a client's path (the core normalises)."""
        if not path:
            raise BadArgument(f"{self._command} needs a path.")
        joined = path if path.startswith("/") else self.cwd.rstrip("/") + "/" + path
        return self.shell.normalise(joined)

    @staticmethod
    def _segments(path: str) -> list[str]:
        return [part for part in path.split("/") if part]

    def ftp_TYPE(self, code):
        # twisted's answers an empty type with a reply it cannot format (and so none at all)
        if not code:
            return 501, "TYPE needs an argument: A (text) or I (binary)."
        return super().ftp_TYPE(code)

    def ftp_PWD(self):
        return 257, f"{quote_path(self.cwd)} is the current folder."

    async def ftp_CWD(self, path):
        target = self._resolve(path)
        await self.shell.access(self._segments(target))
        self.cwd = target
        return 250, f"Folder changed to {target}."

    def ftp_CDUP(self):
        return self.ftp_CWD("..")

    async def ftp_MKD(self, path):
        target = self._resolve(path)
        await self.shell.makeDirectory(self._segments(target))
        return 257, f"{quote_path(target)} created."

    async def ftp_RMD(self, path):
        target = self._resolve(path)
        await self.shell.removeDirectory(self._segments(target))
        return 250, f"Folder {target} removed."

    async def ftp_DELE(self, path):
        target = self._resolve(path)
        await self.shell.removeFile(self._segments(target))
        return 250, f"{target} deleted."

    async def ftp_RNFR(self, path):
        target = self._resolve(path)
        await self.shell.stat(self._segments(target), ("kind",))
        self._rename_from = target
        self.state = self.RENAMING
        return 350, f"{target} exists; send RNTO with the new name."

    async def ftp_RNTO(self, path):
        source, self._rename_from = self._rename_from, None
        self.state = self.AUTHED
        if source is None:
            return 503, "Send RNFR first."
        target = self._resolve(path)
        await self.shell.rename(self._segments(source), self._segments(target))
        return 250, f"Renamed {source} to {target}."

    async def ftp_SIZE(self, path):
        target = self._resolve(path)
        kind, size = await self.shell.stat(self._segments(target), ("kind", "size"))
        if kind != "file":
            return 550, f"{target} is not a file."
        return 213, str(size)

    async def ftp_MDTM(self, path):
        target = self._resolve(path)
        (modified,) = await self.shell.stat(self._segments(target), ("modified",))
        return 213, mdtm(modified)

    async def ftp_MFMT(self, arg):
        stamp, _, path = arg.partition(" ")
        try:
            mtime = time_val(stamp)
        except ValueError:
            raise BadArgument("MFMT needs a time as YYYYMMDDHHMMSS (UTC) and a path.") from None
        target = self._resolve(path)
        await self.shell.setModified(self._segments(target), mtime)
        return 213, f"Modify={stamp}; {target}"

    # -- information and the end -----------------------------------------------------------

    def ftp_FEAT(self):
        self.reply_lines(211, "Features:", list(FEATURES), "End")

    def ftp_OPTS(self, option=""):
        name, _, value = option.partition(" ")
        name = name.upper()
        if name in ("UTF8", "UTF-8"):
            if value.strip().upper() in ("ON", ""):
                return 200, "UTF-8 is always on."
            return 504, "UTF-8 cannot be turned off."
        if name == "MLST":
            wanted = [f for f in value.lower().split(";") if f in MLST_FACTS]
            self._mlst_facts = tuple(wanted)
            return 200, "MLST OPTS " + "".join(f + ";" for f in wanted)
        return 501, f"Option {name[:20]!r} is not supported."

    def ftp_HELP(self, arg=""):
        # what is answered: the ftp_ methods and their X aliases, less SITE (whose every
        # command is refused, 502, as a command not in HELP is)
        commands = sorted({name[4:] for name in dir(self) if name.startswith("ftp_")} - {"SITE"} | set(ALIASES))
        self.reply_lines(214, "Commands recognised:", [" ".join(commands)], "Help OK.")

    def ftp_SITE(self, arg=""):
        # File modes are the appliance's business (SITE CHMOD and friends are not offered).
        return 502, "SITE commands are not supported."

    def ftp_STAT(self, arg=""):
        if arg:
            return 502, "STAT with a path is not supported: use LIST or MLST."
        who = self.shell.session.account.profile.username
        running = f"a {self._command} is" if self._transfer else "no transfer"
        return 211, f"Signed in as {who}; folder {self.cwd}; {running} running."

    async def ftp_QUIT(self):
        ended = self.shell.end() if self.shell is not None else None
        if ended is not None:
            await ended  # a client that signs off finds its downloads' rows in the log
        self.reply_code(221, "Goodbye.")
        self._hang_up()
