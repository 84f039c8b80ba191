"""The one Twisted cred adapter over the core's sign-in (core/signin.py), for SFTP and FTP.

The checker hands passwords and signature-checked SSH keys to `core.signin.sign_in`,
which returns the live session (the files already open, the connection's ticket
signed in, one audit row written); the realm only wraps it in the protocol's avatar
(SFTP's SftpUser, FTP's CoreShell). Core refusals (AuthenticationFailed, Unavailable)
pass through so each protocol can show their message.
"""

from __future__ import annotations

from collections.abc import Callable

from twisted.conch.error import ValidPublicKey
from twisted.conch.ssh import keys
from twisted.cred.checkers import ICredentialsChecker
from twisted.cred.credentials import ISSHPrivateKey, IUsernamePassword
from twisted.cred.error import UnauthorizedLogin
from twisted.cred.portal import IRealm, Portal
from twisted.internet import defer
from zope.interface import implementer

from ..deferreds import as_deferred


def text(value: str | bytes) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


@implementer(IUsernamePassword)
class PeerCredentials:
    """A username and password, with the address they came from (for the core's
    allow-list, throttle and audit row), whether they came over TLS, and the
    connection's ticket (core/connections.py)."""

    def __init__(
        self, username: str | bytes, password: str | bytes, address: str, encrypted: bool = False, ticket=None
    ):
        self.username = username
        self.password = password
        self.address = address
        self.encrypted = encrypted
        self.ticket = ticket

    def checkPassword(self, password) -> bool:  # the interface asks for it; the core checks
        raise NotImplementedError("passwords are checked by core.signin")


@implementer(ICredentialsChecker)
class CoreChecker:
    """The one checker: every SFTP and FTP sign-in goes through core.signin.sign_in.

    Credentials carry `address`, and may carry `encrypted` and `ticket` (set by the
    front end). The avatar id is the core's LiveSession.
    """

    credentialInterfaces = (IUsernamePassword, ISSHPrivateKey)

    def __init__(self, signin, protocol: str):
        self._signin = signin
        self._protocol = protocol

    def requestAvatarId(self, credentials):
        return as_deferred(self._check(credentials))

    async def _check(self, credentials):
        username = text(credentials.username)
        context = {
            "protocol": self._protocol,
            "address": getattr(credentials, "address", ""),
            "encrypted": getattr(credentials, "encrypted", False),
            "ticket": getattr(credentials, "ticket", None),
        }
        if ISSHPrivateKey.providedBy(credentials):
            if credentials.signature is None:
                # "may I use this key?": answer without signing in or logging
                if await self._signin.accepts_key(username, credentials.blob):
                    raise ValidPublicKey()
                raise UnauthorizedLogin("key not accepted")
            try:
                verified = keys.Key.fromString(credentials.blob).verify(credentials.signature, credentials.sigData)
            except (keys.BadKeyError, ValueError):
                verified = False
            if not verified:
                raise UnauthorizedLogin("bad signature")
            return await self._signin.sign_in(username, public_key=credentials.blob, **context)
        return await self._signin.sign_in(username, password=text(credentials.password), **context)


@implementer(IRealm)
class SessionRealm:
    """Wraps the core's live session in the protocol's avatar: `wrap(live)` returns
    (avatar, logout)."""

    def __init__(self, interface, wrap: Callable):
        self._interface = interface
        self._wrap = wrap

    def requestAvatar(self, live, mind, *interfaces):
        if self._interface not in interfaces:
            raise NotImplementedError(f"only {self._interface.__name__} avatars are offered")
        avatar, logout = self._wrap(live)
        return defer.succeed((self._interface, avatar, logout))


def core_portal(signin, protocol: str, interface, wrap: Callable) -> Portal:
    """The portal of one protocol over the core's sign-in."""
    return Portal(SessionRealm(interface, wrap), [CoreChecker(signin, protocol)])
