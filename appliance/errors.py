"""The domain errors every layer raises.

Each front end has exactly one function that maps these to its protocol (SFTP
status codes, FTP reply codes, HTTP JSON errors). The message is written for a
person: it says what went wrong and, where it can, what to do.
"""


class ApplianceError(Exception):
    """Base of every error the core raises on purpose."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class NotFound(ApplianceError):
    """The thing asked for does not exist (or the caller may not know it does)."""


class PermissionDenied(ApplianceError):
    """The caller may not do this."""


class AlreadyExists(ApplianceError):
    """Creating something whose name is taken."""


class QuotaExceeded(ApplianceError):
    """The change would take the profile over its storage quota."""


class Invalid(ApplianceError):
    """Bad input. `fields` maps a field name to its messages, where that helps."""

    def __init__(self, message: str, fields: dict[str, list[str]] | None = None):
        super().__init__(message)
        self.fields = fields or {}


class Unreached(Invalid):
    """A host on the appliance's own networks did not answer as the server a source names:
    one answer whether nothing listens, a firewall drops the connection or another
    service answers, so a source check tells no port's state; the core counts them."""


class NotEmpty(ApplianceError):
    """Removing a folder that still holds entries."""


class Unsupported(ApplianceError):
    """A change this appliance (or this source) does not make: nothing was changed."""


class Gone(ApplianceError):
    """It existed but may not be used any more (an expired or revoked share link)."""


class Unavailable(ApplianceError):
    """Storage or a service the request needs is not usable right now."""


class ClientGone(Unavailable):
    """An upload was dropped at its commit: its client went away before it was saved."""

    def __init__(self, message: str = "The upload was dropped before it was saved: its client went away."):
        super().__init__(message)


class AuthenticationFailed(ApplianceError):
    """Sign-in refused. The message is safe to show to the person signing in.
    `retry_after`: the seconds until a ban on the caller's address ends, if that is why.
    `code`: why, for a client that shows each reason its own way (core/auth.py REFUSALS)."""

    def __init__(self, message: str, retry_after: int | None = None, code: str | None = None):
        super().__init__(message)
        self.retry_after = retry_after
        self.code = code


class RateLimited(ApplianceError):
    """Too many requests of this kind lately (say, mails to one address).
    `retry_after`: the seconds until one is allowed again."""

    def __init__(self, message: str, retry_after: int):
        super().__init__(message)
        self.retry_after = retry_after


class ConfigError(ApplianceError):
    """The configuration or the data dir is unusable; the message says where."""
