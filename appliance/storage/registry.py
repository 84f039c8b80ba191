"""Source type -> storage backend: the one place the files rules ask for a profile's home,
and the one place the core asks how a type of source's config is checked.

The composition root (service.py `storage_backends`) decides which backends this
appliance has and hands the registry to the core; the core never builds one."""

from __future__ import annotations

from typing import Protocol

from ..errors import Unavailable
from ..models import Source
from .interface import Backend
from .local.backend import LocalSources
from .s3.backend import S3Homes
from .sftp.backend import SftpHomes


class SourceConfig(Protocol):
    """How an admin's config of one type of source is checked (storage/<type>/config.py)."""

    async def clean(self, config: dict, old: dict) -> dict:
        """The config as stored (secrets sealed), once the source was tried; raises
        errors.Invalid with the problems under the field "config" ("config.host must be
        ..."). `old`: the source's config before this change, {} for a new source."""
        ...


class Kind(Protocol):
    """One type of source (local, sftp, s3): opens its homes and sweeps its leftovers.
    `config`: its config check, None when the core does it (local folders: which one an
    organisation may use depends on the others' sources, see core/source_admin.py)."""

    config: SourceConfig | None

    async def open(self, source: Source, home_parts: list[str]) -> Backend: ...
    async def sweep(self, source: Source, now: float) -> int: ...


class Backends:
    """The storage registry: the backend of each type of source this appliance serves.
    Local sources always; remote SFTP servers and S3 buckets when given."""

    def __init__(self, local: LocalSources, sftp: SftpHomes | None = None, s3: S3Homes | None = None):
        self.local = local
        self.sftp = sftp
        self.s3 = s3
        self._kinds: dict[str, Kind] = {"local": local}
        if sftp is not None:
            self._kinds["sftp"] = sftp
        if s3 is not None:
            self._kinds["s3"] = s3

    def kind(self, source_type: str) -> Kind | None:
        """The backend of a type of source; None when this appliance has none for it."""
        return self._kinds.get(source_type)

    def config(self, source_type: str) -> SourceConfig | None:
        """How a type of source's config is checked; None when this appliance has no backend
        for it or the type's check is the core's (local)."""
        kind = self._kinds.get(source_type)
        return None if kind is None else kind.config

    async def open(self, source: Source, home_parts: list[str]) -> Backend:
        """The home `home_parts` on `source` (made on first use)."""
        kind = self._kinds.get(source.type)
        if kind is None:
            raise Unavailable(f"The source {source.name!r} is of type {source.type}, which is not available yet.")
        return await kind.open(source, home_parts)
