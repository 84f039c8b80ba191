"""The one mapping from the core's domain errors to FTP replies."""

from __future__ import annotations

from twisted.logger import Logger
from twisted.python.failure import Failure

from ...errors import (
    AlreadyExists,
    AuthenticationFailed,
    Invalid,
    NotEmpty,
    NotFound,
    PermissionDenied,
    QuotaExceeded,
    Unavailable,
)

log = Logger()

INTERNAL_ERROR = "Internal error: the action was not taken."

# Checked in order: the first class the error is an instance of wins.
_CODES: tuple[tuple[type[Exception], int], ...] = (
    (AuthenticationFailed, 530),
    (NotFound, 550),
    (PermissionDenied, 550),
    (NotEmpty, 550),
    (AlreadyExists, 550),
    (QuotaExceeded, 552),
    (Invalid, 553),
    (Unavailable, 451),
)


class TransferAborted(Exception):
    """A transfer ended early (client abort, lost data connection, timeout): 426."""


class DataConnectionFailed(Exception):
    """No data connection could be set up or opened: 425."""


class DataConnectionRefused(Exception):
    """A data connection was refused because it may not be the client's own (its TLS
    handshake did not resume the control connection's session): 522, as vsftpd."""


class BadArgument(Exception):
    """A malformed argument: 501 with this message."""


def ftp_reply(error: BaseException | Failure) -> tuple[int, str]:
    """The reply code and text for an error; unexpected errors are logged with a traceback."""
    failure = error if isinstance(error, Failure) else Failure(error)
    value = failure.value
    for kind, code in _CODES:
        if isinstance(value, kind):
            return code, str(value)
    if isinstance(value, TransferAborted):
        return 426, str(value) or "Transfer aborted."
    if isinstance(value, DataConnectionRefused):
        return 522, str(value)
    if isinstance(value, DataConnectionFailed):
        return 425, str(value) or "Cannot open the data connection."
    log.failure("unexpected error in the FTP front end", failure)
    return 451, INTERNAL_ERROR
