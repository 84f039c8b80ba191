"""One session's own uploads in progress, and what that session sees of them.

An upload stays invisible to everyone else until it is committed (others see the
old file or nothing), but the session writing it sees it under its real name, as
a program on a local disk or a FUSE mount (sshfs) expects: stat, listing, opening
it for reading, a second handle on it, renaming or deleting it before it is
closed. A session's requests may overtake one another (sshfs sends a STAT right
behind the OPEN it depends on, and never waits for a CLOSE's reply), so a path
whose upload is being opened, committed or dropped is "busy": the session's next
operations on that path wait until it settles.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from twisted.internet.defer import Deferred

from ...storage.paths import Entry

Key = tuple[str, ...]
UPLOAD_MODE = 0o100640  # a regular file, as the appliance makes them


def upload_mode(writer) -> int:
    """An upload's mode as shown: the appliance's, or one a chmod gave it (applied at commit)."""
    mode = getattr(writer, "mode", None)
    return UPLOAD_MODE if mode is None else 0o100000 | mode


class OwnUploads:
    def __init__(self):
        self._writers: dict[Key, object] = {}
        self._busy: dict[Key, int] = {}
        self._waiters: dict[Key, list[Deferred]] = {}

    # -- what the session sees ----------------------------------------------------------

    def get(self, parts: Iterable[str]):
        """The session's upload in progress at `parts`, or None."""
        return self._writers.get(tuple(parts))

    def entry(self, parts: list[str], writer) -> Entry:
        """What stat and listings show for an upload in progress: its size so far."""
        now = time.time()
        mtime = writer.times[1] if writer.times else now
        atime = writer.times[0] if writer.times else now
        return Entry(parts[-1], "file", writer.size, mtime, atime, upload_mode(writer))

    def in_folder(self, parts: list[str]) -> list[Entry]:
        """Entries for the uploads in progress directly inside the folder `parts`."""
        folder = tuple(parts)
        return [self.entry(list(key), w) for key, w in self._writers.items() if key[:-1] == folder]

    def under(self, parts: list[str]) -> list[object]:
        """The uploads in progress at `parts` or anywhere below it."""
        prefix = tuple(parts)
        return [w for key, w in self._writers.items() if key[: len(prefix)] == prefix]

    # -- bookkeeping ----------------------------------------------------------------------

    def add(self, parts: list[str], writer) -> None:
        writer.owner = self
        self._writers[tuple(parts)] = writer

    def forget(self, writer) -> None:
        for key, held in list(self._writers.items()):
            if held is writer:
                del self._writers[key]

    def orphan(self, parts: list[str]):
        """The name `parts` was deleted or replaced: the upload there (if any) keeps its
        handles but will save nothing when closed, as an unlinked file on a disk."""
        writer = self._writers.pop(tuple(parts), None)
        if writer is not None:
            writer.orphaned = True
        return writer

    def moved(self, src: list[str], dst: list[str]) -> None:
        """`src` (a file or folder) is now `dst`: the uploads at or below it follow."""
        prefix, target = tuple(src), tuple(dst)
        for key, writer in list(self._writers.items()):
            if key[: len(prefix)] == prefix:
                del self._writers[key]
                new = target + key[len(prefix) :]
                self._writers[new] = writer
                writer.renamed(list(new))

    # -- busy paths -------------------------------------------------------------------------

    def hold(self, parts: Iterable[str]) -> Callable[[], None]:
        """Mark `parts` busy until the returned function is called (once)."""
        key = tuple(parts)
        self._busy[key] = self._busy.get(key, 0) + 1
        released = False

        def release() -> None:
            nonlocal released
            if released:
                return
            released = True
            self._busy[key] -= 1
            if not self._busy[key]:
                del self._busy[key]
                for waiter in self._waiters.pop(key, []):
                    waiter.callback(None)

        return release

    def finishing(self, writer) -> Callable[[], None]:
        """A commit or abort of `writer` begins: its path is busy until the returned
        function is called, which also forgets the upload."""
        keys = [key for key, held in self._writers.items() if held is writer]
        releases = [self.hold(key) for key in keys]

        def done() -> None:
            self.forget(writer)
            for release in releases:
                release()

        return done

    async def settled(self, *paths: Iterable[str]) -> None:
        """Wait until none of `paths` is busy (no wait at all when none is: a caller that
        holds a path right after this call holds it before any later request runs)."""
        for parts in paths:
            key = tuple(parts)
            while key in self._busy:
                waiter: Deferred = Deferred()
                self._waiters.setdefault(key, []).append(waiter)
                await waiter
