"""Resumable uploads' partial files on a local source (interface.Partials): kept under a
hidden name (paths.RESUMABLE_PREFIX + the upload's id) beside their target, so the
crash sweep leaves them alone and the final rename stays on one filesystem. Each
append is fsynced before the caller records its new offset; the commit is atomic and
never replaces a file unless asked. The rules (permissions, quota, expiry, the audit
row) are the core's (core/files/resumable.py)."""

from __future__ import annotations

import errno
import io
import os

from ...errors import NotFound
from ...threads import Threads
from ..paths import RESUMABLE_PREFIX, virtual
from .handles import pwrite_all
from .tree import FILE_MODE, Tree, os_error

COPY_CHUNK = 1 << 20  # bytes per read when the body cannot be copied in the kernel
KERNEL_CHUNK = 64 << 20  # bytes per copy_file_range call


class LocalPartials:
    """The partial files of one home (see interface.Partials); the disk work runs on the work pool."""

    def __init__(self, threads: Threads, tree: Tree):
        self._threads = threads
        self._tree = tree

    async def create(self, parts: list[str], name: str) -> None:
        await self._threads.work(_create, self._tree, parts, name)

    async def append(self, parts: list[str], name: str, offset: int, body: io.IOBase, size: int) -> int:
        return await self._threads.bulk(_append, self._tree, parts, name, offset, body, size)

    async def commit(self, parts: list[str], name: str, overwrite: bool) -> None:
        await self._threads.work(_commit, self._tree, parts, name, overwrite)

    async def remove(self, parts: list[str], name: str) -> None:
        await self._threads.work(_remove, self._tree, parts, name)


def remove_partial_under(home: str, parts: list[str], name: str) -> None:
    """Remove a partial file of the home folder `home` (gone already, or no home: nothing to do)."""
    if os.path.isdir(home):
        _remove(Tree(home), parts, name)


def _create(tree: Tree, parts: list[str], temp_name: str) -> None:
    with tree.locate(parts, follow=False) as location:
        try:
            fd = os.open(
                temp_name,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                FILE_MODE,
                dir_fd=location.dir_fd,
            )
            os.close(fd)
            os.fsync(location.dir_fd)
        except OSError as e:
            raise os_error(e, location.path) from None


def _remove(tree: Tree, parts: list[str], temp_name: str) -> None:
    try:
        with tree.locate(parts, follow=False) as location:
            os.unlink(temp_name, dir_fd=location.dir_fd)
    except (NotFound, FileNotFoundError):
        pass


def _append(tree: Tree, parts: list[str], temp_name: str, offset: int, body, size: int) -> int:
    """Append the body at `offset` and fsync; return how many bytes were written."""
    with tree.locate(parts, follow=False) as location:
        try:
            fd = os.open(temp_name, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=location.dir_fd)
        except OSError as e:
            raise os_error(e, location.path) from None
    try:
        return append_at(fd, offset, body, size)
    except OSError as e:
        raise os_error(e, virtual(parts)) from None
    finally:
        os.close(fd)


def _commit(tree: Tree, parts: list[str], temp_name: str, overwrite: bool) -> None:
    """Put the partial file in place: atomically, and never over a file unless `overwrite`."""
    with tree.locate(parts, follow=False) as location:
        dir_fd = location.dir_fd
        try:
            if overwrite:
                os.rename(temp_name, location.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            else:
                try:  # a hard link fails if the name is taken, with no window for a race
                    os.link(temp_name, location.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
                except OSError as e:
                    if e.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EMLINK, errno.EXDEV):
                        raise
                    if location.lstat() is not None:  # no hard links here: check, then rename
                        raise FileExistsError(errno.EEXIST, "exists") from None
                    os.rename(temp_name, location.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
                else:
                    os.unlink(temp_name, dir_fd=dir_fd)
            os.fsync(dir_fd)
        except OSError as e:
            raise os_error(e, location.path) from None


def _copy_body(body: io.IOBase, fd: int, offset: int, size: int) -> int:
    """Copy the body's first `size` bytes to `fd` at `offset`: in the kernel when the body
    is a file (Twisted spools large bodies to one), else through one reused buffer."""
    done = 0
    try:
        body.flush()
        source = body.fileno()
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        source = None
    while source is not None and done < size:
        try:
            copied = os.copy_file_range(source, fd, min(KERNEL_CHUNK, size - done), done, offset + done)
        except OSError:
            copied = 0
        if copied == 0:
            break
        done += copied
    buffer = memoryview(bytearray(min(COPY_CHUNK, max(size, 1))))
    try:
        body.seek(done)
        while done < size:
            count = body.readinto(buffer[: min(len(buffer), size - done)])
            if not count:
                break
            pwrite_all(fd, [buffer[:count]], offset + done)
            done += count
    except ValueError:  # the body was closed under us: keep what was written
        pass
    return done


def append_at(fd: int, offset: int, body, size: int) -> int:
    """Write the body's first `size` bytes at `offset` of `fd` (what lay past it goes) and fsync:
    return how many bytes were written."""
    os.ftruncate(fd, offset)  # bytes past the recorded offset (a crash mid-append) are not the upload's
    written = _copy_body(body, fd, offset, size)
    os.fsync(fd)
    return written


def find_partials(root: str) -> list[str]:
    """The partial files under a local source's folder (their paths)."""
    return [
        os.path.join(folder, name)
        for folder, _dirs, names in os.walk(root)
        for name in names
        if name.startswith(RESUMABLE_PREFIX)
    ]


def remove_files(paths: list[str]) -> int:
    """Remove these files (those already gone are skipped); return how many were removed."""
    removed = 0
    for path in paths:
        try:
            os.unlink(path)
            removed += 1
        except OSError:
            pass
    return removed
