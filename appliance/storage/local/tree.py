"""A confined directory tree on the local disk: one profile's home folder.

Every walk goes component by component with openat(O_NOFOLLOW) from a directory
descriptor of the root, so neither `..`, an absolute path, nor a symlink (planted
before or swapped in during the walk) can lead outside. A symlink met on the way
is followed only when its target, resolved on the host, lies inside the root; the
walk then restarts from the root with the target's path. Functions here are
synchronous and run on the work pool.
"""

from __future__ import annotations

import errno
import os
import posixpath
import stat
from collections.abc import Callable, Sequence

from twisted.logger import Logger
from twisted.python.threadable import isInIOThread

from ...errors import AlreadyExists, Invalid, NotEmpty, NotFound, PermissionDenied, Unavailable
from ..paths import (
    ENTRY_MODE,
    RESUMABLE_PREFIX,
    TEMP_PREFIX,
    Entry,
    entry_from_stat,
    has_control,
    virtual,
)

MAX_LINK_HOPS = 16
FILE_MODE = 0o640  # files made on local sources
DIR_MODE = 0o750  # folders made on local sources
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC

log = Logger()

try:  # the C module setup.py builds where it can (_fast.c); else os.lstat, name by name
    from ._fast import lstat_files
except ImportError:  # pragma: no cover - a build without a compiler
    lstat_files = None


def os_error(e: OSError, path: str) -> Exception:
    """Map an OSError to the domain error a person can act on."""
    code = e.errno
    if code == errno.ENOENT:
        return NotFound(f"No such file or folder: {path}")
    if code in (errno.EACCES, errno.EPERM):
        return PermissionDenied(f"Permission denied on the storage: {path}")
    if code == errno.EEXIST:
        return AlreadyExists(f"A file or folder named {path} already exists.")
    if code == errno.ENOTEMPTY:
        return NotEmpty(f"The folder {path} is not empty.")
    if code == errno.ENOTDIR:
        return Invalid(f"A part of {path} is not a folder.")
    if code == errno.EISDIR:
        return Invalid(f"{path} is a folder.")
    if code == errno.ENAMETOOLONG:
        return Invalid(f"That name is too long for the storage: {path}")
    if code in (errno.ENOSPC, errno.EDQUOT):
        _tell_ops("the storage is full: {path} could not be written ({error})", path, e)
        return Unavailable("The storage is full: nothing was saved. Free some space and try again.")
    if code == errno.EROFS:
        _tell_ops("the storage is read-only: {path} could not be changed ({error})", path, e)
        return PermissionDenied("The storage is read-only.")
    if code == errno.ELOOP:
        return PermissionDenied(f"Too many symbolic links in {path}.")
    if code == errno.EINVAL:
        return Invalid(f"That operation is not possible on {path}.")
    _tell_ops("the storage failed on {path}: {error}", path, e)
    return Unavailable(f"The storage failed on {path}: {e.strerror or e}")


def _tell_ops(message: str, path: str, e: OSError) -> None:
    """A failure of the disk itself goes to the daemon's log too: the person's error
    reaches only their client, and ops must see a full or failing disk. os_error runs
    on the disk threads as well, so the line is logged from the reactor."""
    error = e.strerror or str(e)
    if isInIOThread():
        log.error(message, path=path, error=error)
    else:
        from twisted.internet import reactor

        reactor.callFromThread(log.error, message, path=path, error=error)


