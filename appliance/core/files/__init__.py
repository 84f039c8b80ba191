"""The virtual filesystem over sources: confinement, permissions, quotas, atomic uploads."""

from .handles import Reader, Writer
from .service import FileSession, FilesService, SpaceInfo
from .tree import TEMP_PREFIX, Entry

__all__ = ["Entry", "FileSession", "FilesService", "Reader", "SpaceInfo", "TEMP_PREFIX", "Writer"]
