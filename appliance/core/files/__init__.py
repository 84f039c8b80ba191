"""The virtual filesystem over sources: confinement, permissions, quotas, atomic uploads."""

from ...storage.interface import SpaceInfo
from ...storage.local.socket_send import SocketError
from ...storage.paths import TEMP_PREFIX, Entry, split_path, virtual
from .batches import EntryBatches
from .service import FileSession, FilesService, Reader, Writer

__all__ = [
    "Entry",
    "EntryBatches",
    "FileSession",
    "FilesService",
    "Reader",
    "SocketError",
    "SpaceInfo",
    "TEMP_PREFIX",
    "Writer",
    "split_path",
    "virtual",
]
