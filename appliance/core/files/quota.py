"""Bytes and files in use under each home folder.

Counted once by a walk (on the work pool), then kept current by every change the
files service makes; uploads in flight are counted as pending so two parallel
uploads cannot both squeeze under the limit. A count older than REFRESH is
walked again, catching changes made outside the appliance.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import QuotaExceeded
from ...threads import Threads
from ..audit import human_bytes

REFRESH = 600.0  # seconds


@dataclass
class Usage:
    bytes: int
    files: int
    counted_at: float
    pending: int = 0  # bytes written by uploads not yet committed


class QuotaTracker:
    def __init__(self, threads: Threads, clock):
        self._threads = threads
        self._clock = clock
        self._usage: dict[str, Usage] = {}

    async def usage(self, root: str, count) -> Usage:
        """The usage of the home `root` (a backend's), counted again when older than
        REFRESH: `count` is an async callable returning (bytes, files)."""
        current = self._usage.get(root)
        if current is None or self._clock.seconds() - current.counted_at > REFRESH:
            total, files = await count()
            current = self._usage.get(root)  # another session may have counted meanwhile
            pending = current.pending if current else 0
            current = Usage(total, files, self._clock.seconds(), pending)
            self._usage[root] = current
        return current

    def tracked(self, root: str) -> Usage | None:
        return self._usage.get(root)

    def forget(self, root: str) -> None:
        self._usage.pop(root, None)


class Limits:
    """A profile's limits applied to the usage of its home."""

    def __init__(self, usage: Usage | None, quota_bytes: int | None, quota_files: int | None):
        self.usage = usage
        self.quota_bytes = quota_bytes
        self.quota_files = quota_files

    def check_new_file(self) -> None:
        if self.usage and self.quota_files is not None and self.usage.files >= self.quota_files:
            raise QuotaExceeded(f"Your quota of {self.quota_files} files is used up; delete some files first.")

    def grow(self, growth: int, allowance: int) -> None:
        """Count `growth` more pending bytes; refuse past the quota (`allowance`: bytes this
        upload will free when it replaces a file)."""
        if self.usage is None or growth <= 0:
            return
        if self.quota_bytes is not None:
            after = self.usage.bytes + self.usage.pending + growth - allowance
            if after > self.quota_bytes:
                raise QuotaExceeded(
                    f"Your storage quota of {human_bytes(self.quota_bytes)} is used up: "
                    "the upload was stopped and nothing was saved."
                )
        self.usage.pending += growth

    def room(self, allowance: int) -> int | None:
        """How many more pending bytes `grow` would take (None: no byte quota)."""
        if self.usage is None or self.quota_bytes is None:
            return None
        return self.quota_bytes - self.usage.bytes - self.usage.pending + allowance

    def release(self, pending: int) -> None:
        if self.usage is not None:
            self.usage.pending = max(0, self.usage.pending - pending)

    def committed(self, size: int, replaced: int | None) -> None:
        """A file of `size` bytes now stands where `replaced` bytes were (None: a new file)."""
        if self.usage is not None:
            self.usage.bytes += size - (replaced or 0)
            if replaced is None:
                self.usage.files += 1

    def removed(self, size: int) -> None:
        if self.usage is not None:
            self.usage.bytes = max(0, self.usage.bytes - size)
            self.usage.files = max(0, self.usage.files - 1)

    def free_bytes(self) -> int | None:
        if self.usage is None or self.quota_bytes is None:
            return None
        return max(0, self.quota_bytes - self.usage.bytes - self.usage.pending)
