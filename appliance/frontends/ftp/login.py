"""Sign-in for FTP: one credentials checker over core.auth.login, and the realm
that opens the profile's files as an IFTPShell."""

from __future__ import annotations

from twisted.cred.checkers import ICredentialsChecker
from twisted.cred.credentials import IUsernamePassword
from twisted.cred.portal import IRealm, Portal
from twisted.protocols.ftp import IFTPShell
from zope.interface import implementer

from ...threads import as_deferred
from .shell import CoreShell


def _text(value: str | bytes) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


@implementer(IUsernamePassword)
class PeerCredentials:
    """A username and password, with the address they came from (for the core's
    allow-list, throttle and audit row) and whether they came over TLS."""

    def __init__(self, username: str | bytes, password: str | bytes, address: str, encrypted: bool = False):
        self.username = username
        self.password = password
        self.address = address
        self.encrypted = encrypted

    def checkPassword(self, password) -> bool:  # the interface asks for it; the core checks
        raise NotImplementedError("passwords are checked by core.auth.login")


@implementer(ICredentialsChecker)
class CoreChecker:
    """The one checker: every FTP sign-in goes through core.auth.login."""

    credentialInterfaces = (IUsernamePassword,)

    def __init__(self, auth, protocol: str = "ftp"):
        self._auth = auth
        self._protocol = protocol

    def requestAvatarId(self, credentials):
        """The signed-in Account (errors.AuthenticationFailed with the message to show)."""
        return as_deferred(self._login(credentials))

    async def _login(self, credentials):
        return await self._auth.login(
            _text(credentials.username),
            protocol=self._protocol,
            address=getattr(credentials, "address", ""),
            password=_text(credentials.password),
            encrypted=getattr(credentials, "encrypted", False),
        )


@implementer(IRealm)
class FilesRealm:
    """Turns a signed-in Account into a CoreShell over its FileSession.

    The mind is the client's address, which the session records in audit rows.
    """

    def __init__(self, files):
        self._files = files

    def requestAvatar(self, account, mind, *interfaces):
        if IFTPShell not in interfaces:
            raise NotImplementedError("only IFTPShell avatars are offered")
        return as_deferred(self._avatar(account, mind))

    async def _avatar(self, account, address):
        session = await self._files.session(account, "ftp", address or "")
        shell = CoreShell(session)
        return IFTPShell, shell, shell.logout


def ftp_portal(core) -> Portal:
    return Portal(FilesRealm(core.files), [CoreChecker(core.auth)])
