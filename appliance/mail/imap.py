"""A small IMAP client for mailbox polling, on the reactor (twisted.mail).

Connects to an address checked beforehand (see appliance/netcheck.py), with implicit
TLS, STARTTLS or none; verifies certificates against the host name unless the
mailbox opts out; and turns every failure into a sentence an admin can act on.
"""

from __future__ import annotations

import re

from OpenSSL import SSL
from service_identity import VerificationError
from twisted.internet import defer, endpoints, error, interfaces, protocol, ssl
from twisted.mail import imap4

from ..errors import Unavailable
from .twisted_private import QuietByeClient

CONNECT_TIMEOUT = 30
COMMAND_TIMEOUT = 120


class MailboxError(Unavailable):
    """Polling failed; the message says why, for the run history."""


QUOTABLE = re.compile(rb"[\x20-\x7e]*")  # what a quoted string may hold: printable ASCII (no CR, LF, NUL, 8-bit)


def imap_strings(values: list[bytes]) -> list[bytes]:
    """Arguments as IMAP strings (RFC 3501 4.3), each exactly one argument whatever it holds:
    quoted ("..." with \\ and " escaped) when it is printable ASCII, otherwise a synchronizing
    literal ({length} CRLF, then the bytes as they are), so a CR LF inside a value can never
    end the command and start another. Returns the lines to send: the first with the
    command, each next one after the server's '+' continuation."""
    lines: list[bytes] = []
    line = b""
    for i, value in enumerate(values):
        separator = b" " if i else b""
        if QUOTABLE.fullmatch(value):
            line += separator + b'"' + value.replace(b"\\", b"\\\\").replace(b'"', b'\\"') + b'"'
        else:
            lines.append(line + separator + b"{%d}" % len(value))
            line = value
    return [*lines, line]


class _Client(QuietByeClient):
    timeout = COMMAND_TIMEOUT  # drop a server that stops answering mid-command

    def __init__(self, context=None):
        super().__init__(context)
        self.greeting: defer.Deferred = defer.Deferred()
        self.lost: defer.Deferred = defer.Deferred()

    def serverGreeting(self, caps):
        if not self.greeting.called:
            self.greeting.callback(caps)

    def connectionLost(self, reason):
        super().connectionLost(reason)
        if not self.greeting.called:
            self.greeting.errback(reason)
        if not self.lost.called:
            self.lost.callback(None)

    def login(self, username: bytes, password: bytes):
        """LOGIN with both values as IMAP strings (see imap_strings). Twisted's own login quotes
        them without escaping CR LF, so a password holding one was sent as further commands.
        As Twisted's does, it first upgrades a plain connection whose server offers STARTTLS."""
        capabilities = defer.maybeDeferred(self.getCapabilities)

        def signed_in(caps):
            plain = interfaces.ISSLTransport(self.transport, None) is None
            upgradable = interfaces.ITLSTransport(self.transport, None) is not None
            if plain and upgradable and not self.startedTLS and b"STARTTLS" in caps:
                upgraded = self.startTLS()
                upgraded.addCallback(lambda _: self.send_strings(b"LOGIN", [username, password]))
                return upgraded
            return self.send_strings(b"LOGIN", [username, password])

        return capabilities.addCallback(signed_in)

    def send_strings(self, command: bytes, values: list[bytes]) -> defer.Deferred:
        """`command` with `values` as its arguments, each one IMAP string (see imap_strings)."""
        first, *rest = imap_strings(values)

        def go_on(_said):  # the server's '+': send the literal and what follows it
            if rest:
                self.sendLine(rest.pop(0))

        return self.sendCommand(imap4.Command(command, first, (), go_on))


class _OneClient(protocol.Factory):
    """connectProtocol's factory without its 'Starting/Stopping factory' log lines."""

    noisy = False

    def __init__(self, client: _Client):
        self._client = client

    def buildProtocol(self, addr):
        return self._client


