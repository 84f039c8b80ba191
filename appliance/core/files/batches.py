"""A folder's entries in name order, a batch at a time: a listing of a big folder is
sent while the rest of it is still being read (stat) off the reactor."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from twisted.internet import defer

from ...storage.interface import Shape
from ...storage.paths import Entry

LIST_BATCH = 1000  # entries read (stat) in one trip to the disk thread


class EntryBatches:
    """The entries of `names` (in that order), fetched `size` at a time by `fetch`
    (names, shape -> `shape` of their entries, or the entries when `shape` is None);
    the next batch is read while the caller handles this one. Call `close` when done
    (an early stop leaves a read in flight: its result is dropped)."""

    def __init__(
        self,
        names: Sequence[str],
        fetch: Callable[[Sequence[str], Shape | None], Awaitable[Any]] | None,
        size: int = LIST_BATCH,
        entries: list[Entry] | None = None,
    ):
        self.count = len(names) if entries is None else len(entries)
        self._fetch = fetch
        self._entries = entries  # all of them already (a backend that cannot list names)
        self._names = names
        self._size = size
        self._shape: Shape | None = None  # see `shaped`
        self._at = 0
        self._next: defer.Deferred | None = None
        self._started = False
        self._closed = False

    @classmethod
    def of(cls, entries: list[Entry], size: int = LIST_BATCH) -> EntryBatches:
        """Batches of entries already read (shaped, if asked, on the reactor)."""
        return cls([], None, size, entries)

    def shaped(self, shape: Shape) -> EntryBatches:
        """These batches, each given as `shape` of its entries (a listing's lines), made
        where the batch is read: a local folder's on the disk thread, so that the reactor
        only sends them. Before the first `next`."""
        if self._started:
            raise RuntimeError("EntryBatches.shaped after the first batch")
        self._shape = shape
        return self

    def _start(self) -> defer.Deferred | None:
        at, self._at = self._at, self._at + self._size
        if self._entries is not None:
            chunk = self._entries[at : at + self._size]
            if not chunk:
                return None
            return defer.succeed(chunk if self._shape is None else self._shape(chunk))
        names = self._names[at : at + self._size]
        return defer.ensureDeferred(self._fetch(names, self._shape)) if names else None

    async def next(self) -> Any:
        """The next batch (its entries, or its shape: entries of names gone meanwhile are
        left out, so a batch may be empty), or None at the end."""
        if not self._started:
            self._started = True
            self._next = self._start()
        d, self._next = self._next, None
        if d is None:
            return None
        batch = await d
        if not self._closed:
            self._next = self._start()  # read ahead while the caller sends this one
        return batch

    def close(self) -> None:
        """Stop reading ahead: a read in flight is left to finish, its result dropped."""
        self._closed = True
        d, self._next = self._next, None
        if d is not None:
            d.addErrback(lambda _: None)
