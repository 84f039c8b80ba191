"""The names of paths every layer shares, kept here for the core's callers: they live
in appliance/storage (paths.py; the local disk's confined tree in local/tree.py)."""

from ...storage.local.tree import Location, Tree, os_error, sweep_uploads
from ...storage.paths import RESUMABLE_PREFIX, TEMP_PREFIX, Entry, check_name, has_control, split_path, virtual

__all__ = [
    "RESUMABLE_PREFIX",
    "TEMP_PREFIX",
    "Entry",
    "Location",
    "Tree",
    "check_name",
    "has_control",
    "os_error",
    "split_path",
    "sweep_uploads",
    "virtual",
]
