"""The one mapping from the core's domain errors to SFTP status codes."""

from __future__ import annotations

from twisted.conch.ssh.filetransfer import (
    FX_FAILURE,
    FX_FILE_ALREADY_EXISTS,
    FX_NO_SUCH_FILE,
    FX_OP_UNSUPPORTED,
    FX_PERMISSION_DENIED,
    SFTPError,
)
from twisted.logger import Logger
from twisted.python.failure import Failure

from ...errors import AlreadyExists, ApplianceError, NotFound, PermissionDenied, QuotaExceeded, Unsupported

log = Logger()


def sftp_error(error: BaseException) -> BaseException:
    """An SFTPError carrying the core's message; EOF and unsupported pass through."""
    if isinstance(error, (SFTPError, EOFError, NotImplementedError)):
        return error
    if isinstance(error, NotFound):
        return SFTPError(FX_NO_SUCH_FILE, error.message)
    if isinstance(error, (PermissionDenied, QuotaExceeded)):
        return SFTPError(FX_PERMISSION_DENIED, error.message)
    if isinstance(error, Unsupported):
        return SFTPError(FX_OP_UNSUPPORTED, error.message)
    if isinstance(error, AlreadyExists):
        # OpenSSH shows FX_FAILURE's message; FILE_ALREADY_EXISTS is v5+ only
        return SFTPError(FX_FAILURE, error.message)
    if isinstance(error, ApplianceError):
        return SFTPError(FX_FAILURE, error.message)
    log.failure("unexpected error in the SFTP front end", Failure(error))
    return SFTPError(FX_FAILURE, "Internal error: the request was not carried out.")


__all__ = ["sftp_error", "FX_OP_UNSUPPORTED", "FX_FILE_ALREADY_EXISTS"]
