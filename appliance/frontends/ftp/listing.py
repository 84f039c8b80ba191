"""Listings: LIST and NLST (RFC 959 4.1.3), MLSD and MLST (RFC 3659 7), and the
line formats they send (`ls -l` lines, MLST facts)."""

from __future__ import annotations

import fnmatch
import re
import stat
import time

from ...errors import NotFound
from .transfer import MemoryReader, ReadFile

GLOB = re.compile(r"[*?\[]")
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
SIX_MONTHS = 182 * 24 * 3600
MLST_FACTS = ("type", "size", "modify", "perm")
# RFC 3659 perm fact letters, each with the profile permission it stands for.
PERM_LETTERS = {
    "dir": (
        ("e", "list"),
        ("l", "list"),
        ("c", "upload"),
        ("m", "mkdir"),
        ("d", "delete"),
        ("f", "rename"),
        ("p", "delete"),
    ),
    "file": (("r", "download"), ("w", "overwrite"), ("a", "overwrite"), ("d", "delete"), ("f", "rename")),
}


def wire_name(name: str) -> bytes:
    # Names the disk holds in another encoding were decoded with surrogateescape: send their bytes.
    return name.encode("utf-8", "surrogateescape")


def mdtm(seconds: float) -> str:
    return time.strftime("%Y%m%d%H%M%S", time.gmtime(seconds))


def ls_line(name: str, kind: str, size: int, mode: int, mtime: float, now: float) -> bytes:
    """One `ls -l` line."""
    if kind == "link":
        mode = stat.S_IFLNK | 0o777
    t = time.gmtime(mtime)
    when = f"{t.tm_hour:02d}:{t.tm_min:02d}" if abs(now - mtime) < SIX_MONTHS else f"{t.tm_year:5d}"
    head = f"{stat.filemode(mode)}   1 ftp      ftp      {size:>13d} {MONTHS[t.tm_mon - 1]} {t.tm_mday:2d} {when} "
    return head.encode("ascii") + wire_name(name)


def mlst_facts(name_kind: str, size: int, mtime: float, perms: frozenset[str], facts) -> str:
    """The facts part of an MLSD/MLST line (RFC 3659), ending with ';'."""
    out = []
    if "type" in facts:
        out.append("type=" + {"dir": "dir", "file": "file", "link": "OS.unix=slink"}.get(name_kind, "OS.unix=other"))
    if "size" in facts and name_kind == "file":
        out.append(f"size={size}")
    if "modify" in facts:
        out.append("modify=" + mdtm(mtime))
    if "perm" in facts:
        letters = PERM_LETTERS.get(name_kind, ())
        out.append("perm=" + "".join(letter for letter, need in letters if need in perms))
    return "".join(fact + ";" for fact in out)


class Listings:
    """LIST, NLST, MLSD and MLST for FTPSession (over the data connection, see data.py).

    State: `_mlst_facts` (the facts OPTS MLST chose).
    """

    @staticmethod
    def _strip_options(arg: str) -> str:
        """Drop `ls` options clients send (LIST -la, LIST -a dir)."""
        while arg.startswith("-"):
            _, _, arg = arg.partition(" ")
        return arg

    async def _entries(self, arg: str, glob_ok: bool = True):
        """(what, [(name, kind, size, mode, mtime)]) for a LIST/NLST/MLSD argument; what
        the argument named: "dir", "file" or "glob" (a pattern matched in its folder)."""
        keys = ("name", "kind", "size", "mode", "modified")
        target = self._resolve(arg or self.cwd)
        segments = self._segments(target)
        shell = self.shell  # a lost connection sets self.shell to None while we wait
        try:
            kind, *rest = await shell.stat(segments, keys[1:])
        except NotFound:
            name = segments[-1] if segments else ""
            if not (glob_ok and GLOB.search(name)):
                raise
            listed = await shell.list(segments[:-1], keys)
            return "glob", [tuple(values) for _, values in listed if fnmatch.fnmatchcase(values[0], name)]
        if kind != "dir":
            return "file", [(arg, kind, *rest)]
        listed = await shell.list(segments, keys)
        return "dir", [tuple(values) for _, values in listed]

    @staticmethod
    def _listable(name: str) -> bool:
        return "\r" not in name and "\n" not in name

    async def ftp_LIST(self, arg=""):
        self._need_data_setup()
        async with self._data_command():
            path = self._strip_options(arg)
            options = arg[: len(arg) - len(path)]
            if re.search(r"(^|\s)-\w*d", options):  # ls -d: the folder itself, not what is in it
                target = self._resolve(path or self.cwd)
                kind, size, mode, mtime = await self.shell.stat(
                    self._segments(target), ("kind", "size", "mode", "modified")
                )
                entries = [(path or ".", kind, size, mode, mtime)]
            else:
                _, entries = await self._entries(path)
            now = self.clock.seconds()
            lines = [ls_line(*entry, now) for entry in sorted(entries) if self._listable(entry[0])]
            return await self._send_listing(lines)

    async def ftp_NLST(self, arg=""):
        self._need_data_setup()
        async with self._data_command():
            arg = self._strip_options(arg)
            what, entries = await self._entries(arg)
            # A pattern's matches are paths, as the shell expands them: "sub/*.txt" gives
            # "sub/a.txt", which a client (mget, ftplib) can then RETR from where it is.
            folder = arg.rpartition("/")[0] + "/" if what == "glob" and "/" in arg else ""
            lines = [wire_name(folder + entry[0]) for entry in sorted(entries) if self._listable(entry[0])]
            return await self._send_listing(lines)

    async def ftp_MLSD(self, arg=""):
        self._need_data_setup()
        async with self._data_command():
            perms = self.shell.permissions()  # before awaiting: a lost connection takes the shell away
            what, entries = await self._entries(arg, glob_ok=False)
            if what != "dir":
                return 501, f"{arg} is not a folder."
            lines = [
                mlst_facts(kind, size, mtime, perms, self._mlst_facts).encode("ascii") + b" " + wire_name(name)
                for name, kind, size, _mode, mtime in sorted(entries)
                if self._listable(name)
            ]
            return await self._send_listing(lines)

    async def ftp_MLST(self, arg=""):
        target = self._resolve(arg or self.cwd)
        perms = self.shell.permissions()  # before awaiting: a lost connection takes the shell away
        kind, size, mtime = await self.shell.stat(self._segments(target), ("kind", "size", "modified"))
        facts = mlst_facts(kind, size, mtime, perms, self._mlst_facts)
        self.reply_lines(250, f"Listing {target}", [f"{facts} {target}"], "End.")
        return None

    async def _send_listing(self, lines: list[bytes]):
        payload = b"".join(line + b"\r\n" for line in lines)
        self.reply_code(150, "Here comes the listing.")
        await self._send(ReadFile(MemoryReader(payload)))
        return 226, "Listing sent."
