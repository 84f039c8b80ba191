"""Source type -> storage backend: the one place the files rules ask for a profile's home."""

from __future__ import annotations

from typing import Protocol

from ..errors import Unavailable
from ..models import Source
from .interface import Backend


class Kind(Protocol):
    """One type of source (local, sftp, s3): opens its homes and sweeps its leftovers."""

    async def open(self, source: Source, home_parts: list[str]) -> Backend: ...
    async def sweep(self, source: Source, now: float) -> int: ...


class Backends:
    def __init__(self, kinds: dict[str, Kind]):
        self._kinds = kinds

    def kind(self, source_type: str) -> Kind | None:
        """The backend of a type of source; None when this appliance has none for it."""
        return self._kinds.get(source_type)

    async def open(self, source: Source, home_parts: list[str]) -> Backend:
        """The home `home_parts` on `source` (made on first use)."""
        kind = self._kinds.get(source.type)
        if kind is None:
            raise Unavailable(f"The source {source.name!r} is of type {source.type}, which is not available yet.")
        return await kind.open(source, home_parts)