def _tls_options(hostname: str, verify: bool):
    if verify:
        return ssl.optionsForClientTLS(hostname, extraCertificateOptions={"raiseMinimumTo": ssl.TLSVersion.TLSv1_2})
    return ssl.CertificateOptions(verify=False, raiseMinimumTo=ssl.TLSVersion.TLSv1_2)


def _reply_text(error: imap4.IMAP4Exception) -> str:
    """The text of the server's NO or BAD reply."""
    return error.args[0].decode(errors="replace") if error.args and isinstance(error.args[0], bytes) else str(error)


def _describe(failure_or_error, host: str, port: int) -> str:
    """What went wrong, in words, for a connection or TLS failure."""
    value = getattr(failure_or_error, "value", failure_or_error)
    if isinstance(value, error.ConnectionRefusedError):
        return f"The mail server {host}:{port} refused the connection (nothing listening on that port?)."
    if isinstance(value, (error.TimeoutError, defer.TimeoutError, defer.CancelledError)):
        return f"No answer from the mail server {host}:{port} within {CONNECT_TIMEOUT} seconds."
    if isinstance(value, VerificationError):
        return (
            f"The TLS certificate of {host} is for another name. "
            "Use the name on the certificate as the host, or turn off certificate verification for this mailbox."
        )
    if isinstance(value, SSL.Error):
        detail = str(value)
        if "certificate verify failed" in detail or "CERTIFICATE_VERIFY_FAILED" in detail:
            return (
                f"The TLS certificate of {host} could not be verified (self-signed or for another name). "
                "Fix the server's certificate or turn off certificate verification for this mailbox."
            )
        if "wrong version number" in detail or "packet length too long" in detail or "record layer failure" in detail:
            return (
                f"The mail server {host}:{port} did not answer in TLS: the port may be for STARTTLS or plain IMAP "
                "(usually 143). Choose STARTTLS, or the TLS port (usually 993)."
            )
        return f"TLS with {host}:{port} failed: {detail}"
    if isinstance(value, (error.ConnectionDone, error.ConnectionLost)):
        return f"The mail server {host}:{port} closed the connection unexpectedly (wrong port or TLS setting?)."
    if isinstance(value, imap4.IMAP4Exception):
        return f"The mail server said: {value.args[0].decode(errors='replace') if value.args and isinstance(value.args[0], bytes) else value}"
    return f"Talking to the mail server {host}:{port} failed: {value}"


