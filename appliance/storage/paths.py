"""Paths as every layer sees them: a profile's virtual path split into checked names
(no escape, no NUL or control characters, no reserved upload names), and the Entry
that stat and list report, the same for every storage backend."""

from __future__ import annotations

import os
import re
import stat
import unicodedata
from typing import NamedTuple

from ..errors import Invalid, PermissionDenied

TEMP_PREFIX = ".~upload-"
# resumable (tus) uploads: hidden like every upload, but kept across restarts (see resumable.py)
RESUMABLE_PREFIX = TEMP_PREFIX + "tus-"
MAX_NAME_BYTES = 255
MAX_PATH_BYTES = 4096
ESCAPE = "That path leads outside your home folder."


ENTRY_MODE = 0o170777  # what an Entry keeps of a mode: the file type and permission bits


class Entry(NamedTuple):
    """What listing and stat report for one file or folder. A named tuple: immutable
    and made in a third of the time of a frozen dataclass (a listing makes 50,000)."""

    name: str
    kind: str  # "file", "dir", "link" (a link that cannot be followed), "other"
    size: int
    mtime: float
    atime: float
    mode: int  # file type bits and permission bits (ENTRY_MODE)

    @property
    def is_dir(self) -> bool:
        return self.kind == "dir"


def entry_from_stat(name: str, st: os.stat_result, kind: str | None = None) -> Entry:
    if kind is None:
        if stat.S_ISDIR(st.st_mode):
            kind = "dir"
        elif stat.S_ISREG(st.st_mode):
            kind = "file"
        elif stat.S_ISLNK(st.st_mode):
            kind = "link"
        else:
            kind = "other"
    # tuple.__new__: the NamedTuple's own __new__ is a Python call more (a listing makes 50,000)
    return _new(
        Entry, (name, kind, st.st_size if kind == "file" else 0, st.st_mtime, st.st_atime, st.st_mode & ENTRY_MODE)
    )


_new = tuple.__new__


# Control characters (C0, DEL, C1) and the invisible format characters that make one name
# look like another: the bidirectional embeddings and overrides (U+202A-U+202E: with the
# right-to-left override `invoice<RLO>fdp.exe` shows as `invoiceexe.pdf`), the isolates
# (U+2066-U+2069), zero-width spaces and joiners and the direction marks (U+200B-U+200F),
# and the byte-order mark (U+FEFF). No name holds one: none is created, and one put on
# the disk another way is not listed (it could pass for another file, or forge a line).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")


def has_control(name: str) -> bool:
    # isprintable first: a third of the search's time on a folder's 50,000 names joined
    # (it is False for every character above, and for more: the search then says)
    return not name.isprintable() and _CONTROL.search(name) is not None


def check_name(name: str) -> None:
    """Refuse names no protocol should be able to create."""
    if "\x00" in name:
        raise Invalid("File names may not contain NUL characters.")
    if has_control(name):
        raise Invalid("File names may not contain control characters such as line breaks.")
    if len(name.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES:
        raise Invalid(f"That name is too long: names may have at most {MAX_NAME_BYTES} bytes.")
    if name.startswith(TEMP_PREFIX):
        raise Invalid(f"Names starting with {TEMP_PREFIX!r} are reserved for uploads in progress.")


def split_path(path: str) -> list[str]:
    """A virtual path as its components, '..' applied; refuse escapes and bad names.

    Relative paths are taken from the root: the front ends resolve a working
    directory themselves before they call the core.
    """
    if "\x00" in path:
        raise Invalid("Paths may not contain NUL characters.")
    if len(path.encode("utf-8", "surrogateescape")) > MAX_PATH_BYTES:
        raise Invalid(f"That path is too long: paths may have at most {MAX_PATH_BYTES} bytes.")
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                raise PermissionDenied(ESCAPE)
            parts.pop()
            continue
        check_name(part)
        parts.append(part)
    return parts


def nfc(parts: list[str]) -> list[str]:
    """The names in Unicode NFC; `parts` itself when they are already (ASCII always is)."""
    if all(part.isascii() or unicodedata.is_normalized("NFC", part) for part in parts):
        return parts
    return [unicodedata.normalize("NFC", part) for part in parts]


def virtual(parts: list[str]) -> str:
    return "/" + "/".join(parts)
