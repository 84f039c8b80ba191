"""Listings: LIST and NLST (RFC 959 4.1.3), MLSD and MLST (RFC 3659 7), and the
line formats they send (`ls -l` lines, MLST facts)."""

from __future__ import annotations

import calendar
import datetime
import fnmatch
import re
import stat
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from ...core.files import Entry, EntryBatches
from ...errors import NotFound
from .shell import CoreShell, segments
from .transfer import ReadFile

if TYPE_CHECKING:
    from .data import DataChannels, Transfers

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


def time_val(text: str) -> float:
    """Seconds since the epoch of RFC 3659's time-val, YYYYMMDDHHMMSS[.sss] in UTC (what
    MFMT sets, the inverse of `mdtm`); ValueError if `text` is not one. Parsed by hand:
    time.strptime took ~30 us, a tenth of a small file's MFMT."""
    whole, dot, fraction = text.partition(".")
    if len(whole) != 14 or not (whole.isascii() and whole.isdigit()):
        raise ValueError(text)
    if dot and not (0 < len(fraction) <= 9 and fraction.isascii() and fraction.isdigit()):
        raise ValueError(text)
    n = int(whole)
    year, month, day = n // 10**10, n // 10**8 % 100, n // 10**6 % 100
    hour, minute, second = n // 10**4 % 100, n // 100 % 100, n % 100
    datetime.date(year, month, day)  # ValueError for a day that does not exist
    if hour > 23 or minute > 59 or second > 60:  # 60: a leap second, as strptime allows
        raise ValueError(text)
    seconds = calendar.timegm((year, month, day, hour, minute, second))
    return seconds + int(fraction) / 10 ** len(fraction) if dot else float(seconds)


def listable(name: str) -> bool:
    """Whether a name can go on a listing's line (CR or LF would split it)."""
    return "\r" not in name and "\n" not in name