class Location:
    """An open descriptor of a folder and a name inside it; close when done."""

    def __init__(self, dir_fd: int, name: str | None, parts: list[str]):
        self.dir_fd = dir_fd
        self.name = name  # None means the root itself
        self.parts = parts

    @property
    def path(self) -> str:
        return virtual(self.parts)

    def lstat(self) -> os.stat_result | None:
        try:
            if self.name is None:
                return os.fstat(self.dir_fd)
            return os.stat(self.name, dir_fd=self.dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return None
        except OSError as e:
            raise os_error(e, self.path) from None

    def close(self) -> None:
        if self.dir_fd >= 0:
            os.close(self.dir_fd)
            self.dir_fd = -1

    def __enter__(self) -> Location:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Tree:
    """The confined tree under `root` (an existing folder)."""

    def __init__(self, root: str):
        self.root = os.path.realpath(root)

    def _link_target(self, dir_fd: int, name: str, parts_before: list[str]) -> list[str]:
        """The components of a symlink's target if it stays inside the root."""
        target = os.readlink(name, dir_fd=dir_fd)
        host_dir = os.path.join(self.root, *parts_before)
        resolved = posixpath.normpath(os.path.join(host_dir, target))
        if resolved != self.root and not resolved.startswith(self.root + os.sep):
            raise PermissionDenied(f"{virtual(parts_before + [name])} is a link to outside your home folder.")
        return [p for p in resolved[len(self.root) :].split(os.sep) if p]

    def locate(self, parts: list[str], follow: bool = True) -> Location:
        """Open the folder holding the last component, following links inside the root.

        With `follow`, a symlink as the last component is resolved too.
        """
        parts = list(parts)
        for _hop in range(MAX_LINK_HOPS):
            fd = os.open(self.root, _DIR_FLAGS)
            try:
                restart = None
                for i, part in enumerate(parts[:-1]):
                    try:
                        next_fd = os.open(part, _DIR_FLAGS, dir_fd=fd)
                    except OSError as e:
                        if e.errno not in (errno.ENOTDIR, errno.ELOOP):
                            raise os_error(e, virtual(parts[: i + 1])) from None
                        st = os.stat(part, dir_fd=fd, follow_symlinks=False)
                        if not stat.S_ISLNK(st.st_mode):
                            raise os_error(e, virtual(parts[: i + 1])) from None
                        restart = self._link_target(fd, part, parts[:i]) + parts[i + 1 :]
                        break
                    os.close(fd)
                    fd = next_fd
                if restart is None and follow and parts:
                    try:
                        st = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
                    except FileNotFoundError:
                        st = None
                    if st is not None and stat.S_ISLNK(st.st_mode):
                        restart = self._link_target(fd, parts[-1], parts[:-1])
                if restart is None:
                    location = Location(fd, parts[-1] if parts else None, parts)
                    fd = -1
                    return location
                parts = restart
            except OSError as e:
                raise os_error(e, virtual(parts)) from None
            finally:
                if fd >= 0:
                    os.close(fd)
        raise PermissionDenied(f"Too many symbolic links in {virtual(parts)}.")

    def open_dir(self, location: Location) -> int:
        """A descriptor of the folder at `location` (which must not be a link)."""
        if location.name is None:
            return os.dup(location.dir_fd)
        try:
            return os.open(location.name, _DIR_FLAGS, dir_fd=location.dir_fd)
        except OSError as e:
            if e.errno in (errno.ENOTDIR, errno.ELOOP):
                raise Invalid(f"{location.path} is not a folder.") from None
            raise os_error(e, location.path) from None

    def list(self, parts: list[str]) -> list[Entry]:
        with self.locate(parts) as location:
            fd = self.open_dir(location)
        try:
            entries = []
            with os.scandir(fd) as it:
                for item in it:
                    name = item.name
                    if unlisted(name):
                        continue
                    try:
                        st = item.stat(follow_symlinks=False)
                    except OSError:
                        continue  # vanished while listing
                    mode = st.st_mode
                    if stat.S_ISREG(mode):  # most entries: entry_from_stat's answer, made here
                        entries.append(Entry(name, "file", st.st_size, st.st_mtime, st.st_atime, mode & ENTRY_MODE))
                    elif stat.S_ISLNK(mode):
                        entries.append(self._link_entry(parts, name, st))
                    else:
                        entries.append(entry_from_stat(name, st))
            return entries
        finally:
            os.close(fd)

    def names(self, parts: list[str]) -> list[tuple[str, bool]]:
        """(name, is it a folder) of what the folder holds, as `list` would list it, from
        one pass of the folder with no stat of its files (a link is looked through)."""
        with self.locate(parts) as location:
            fd = self.open_dir(location)
        try:
            found, links = [], []
            with os.scandir(fd) as it:
                for item in it:
                    try:
                        if item.is_dir(follow_symlinks=False):
                            found.append((item.name, True))
                        elif item.is_symlink():
                            links.append(item)
                        else:
                            found.append((item.name, False))
                    except OSError:
                        continue  # vanished while listing
            for item in links:
                try:
                    found.append(
                        (item.name, self._link_entry(parts, item.name, item.stat(follow_symlinks=False)).is_dir)
                    )
                except OSError:
                    continue
        finally:
            os.close(fd)
        if any_unlisted(name for name, _ in found):
            found = [(n, d) for n, d in found if not unlisted(n)]
        return found

    def sorted_names(self, parts: list[str]) -> tuple[str, ...]:
        """The names `list` would list, sorted, from one read of the folder (no stat). A
        tuple: the garbage collector stops looking into a tuple of strings, where it went
        through a list of a big folder's names at each collection while it was listed."""
        with self.locate(parts) as location:
            fd = self.open_dir(location)
        try:
            names = os.listdir(fd)
        finally:
            os.close(fd)
        if any_unlisted(names):
            names = [n for n in names if not unlisted(n)]
        names.sort()
        return tuple(names)

    def entries(self, parts: list[str], names: Sequence[str]) -> list[Entry]:
        """The entries of these names in the folder, as `list` makes them (a name gone
        meanwhile is left out)."""
        with self.locate(parts) as location:
            fd = self.open_dir(location)
        try:
            if lstat_files is None:
                return self._entries_one_by_one(parts, fd, names)
            entries = []
            add = entries.append
            # a regular file comes back as its Entry, made in C; a name gone as None;
            # anything else as its name, looked at here
            for found in lstat_files(fd, tuple(names), Entry, ENTRY_MODE):
                if found.__class__ is Entry:
                    add(found)
                elif found is not None:
                    entry = self._entry(parts, fd, found)
                    if entry is not None:
                        add(entry)
            return entries
        finally:
            os.close(fd)

    def _entries_one_by_one(self, parts: list[str], fd: int, names: Sequence[str]) -> list[Entry]:
        """`entries` without the C module: os.lstat, name by name."""
        entries = []
        add, lstat, is_file, new = entries.append, os.lstat, stat.S_ISREG, tuple.__new__
        for name in names:
            try:
                st = lstat(name, dir_fd=fd)
            except OSError:
                continue
            mode = st.st_mode
            if is_file(mode):  # most entries: entry_from_stat's, inlined (a listing makes 50,000)
                add(new(Entry, (name, "file", st.st_size, st.st_mtime, st.st_atime, mode & ENTRY_MODE)))
            else:
                add(self._entry_of(parts, name, st))
        return entries

    def _entry(self, parts: list[str], fd: int, name: str) -> Entry | None:
        """The entry of `name` in the folder open as `fd` (None: gone meanwhile)."""
        try:
            return self._entry_of(parts, name, os.lstat(name, dir_fd=fd))
        except OSError:
            return None

    def _entry_of(self, parts: list[str], name: str, st: os.stat_result) -> Entry:
        return self._link_entry(parts, name, st) if stat.S_ISLNK(st.st_mode) else entry_from_stat(name, st)

    def _link_entry(self, parts: list[str], name: str, link_st: os.stat_result) -> Entry:
        """Show a link as what it points to when that is inside the root."""
        try:
            with self.locate(parts + [name]) as target:
                st = target.lstat()
            if st is not None:
                return entry_from_stat(name, st)
        except Exception:  # noqa: BLE001 - an unfollowable link is listed as a link
            pass
        return entry_from_stat(name, link_st, kind="link")

    def stat(self, parts: list[str], follow: bool = True) -> Entry:
        with self.locate(parts, follow=follow) as location:
            st = location.lstat()
        if st is None:
            raise NotFound(f"No such file or folder: {virtual(parts)}")
        return entry_from_stat(parts[-1] if parts else "/", st)

    def usage(self) -> tuple[int, int]:
        """Bytes and files under the root (links not followed, uploads in progress not counted)."""
        return folder_usage([self.root])


def unlisted(name: str) -> bool:
    """A name no listing shows: an upload in progress, or a name with a control character
    (put on the disk some other way: it would forge lines in a client's listing, and it
    cannot be addressed)."""
    return name.startswith(TEMP_PREFIX) or has_control(name)


def any_unlisted(names) -> bool:
    """Whether any of `names` is unlisted: one search over them all (no name holds a
    "/"), so a folder with none is not filtered name by name."""
    joined = "/".join(names)
    return TEMP_PREFIX in joined or has_control(joined)


def sweep_uploads(root: str) -> int:
    """Remove temporary upload files left by a crash; return how many. Partial
    resumable uploads are not theirs to remove: they outlive restarts."""
    removed = 0
    for folder, _dirs, names in os.walk(root):
        for name in names:
            if name.startswith(TEMP_PREFIX) and not name.startswith(RESUMABLE_PREFIX):
                try:
                    os.unlink(os.path.join(folder, name))
                    removed += 1
                except OSError:
                    pass
    return removed


def folder_usage(roots: list[str], checkpoint: Callable[[], None] | None = None) -> tuple[int, int]:
    """Bytes and files under `roots`, as quotas count them: links are not followed and
    uploads in progress not counted; a folder gone or unreadable meanwhile counts as
    empty. `checkpoint()` is called before each folder: what it raises ends the walk."""
    total = files = 0
    stack = list(roots)
    while stack:
        if checkpoint is not None:
            checkpoint()
        folder = stack.pop()
        try:
            with os.scandir(folder) as it:
                for item in it:
                    if item.is_dir(follow_symlinks=False):
                        stack.append(item.path)
                    elif item.is_file(follow_symlinks=False) and not item.name.startswith(TEMP_PREFIX):
                        total += item.stat(follow_symlinks=False).st_size
                        files += 1
        except OSError:
            continue
    return total, files