class ImapConnection:
    """One signed-in connection; use `open`, then the commands, then `close`."""

    def __init__(self, client: _Client, host: str, port: int, reactor):
        self._client = client
        self._reactor = reactor
        self.host = host
        self.port = port

    @classmethod
    async def open(
        cls,
        reactor,
        *,
        address: str,
        host: str,
        port: int,
        security: str,
        verify_tls: bool,
        username: str,
        password: str,
    ) -> ImapConnection:
        endpoint = endpoints.HostnameEndpoint(reactor, address, port, timeout=CONNECT_TIMEOUT)
        if security == "tls":
            endpoint = endpoints.wrapClientTLS(_tls_options(host, verify_tls), endpoint)
        client = _Client()
        try:
            await endpoint.connect(_OneClient(client))
            greeting = client.greeting
            greeting.addTimeout(CONNECT_TIMEOUT, reactor)
            try:
                caps = await greeting
            except (defer.TimeoutError, defer.CancelledError):
                if security == "tls":
                    raise
                raise MailboxError(
                    f"The mail server {host}:{port} sent no IMAP greeting within {CONNECT_TIMEOUT} seconds: "
                    "the port may expect TLS from the start (usually 993). Choose TLS, or the STARTTLS port (143)."
                ) from None
            if security == "starttls":
                if b"STARTTLS" not in caps:
                    caps = await client.getCapabilities(useCache=False)
                if b"STARTTLS" not in caps:
                    raise MailboxError(f"The mail server {host}:{port} does not offer STARTTLS.")
                await client.startTLS(_tls_options(host, verify_tls))
        except MailboxError:
            client.transport and client.transport.abortConnection()
            raise
        except Exception as e:  # noqa: BLE001 - every cause becomes a sentence
            if client.transport:
                client.transport.abortConnection()
            raise MailboxError(_describe(e, host, port)) from None
        connection = cls(client, host, port, reactor)
        try:
            await client.login(username.encode(), password.encode())
        except imap4.IMAP4Exception:
            await connection.close()
            raise MailboxError(f"The mail server {host} refused the username or password.") from None
        except Exception as e:  # noqa: BLE001
            await connection.close()
            raise MailboxError(_describe(e, host, port)) from None
        return connection

    async def _call(self, what: str, command, *args, **kwargs):
        try:
            return await command(*args, **kwargs)
        except imap4.IMAP4Exception as e:
            raise MailboxError(f"{what} failed: {_reply_text(e)}") from None
        except Exception as e:  # noqa: BLE001
            raise MailboxError(_describe(e, self.host, self.port)) from None

    async def select(self, folder: str) -> int:
        """Select the folder; return its UIDVALIDITY."""
        try:
            info = await self._client.select(folder)
        except imap4.IMAP4Exception:
            raise MailboxError(f"The folder {folder!r} does not exist on the mail server.") from None
        except Exception as e:  # noqa: BLE001
            raise MailboxError(_describe(e, self.host, self.port)) from None
        return int(info.get("UIDVALIDITY") or 0)

    async def unseen(self) -> list[int]:
        return sorted(await self._call("Searching for new messages", self._client.search, "UNSEEN", uid=True))

    async def size(self, uid: int) -> int:
        reply = await self._call("Reading a message size", self._client.fetchSize, str(uid), uid=True)
        for values in reply.values():
            if values.get("UID") == str(uid):
                return int(values["RFC822.SIZE"])
        raise MailboxError(f"Message {uid} vanished from the server.")

    async def fetch(self, uid: int) -> bytes:
        """The whole message, without marking it seen (BODY.PEEK[])."""
        reply = await self._call("Fetching a message", self._client.fetchSpecific, str(uid), uid=True, peek=True)
        for items in reply.values():
            for item in items:
                if "UID" in item and item[item.index("UID") + 1] == str(uid) and "BODY" in item:
                    body = item[-1]
                    return body.encode("charmap") if isinstance(body, str) else body
        raise MailboxError(f"Message {uid} vanished from the server.")

    async def mark_seen(self, uid: int) -> None:
        await self._call("Marking a message seen", self._client.addFlags, str(uid), ["\\Seen"], uid=True)

    async def move(self, uid: int, folder: str) -> None:
        """Copy the message into `folder`, made first if the server says it is missing
        (RFC 3501 6.4.7: [TRYCREATE]), then delete it here."""
        what = f"Copying a message to {folder!r}"
        try:
            await self._client.copy(str(uid), folder, uid=True)
        except imap4.IMAP4Exception as e:
            if "TRYCREATE" not in _reply_text(e):
                raise MailboxError(f"{what} failed: {_reply_text(e)}") from None
            await self._call(f"Creating the folder {folder!r} to move messages into", self._client.create, folder)
            await self._call(what, self._client.copy, str(uid), folder, uid=True)
        except Exception as e:  # noqa: BLE001
            raise MailboxError(_describe(e, self.host, self.port)) from None
        await self.delete(uid)

    async def delete(self, uid: int) -> None:
        await self._call("Deleting a message", self._client.addFlags, str(uid), ["\\Seen", "\\Deleted"], uid=True)
        await self._call("Expunging", self._client.expunge)

    async def close(self) -> None:
        client = self._client
        if client.transport is None or client.lost.called:
            return
        try:
            logout = client.logout()
            logout.addTimeout(10, self._reactor)
            await logout
        except Exception:  # noqa: BLE001 - closing anyway
            pass
        if not client.lost.called:
            client.transport.abortConnection()