class LsLines:
    """`ls -l` lines for one listing, a batch of entries at a time, each ending with
    CRLF: what many lines share (a mode's letters, a second's date) is made once.
    Names with CR or LF are left out."""

    def __init__(self, now: float):
        self._now = now
        self._modes: dict[int, str] = {}
        self._recent: dict[float, str] = {}  # a second's "Mon dd HH:MM", within six months of now
        self._old: dict[float, str] = {}  # a second's "Mon dd  yyyy"

    def line(self, name: str, kind: str, size: int, mode: int, mtime: float) -> str:
        """One `ls -l` line, without its CRLF."""
        if kind == "link":
            mode = stat.S_IFLNK | 0o777
        letters = self._modes.get(mode)
        if letters is None:
            letters = self._modes[mode] = stat.filemode(mode)
        recent = abs(self._now - mtime) < SIX_MONTHS
        dates = self._recent if recent else self._old
        second = mtime // 1  # gmtime rounds down (int() would not, before 1970)
        date = dates.get(second)
        if date is None:
            t = time.gmtime(mtime)
            when = f"{t.tm_hour:02d}:{t.tm_min:02d}" if recent else f"{t.tm_year:5d}"
            date = dates[second] = f"{MONTHS[t.tm_mon - 1]} {t.tm_mday:2d} {when}"
        return f"{letters}   1 ftp      ftp      {size:>13d} {date} {name}"

    def __call__(self, entries: list[Entry]) -> bytes:
        """The lines of a batch. What `line` does, with its lookups inlined for the
        common entry (not a link, a mode and a second seen before): a folder of
        50,000 entries is 50,000 of these."""
        line, modes, recent, old, now = self.line, self._modes, self._recent, self._old, self._now
        lines = []
        add = lines.append
        for name, kind, size, mtime, _atime, mode in entries:
            if "\r" in name or "\n" in name:  # listable(), inlined
                continue
            letters = modes.get(mode)
            date = (recent if abs(now - mtime) < SIX_MONTHS else old).get(mtime // 1)
            if letters is None or date is None or kind == "link":
                add(line(name, kind, size, mode, mtime))
            else:  # str.rjust: a third of the time of the f-string's ">13d"
                add(f"{letters}   1 ftp      ftp      {str(size).rjust(13)} {date} {name}")
        lines.append("")  # the last line's CRLF
        return "\r\n".join(lines).encode("utf-8", "surrogateescape")  # names in another encoding: their bytes


def ls_line(name: str, kind: str, size: int, mode: int, mtime: float, now: float) -> bytes:
    """One `ls -l` line, alone."""
    return LsLines(now).line(name, kind, size, mode, mtime).encode("utf-8", "surrogateescape")


class Facts:
    """Makes the facts part of MLSD/MLST lines (RFC 3659), ending with ';', for one
    listing: what is the same for many lines (a kind's type and perm facts, a second's
    modify stamp) is made once."""

    def __init__(self, perms: frozenset[str], facts):
        self._perms = perms
        self._facts = facts
        self._size = "size" in facts
        self._modify = "modify" in facts
        self._kinds: dict[str, tuple[str, str]] = {}
        self._stamps: dict[float, str] = {}

    def _of_kind(self, kind: str) -> tuple[str, str]:
        """The type fact and the perm fact of a kind (each "" when not asked for)."""
        made = self._kinds.get(kind)
        if made is None:
            kind_type = {"dir": "dir", "file": "file", "link": "OS.unix=slink"}.get(kind, "OS.unix=other")
            letters = "".join(letter for letter, need in PERM_LETTERS.get(kind, ()) if need in self._perms)
            made = self._kinds[kind] = (
                f"type={kind_type};" if "type" in self._facts else "",
                f"perm={letters};" if "perm" in self._facts else "",
            )
        return made

    def __call__(self, kind: str, size: int, mtime: float) -> str:
        kind_type, perm = self._of_kind(kind)
        size_fact = f"size={size};" if self._size and kind == "file" else ""
        modify = ""
        if self._modify:
            second = mtime // 1  # gmtime rounds down (int() would not, before 1970)
            modify = self._stamps.get(second)
            if modify is None:
                modify = self._stamps[second] = f"modify={mdtm(mtime)};"
        return kind_type + size_fact + modify + perm

    def lines(self, entries: list[Entry]) -> bytes:
        """MLSD lines for a batch of entries, each ending with CRLF; names with CR or LF
        are left out. What `__call__` does, inlined for a file whose second was seen."""
        facts, stamps = self.__call__, self._stamps
        file_facts = self._of_kind("file")
        sized, modified = self._size, self._modify
        lines = []
        add = lines.append
        for name, kind, size, mtime, _atime, _mode in entries:
            if "\r" in name or "\n" in name:  # listable(), inlined
                continue
            stamp = stamps.get(mtime // 1) if modified else ""
            if kind != "file" or stamp is None:
                add(f"{facts(kind, size, mtime)} {name}")
            elif sized:
                add(f"{file_facts[0]}size={size};{stamp}{file_facts[1]} {name}")
            else:
                add(f"{file_facts[0]}{stamp}{file_facts[1]} {name}")
        lines.append("")  # the last line's CRLF
        return "\r\n".join(lines).encode("utf-8", "surrogateescape")


def mlst_facts(name_kind: str, size: int, mtime: float, perms: frozenset[str], facts) -> str:
    """The facts part of one MLST line (RFC 3659), ending with ';'."""
    return Facts(perms, facts)(name_kind, size, mtime)


class Listings:
    """LIST, NLST, MLSD and MLST of one signed-in FTP session: the profile's entries
    (`shell`, at the paths `resolve` makes from the working folder `cwd`, both
    FileCommands'), sent over a data connection of its DataChannels (`data`) by its
    Transfers (`transfers`). The facts MLSD and MLST give are the session's
    (`facts`, chosen by OPTS MLST, before or after the sign-in); `reply` and
    `reply_lines` answer on the control connection.
    """

    def __init__(
        self,
        shell: CoreShell,
        resolve: Callable[[str], str],
        cwd: Callable[[], str],
        data: DataChannels,
        transfers: Transfers,
        clock,
        *,
        facts: Callable[[], tuple[str, ...]],
        reply: Callable[[int, str], None],
        reply_lines: Callable[[int, str, list[str], str], None],
    ):
        self._shell = shell
        self._resolve = resolve
        self._cwd = cwd
        self._data = data
        self._transfers = transfers
        self._clock = clock
        self._facts = facts
        self._reply = reply
        self._reply_lines = reply_lines

    @staticmethod
    def _strip_options(arg: str) -> str:
        """Drop `ls` options clients send (LIST -la, LIST -a dir)."""
        while arg.startswith("-"):
            _, _, arg = arg.partition(" ")
        return arg

    async def _entries(self, arg: str, glob_ok: bool = True) -> tuple[str, EntryBatches]:
        """(what, the entries in name order) for a LIST/NLST/MLSD argument; what the
        argument named: "dir", "file" or "glob" (a pattern matched in its folder)."""
        target = self._resolve(arg or self._cwd())
        parts = segments(target)
        shell = self._shell
        try:
            kind, size, mode, mtime = await shell.stat(parts, ("kind", "size", "mode", "modified"))
        except NotFound:
            name = parts[-1] if parts else ""
            if not (glob_ok and GLOB.search(name)):
                raise
            batches = await shell.list_in_order(parts[:-1])
            matches = []
            try:
                while (batch := await batches.next()) is not None:
                    matches += [entry for entry in batch if fnmatch.fnmatchcase(entry.name, name)]
            finally:
                batches.close()
            return "glob", EntryBatches.of(matches)
        if kind != "dir":
            return "file", EntryBatches.of([Entry(arg, kind, size, mtime, mtime, mode)])
        return "dir", await shell.list_in_order(parts)

    async def ftp_LIST(self, arg=""):
        self._data.need()
        async with self._data.command():
            path = self._strip_options(arg)
            options = arg[: len(arg) - len(path)]
            if re.search(r"(^|\s)-\w*d", options):  # ls -d: the folder itself, not what is in it
                target = self._resolve(path or self._cwd())
                kind, size, mode, mtime = await self._shell.stat(segments(target), ("kind", "size", "mode", "modified"))
                entries = EntryBatches.of([Entry(path or ".", kind, size, mtime, mtime, mode)])
            else:
                _, entries = await self._entries(path)
            return await self._send_listing(entries, LsLines(self._clock.seconds()))

    async def ftp_NLST(self, arg=""):
        self._data.need()
        async with self._data.command():
            arg = self._strip_options(arg)
            what, entries = await self._entries(arg)
            # A pattern's matches are paths, as the shell expands them: "sub/*.txt" gives
            # "sub/a.txt", which a client (mget, ftplib) can then RETR from where it is.
            folder = arg.rpartition("/")[0] + "/" if what == "glob" and "/" in arg else ""

            def names(batch: list[Entry]) -> bytes:
                return b"".join(wire_name(folder + e.name) + b"\r\n" for e in batch if listable(e.name))

            return await self._send_listing(entries, names)

    async def ftp_MLSD(self, arg=""):
        self._data.need()
        async with self._data.command():
            perms = self._shell.permissions()
            what, entries = await self._entries(arg, glob_ok=False)
            if what != "dir":
                entries.close()
                return 501, f"{arg} is not a folder."
            return await self._send_listing(entries, Facts(perms, self._facts()).lines)

    async def ftp_MLST(self, arg=""):
        target = self._resolve(arg or self._cwd())
        perms = self._shell.permissions()
        kind, size, mtime = await self._shell.stat(segments(target), ("kind", "size", "modified"))
        facts = mlst_facts(kind, size, mtime, perms, self._facts())
        self._reply_lines(250, f"Listing {target}", [f"{facts} {target}"], "End.")
        return None

    async def _send_listing(self, entries: EntryBatches, lines):
        """Send the entries, made into lines by `lines` (a batch of entries -> bytes,
        run where the batch is read: off the reactor), each batch as soon as it is read
        while the next one is read."""
        try:
            self._reply(150, "Here comes the listing.")
            await self._transfers.send(ReadFile(ListingReader(entries.shaped(lines))))
        finally:
            entries.close()
        return 226, "Listing sent."


class ListingReader:
    """A Reader (for transfer.ReadFile) of a listing made as it is sent: each read
    gives the next batch of lines (however many bytes that is) of `lines`, batches
    shaped into bytes (EntryBatches.shaped)."""

    socket_sender = None  # no socket fast path: sent through the reactor
    size = None  # not known before the end

    def __init__(self, lines: EntryBatches):
        self._entries = lines

    async def read(self, offset: int, length: int) -> bytes:
        while (data := await self._entries.next()) is not None:
            if data:
                return data
        return b""

    async def close(self) -> None:
        self._entries.close()
