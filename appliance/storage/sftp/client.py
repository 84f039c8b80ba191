"""Sources on another SFTP server: conch's SSH client, async on the reactor.

A pool per source keeps a few SSH connections, each running one SFTP
subsystem; requests are pipelined on them and a dropped connection is replaced
on the next request. The remote host key must match the source's pinned SHA256
fingerprint. Every remote path is the source's folder joined with components
that `split_path` already checked (no '..', no '/', no reserved names), so a
path cannot leave it. Uploads go to a temporary name in the same remote folder
and are renamed into place on a clean close; an abort removes them.
"""

from __future__ import annotations

import base64
import hashlib
import posixpath
import secrets
import stat
import struct
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from twisted.conch.ssh import channel, common, connection, filetransfer, keys, transport, userauth
from twisted.internet import defer, error, protocol
from twisted.internet.defer import Deferred
from twisted.logger import Logger
from twisted.python.failure import Failure

from ... import netcheck
from ...errors import AlreadyExists, ApplianceError, Invalid, NotFound, PermissionDenied, Unavailable
from ...text import control_characters
from ..interface import Budget as Limits
from ..paths import ENTRY_MODE, RESUMABLE_PREFIX, TEMP_PREFIX, Entry, has_control, virtual
from ..remote_io import RemoteDownload, RemoteUpload
from ..sealed import SealedSecrets

log = Logger()

CONNECT_TIMEOUT = 15  # seconds for TCP, key exchange and sign-in together
POOL_SIZE = 3  # connections per source
BUSY = 16  # outstanding requests on every connection before the pool opens another
BLOCK = 64 * 1024  # bytes per remote READ/WRITE request
READ_AHEAD = 32  # blocks requested ahead of a sequential reader
WRITE_WINDOW = 4 << 20  # bytes of WRITE requests in flight before the writer makes its caller wait
TEMP_STALE = 3600  # seconds without a write after which an upload's temporary file found at start-up is a crash's
SWEEP_LIMIT = 200_000  # entries a start-up sweep visits on one source, at most
FILE_MODE = 0o640
DIR_MODE = 0o750


def fingerprint(blob: bytes) -> str:
    """OpenSSH's form: SHA256:<base64 without padding>."""
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def normalise_fingerprint(value: str) -> str:
    value = value.strip()
    if not value.startswith("SHA256:") or len(value) != 50:
        raise Invalid(
            "Give the host key's SHA256 fingerprint as ssh-keygen -lf shows it (SHA256:...).",
            {"config": ["host_key_fingerprint must look like SHA256:<43 characters>."]},
        )
    try:
        base64.b64decode(value[7:] + "=", validate=True)
    except ValueError:
        raise Invalid(
            "That fingerprint is not valid base64.", {"config": ["host_key_fingerprint is not valid."]}
        ) from None
    return value


class RemoteProblem(Unavailable):
    """The remote server cannot be used; `field` is the config field to fix. `unreached`:
    no SSH server answered at an address on the appliance's own networks (`unreached`
    below: one message whatever the port's state)."""

    def __init__(self, message: str, field: str = "host", unreached: bool = False):
        super().__init__(message)
        self.field = field
        self.unreached = unreached


def unreached(remote: Remote) -> RemoteProblem:
    """What a connection to a host on the appliance's own networks that never showed an
    SSH server answers: the same whether nothing listens (refused), a firewall drops it
    (timed out) or another service answers (closed, or silent), so a source check is no
    port scanner of the appliance's networks. Elsewhere each case is told as it is."""
    return RemoteProblem(
        f"No SSH server answered at {remote.name}: check the host and the port (nothing may listen there, a "
        "firewall may drop the connection, or another service may answer).",
        unreached=True,
    )


@dataclass(frozen=True)
class Remote:
    """What it takes to connect: the source's config with its secrets decrypted."""

    host: str
    port: int
    username: str
    password: str
    private_key: str
    fingerprint: str  # "" until pinned
    path: str  # the remote folder ("" for the login folder)
    allow_loopback: bool

    @property
    def name(self) -> str:
        return f"{self.host}:{self.port}"

    def base(self) -> str:
        return self.path.rstrip("/") or ("/" if self.path.startswith("/") else ".")


def _encode(path: str) -> bytes:
    return path.encode("utf-8", "surrogateescape")


def remote_error(e: BaseException, path: str, remote: Remote | None = None) -> ApplianceError:
    """An SFTP status or a lost connection as the domain error a person can act on."""
    where = f" on {remote.name}" if remote else ""
    if isinstance(e, ApplianceError):
        return e
    if isinstance(e, filetransfer.SFTPError):
        code = e.code
        if code == filetransfer.FX_NO_SUCH_FILE:
            return NotFound(f"No such file or folder: {path}")
        if code == filetransfer.FX_PERMISSION_DENIED:
            return PermissionDenied(f"The remote server{where} refused access to {path}.")
        if code == filetransfer.FX_FILE_ALREADY_EXISTS:
            return AlreadyExists(f"A file or folder named {path} already exists.")
        if code in (filetransfer.FX_NO_CONNECTION, filetransfer.FX_CONNECTION_LOST):
            return Unavailable(f"The connection to the remote server{where} was lost; try again.")
        detail = f" ({e.message})" if e.message and e.message.lower() != "failure" else ""
        return Unavailable(f"The remote server{where} could not do that on {path}{detail}.")
    if isinstance(e, NotImplementedError):
        return Unavailable(f"The remote server{where} does not support that operation on {path}.")
    if isinstance(e, error.ConnectionLost | error.ConnectionDone | ConnectionError):
        return Unavailable(f"The connection to the remote server{where} was lost; try again.")
    return Unavailable(f"The remote storage failed on {path}: {e}")


# -- one SSH connection with its SFTP client ------------------------------------------------------


class _Attempt:
    """One connection being made: its outcome, and what went wrong on the way."""

    def __init__(self, remote: Remote, inward: bool = False):
        self.remote = remote
        self.inward = inward  # the address is on the appliance's own networks (netcheck.inward)
        self.ready: Deferred = Deferred()
        self.seen_fingerprint = ""
        self.problem: RemoteProblem | None = None
        self.signing_in = False
        self.transport: _Transport | None = None
        self.client: _Client | None = None
        self.on_lost: Callable[[], None] = lambda: None

    def showed_ssh(self) -> bool:
        """Whether the peer answered with an SSH version line (it is an SSH server)."""
        return bool(self.transport is not None and getattr(self.transport, "otherVersionString", None))

    def fail(self, problem: RemoteProblem) -> None:
        if self.inward and not self.showed_ssh():
            problem = unreached(self.remote)
        if self.problem is None:
            self.problem = problem
        if not self.ready.called:
            self.ready.errback(problem)


class _Client(filetransfer.FileTransferClient):
    def __init__(self, attempt: _Attempt):
        super().__init__()
        self.attempt = attempt
        self.extensions: dict[bytes, bytes] = {}

    def gotServerVersion(self, serverVersion, extData):
        self.extensions = dict(extData)
        if not self.attempt.ready.called:
            self.attempt.ready.callback(self)

    def connectionLost(self, reason):
        super().connectionLost(reason)
        self.attempt.transport and self.attempt.transport.loseConnection()


class _Channel(channel.SSHChannel):
    name = b"session"

    def __init__(self, attempt: _Attempt, **kw):
        super().__init__(**kw)
        self.attempt = attempt

    def channelOpen(self, specificData):
        d = self.conn.sendRequest(self, b"subsystem", common.NS(b"sftp"), wantReply=True)
        d.addCallbacks(self._started, self._refused)

    def _started(self, _):
        self.client = _Client(self.attempt)
        self.attempt.client = self.client
        self.client.makeConnection(self)
        self.dataReceived = self.client.dataReceived

    def _refused(self, _failure):
        self.attempt.fail(RemoteProblem(f"{self.attempt.remote.name} has no SFTP service for this account."))
        self.loseConnection()

    def openFailed(self, reason):
        self.attempt.fail(RemoteProblem(f"{self.attempt.remote.name} refused a session: {reason}."))

    def closed(self):
        client = getattr(self, "client", None)
        if client is not None:
            client.connectionLost(error.ConnectionDone())
        self.conn.transport.loseConnection()


class _Connection(connection.SSHConnection):
    def __init__(self, attempt: _Attempt):
        super().__init__()
        self.attempt = attempt

    def serviceStarted(self):
        super().serviceStarted()
        self.attempt.signing_in = False
        self.openChannel(_Channel(self.attempt, conn=self))


class _UserAuth(userauth.SSHUserAuthClient):
    def __init__(self, attempt: _Attempt, conn: _Connection):
        super().__init__(_encode(attempt.remote.username), conn)
        self.attempt = attempt
        self._key = keys.Key.fromString(attempt.remote.private_key.encode()) if attempt.remote.private_key else None
        self._key_offered = False
        self._password_offered = False

    def getPublicKey(self):
        if self._key is None or self._key_offered:
            return None
        self._key_offered = True
        return self._key.public()

    def getPrivateKey(self):
        return defer.succeed(self._key)

    def getPassword(self, prompt=None):
        if not self.attempt.remote.password or self._password_offered:
            return defer.fail(NotImplementedError())
        self._password_offered = True
        return defer.succeed(self.attempt.remote.password.encode())


class _Transport(transport.SSHClientTransport):
    def __init__(self, attempt: _Attempt):
        super().__init__()
        self.attempt = attempt
        attempt.transport = self

    def verifyHostKey(self, hostKey, fingerprint_):
        seen = fingerprint(hostKey)
        self.attempt.seen_fingerprint = seen
        pinned = self.attempt.remote.fingerprint
        if pinned and pinned != seen:
            problem = RemoteProblem(
                f"The host key of {self.attempt.remote.name} has changed: the source expects {pinned}, the server "
                f"presented {seen}. The connection was refused. If the server was reinstalled, confirm the new key "
                "and save it as the source's host_key_fingerprint; otherwise someone may be intercepting the "
                "connection.",
                "host_key_fingerprint",
            )
            self.attempt.fail(problem)
            return defer.fail(problem)
        return defer.succeed(True)

    def connectionSecure(self):
        self.attempt.signing_in = True
        self.requestService(_UserAuth(self.attempt, _Connection(self.attempt)))

    def receiveError(self, reasonCode, description):
        if reasonCode == transport.DISCONNECT_NO_MORE_AUTH_METHODS_AVAILABLE:
            self._refused_credentials()
        super().receiveError(reasonCode, description)

    def sendDisconnect(self, reason, desc):
        if reason == transport.DISCONNECT_NO_MORE_AUTH_METHODS_AVAILABLE:
            self._refused_credentials()
        super().sendDisconnect(reason, desc)

    def _refused_credentials(self):
        remote = self.attempt.remote
        what = " and ".join(w for w, v in (("password", remote.password), ("private key", remote.private_key)) if v)
        self.attempt.fail(
            RemoteProblem(
                f"{remote.name} refused to sign in {remote.username!r} with the {what} given: check the credentials.",
                "password" if remote.password else "private_key",
            )
        )

    def connectionLost(self, reason):
        super().connectionLost(reason)
        if self.attempt.signing_in:
            self._refused_credentials()
        self.attempt.fail(RemoteProblem(f"{self.attempt.remote.name} closed the connection while it was being set up."))
        self.attempt.on_lost()


class _Factory(protocol.ClientFactory):
    def __init__(self, attempt: _Attempt):
        self.attempt = attempt

    def buildProtocol(self, addr):
        return _Transport(self.attempt)

    def clientConnectionFailed(self, connector, reason):
        name = self.attempt.remote.name
        if reason.check(error.ConnectionRefusedError):
            message = f"{name} refused the connection: is an SSH server listening on port {self.attempt.remote.port}?"
        elif reason.check(error.TimeoutError, error.TCPTimedOutError):
            message = f"{name} did not answer within {CONNECT_TIMEOUT} seconds (a firewall, or the wrong host?)."
        else:
            message = f"Cannot connect to {name}: {reason.getErrorMessage()}"
        self.attempt.fail(RemoteProblem(message))


async def connect(reactor, threads, destinations: netcheck.Destinations, remote: Remote) -> _Attempt:
    """Resolve (refusing disallowed addresses), connect to the address checked, check the
    host key, sign in, start SFTP. Raises RemoteProblem (or Invalid for a refused host).
    The username and paths travel as SSH strings (length first), which no character can
    end early; a control character in a stored one (saved before they were refused) is
    refused here all the same, as a remote server may cut a path at a NUL."""
    for field, value in (("username", remote.username), ("path", remote.path)):
        if control_characters(value):
            raise RemoteProblem(
                f"The source's stored {field} holds a control character: an admin must enter it again.", field
            )
    address = await threads.work(destinations.address, remote.host, remote.port, remote.allow_loopback)
    attempt = _Attempt(remote, netcheck.inward(address))
    connector = reactor.connectTCP(address, remote.port, _Factory(attempt), timeout=CONNECT_TIMEOUT)
    timer = reactor.callLater(
        CONNECT_TIMEOUT,
        lambda: attempt.fail(RemoteProblem(f"{remote.name} did not complete the SSH sign-in in time.")),
    )
    try:
        await attempt.ready
    except BaseException:
        connector.disconnect()
        raise
    finally:
        if timer.active():
            timer.cancel()
    return attempt


# -- the pool --------------------------------------------------------------------------------------


class SftpPool:
    """A few connections to one remote server, opened on demand, replaced when dropped."""

    def __init__(self, reactor, threads, destinations: netcheck.Destinations, remote: Remote, size: int = POOL_SIZE):
        self._reactor = reactor
        self._threads = threads
        self._destinations = destinations
        self.remote = remote
        self._size = size
        self._live: list[_Attempt] = []
        self._opening: Deferred | None = None
        self._waiters: list[Deferred] = []
        self.closed = False

    async def client(self) -> _Client:
        if self.closed:
            raise Unavailable(f"The connection to {self.remote.name} was closed.")
        live = [a for a in self._live if a.client is not None and a.client.connected]
        self._live = live
        best = min(live, key=lambda a: len(a.client.openRequests), default=None)
        if best is not None:
            if len(best.client.openRequests) >= BUSY and len(live) < self._size:
                self._start_opening()  # busy: another one for the next requests
            return best.client
        waiter: Deferred = Deferred()
        self._waiters.append(waiter)
        self._start_opening()
        attempt = await waiter
        return attempt.client

    def _start_opening(self) -> None:
        if self._opening is None:
            self._opening = Deferred.fromCoroutine(self._open())
            self._opening.addBoth(self._opened)

    async def _open(self) -> _Attempt:
        attempt = await connect(self._reactor, self._threads, self._destinations, self.remote)
        attempt.on_lost = lambda: self._live.remove(attempt) if attempt in self._live else None
        return attempt

    def _opened(self, result) -> None:
        self._opening = None
        waiters, self._waiters = self._waiters, []
        if isinstance(result, _Attempt):
            if self.closed:
                result.transport.loseConnection()
            else:
                self._live.append(result)
        for d in waiters:
            if isinstance(result, _Attempt):
                d.callback(result)
            else:
                d.errback(result)
        return None

    def close(self) -> None:
        self.closed = True
        for attempt in self._live:
            if attempt.transport is not None:
                attempt.transport.loseConnection()
        self._live = []


# -- files on the remote ------------------------------------------------------------------------------


def _entry(name: str, attrs: dict) -> Entry:
    mode = attrs.get("permissions", 0)
    if stat.S_ISDIR(mode):
        kind = "dir"
    elif stat.S_ISREG(mode):
        kind = "file"
    elif stat.S_ISLNK(mode):
        kind = "link"
    else:
        kind = "other"
    mtime = float(attrs.get("mtime", 0))
    return Entry(
        name,
        kind,
        attrs.get("size", 0) if kind == "file" else 0,
        mtime,
        float(attrs.get("atime", mtime)),
        mode & ENTRY_MODE,
    )


class RemoteTree:
    """A profile's home on the remote server: remote paths from checked components."""

    def __init__(self, pool: SftpPool, home_parts: list[str]):
        self.pool = pool
        self.remote = pool.remote
        self.home = posixpath.join(self.remote.base(), *home_parts) if home_parts else self.remote.base()
        self.root = f"sftp://{self.remote.name}{'/' if not self.home.startswith('/') else ''}{self.home}"

    def path(self, parts: list[str]) -> str:
        return posixpath.join(self.home, *parts) if parts else self.home

    async def call(self, what: str, parts: list[str], method: str, *args, retry: bool = False):
        """One request; with `retry`, once more on a fresh connection if this one dropped."""
        for attempt in (1, 2):
            client = await self.pool.client()
            try:
                return await getattr(client, method)(*args)
            except (error.ConnectionLost, error.ConnectionDone) as e:
                if not retry or attempt == 2:
                    raise remote_error(e, what, self.remote) from None
            except (filetransfer.SFTPError, NotImplementedError) as e:
                raise remote_error(e, what, self.remote) from None
        raise AssertionError("unreachable")

    async def attrs(self, parts: list[str], follow: bool = True) -> dict | None:
        try:
            return await self.call(
                virtual(parts), parts, "getAttrs", _encode(self.path(parts)), int(follow), retry=True
            )
        except NotFound:
            return None

    async def stat(self, parts: list[str], follow: bool = True) -> Entry:
        attrs = await self.attrs(parts, follow)
        if attrs is None:
            raise NotFound(f"No such file or folder: {virtual(parts)}")
        return _entry(parts[-1] if parts else "/", attrs)

    async def list(self, parts: list[str]) -> list[Entry]:
        where = virtual(parts)
        attrs = await self.attrs(parts)
        if attrs is None:
            raise NotFound(f"No such folder: {where}")
        if not stat.S_ISDIR(attrs.get("permissions", 0)):
            raise Invalid(f"{where} is not a folder.")
        entries: list[Entry] = []
        for name, item in await self.folder_items(parts):
            if name.startswith(TEMP_PREFIX) or has_control(name):
                continue
            if stat.S_ISLNK(item.get("permissions", 0)):
                item = await self.attrs(parts + [name]) or item
            entries.append(_entry(name, item))
        return entries

    async def folder_items(self, parts: list[str], limit: int | None = None) -> list[tuple[str, dict]]:
        """Every (name, attrs) in a folder as the server lists it (links not followed,
        "." and ".." left out); with `limit`, the reading stops after about that many."""
        where = virtual(parts)
        folder = await self.call(where, parts, "openDirectory", _encode(self.path(parts)), retry=True)
        items: list[tuple[str, dict]] = []
        try:
            while limit is None or len(items) < limit:
                try:
                    batch = await folder.read()
                except EOFError:
                    break
                except (filetransfer.SFTPError, error.ConnectionLost) as e:
                    raise remote_error(e, where, self.remote) from None
                for raw, _long, item in batch:
                    if raw not in (b".", b".."):
                        items.append((raw.decode("utf-8", "surrogateescape"), item))
        finally:
            try:
                await folder.close()
            except Exception:  # noqa: BLE001 - what was read is complete; a failed close changes nothing
                pass
        return items

    async def usage(self) -> tuple[int, int]:
        """Bytes and files under the home (links not followed, uploads in progress not counted)."""
        total = files = 0
        stack: list[list[str]] = [[]]
        while stack:
            parts = stack.pop()
            try:
                items = await self.folder_items(parts)
            except NotFound:
                continue
            for name, item in items:
                mode = item.get("permissions", 0)
                if name.startswith(TEMP_PREFIX):
                    continue
                if stat.S_ISDIR(mode):
                    stack.append(parts + [name])
                elif stat.S_ISREG(mode):
                    total += item.get("size", 0)
                    files += 1
        return total, files

    async def open_file(self, parts: list[str], flags: int, attrs: dict, where: str | None = None):
        return await self.call(where or virtual(parts), parts, "openFile", _encode(self.path(parts)), flags, attrs)


class RemoteReader(RemoteDownload):
    """A remote file read at offsets: READ_AHEAD blocks requested ahead, replies in request order."""

    def __init__(
        self,
        handle,
        path: str,
        size: int,
        remote: Remote,
        on_close: Callable[[int, int], Awaitable[None]],
        mtime: float | None = None,
    ):
        super().__init__(path, size, on_close, mtime)
        self._handle = handle
        self._remote = remote
        self._blocks: dict[int, object] = {}  # index -> Deferred (in flight), bytes or Failure
        self._arrivals: dict[int, Deferred] = {}  # the read waiting for a block

    def _request(self, index: int) -> None:
        if index in self._blocks or index * BLOCK >= self.size:
            return
        d = self._handle.readChunk(index * BLOCK, BLOCK)
        self._blocks[index] = d

        def arrived(result) -> None:
            if self._blocks.get(index) is d:
                self._blocks[index] = result  # bytes, or a Failure
            waiter = self._arrivals.pop(index, None)
            if waiter is not None:
                waiter.callback(None)

        d.addBoth(arrived)

    async def _block(self, index: int) -> bytes:
        self._request(index)
        value = self._blocks.get(index, b"")
        if isinstance(value, Deferred):
            waiter: Deferred = Deferred()
            self._arrivals[index] = waiter
            await waiter
            value = self._blocks.get(index, b"")
        if isinstance(value, Failure):
            self._blocks.pop(index, None)
            if value.check(EOFError):
                return b""
            raise remote_error(value.value, self.path, self._remote)
        return value

    async def _read(self, offset: int, length: int) -> bytes:
        if length == 0:
            return b""
        first, last = offset // BLOCK, (offset + length - 1) // BLOCK
        for index in list(self._blocks):  # forget what lies behind, and a read-ahead elsewhere
            if index < first or index > last + READ_AHEAD:
                self._blocks.pop(index)
        for index in range(first, last + 1 + READ_AHEAD):
            self._request(index)
        pieces = []
        for index in range(first, last + 1):
            block = await self._block(index)
            start = offset - index * BLOCK if index == first else 0
            end = offset + length - index * BLOCK
            pieces.append(block[start:end])
            if len(block) < BLOCK:
                if index * BLOCK + len(block) < self.size and len(block) > 0:
                    # a short read before the end: ask for the rest directly
                    got = index * BLOCK + len(block)
                    rest = await self._direct(got, offset + length - got)
                    pieces.append(rest)
                break
        return b"".join(pieces)

    async def _direct(self, offset: int, length: int) -> bytes:
        out = []
        while length > 0:
            try:
                chunk = await self._handle.readChunk(offset, min(length, BLOCK))
            except EOFError:
                break
            except Exception as e:  # noqa: BLE001 - mapped for the reader's caller
                raise remote_error(e, self.path, self._remote) from None
            if not chunk:
                break
            out.append(chunk)
            offset += len(chunk)
            length -= len(chunk)
        return b"".join(out)

    async def _release(self) -> None:
        self._blocks.clear()
        try:
            await self._handle.close()
        except Exception:  # noqa: BLE001 - a read handle's close cannot lose data
            pass


class RemoteWriter(RemoteUpload):
    """An upload to a temporary name beside the target; `commit` renames it into place."""

    def __init__(
        self,
        tree: RemoteTree,
        parts: list[str],
        temp_parts: list[str],
        handle,
        client,
        start_size: int,
        limits: Limits,
        replaced: int | None,
        commit: Callable[[RemoteWriter], Awaitable[None]],
        registry: set,
        no_replace: bool = False,
    ):
        super().__init__(parts, start_size, limits, replaced, commit, registry, no_replace)
        self._tree = tree
        self._temp_parts = temp_parts
        self._handle = handle
        self._client = client
        self._in_flight = 0
        self._drained: list[Deferred] = []  # waiting for none in flight

    def write_nowait(self, offset: int, data: bytes) -> Deferred | None:
        self._check_write(offset)
        self._grow_to(offset + len(data))
        self.bytes_written += len(data)
        data = bytes(data)
        for start in range(0, len(data), BLOCK):
            piece = data[start : start + BLOCK]
            self._in_flight += len(piece)
            d = self._handle.writeChunk(offset + start, piece)
            d.addBoth(self._written, len(piece))
        if self._in_flight < WRITE_WINDOW:
            return None
        return self._wait_for_room()

    def _written(self, result, length: int) -> None:
        self._in_flight -= length
        if isinstance(result, Failure) and self._error is None:
            self._error = remote_error(result.value, self.path, self._tree.remote)
        if self._error is not None or self._in_flight < WRITE_WINDOW // 2:
            self._wake()
        if self._in_flight == 0:
            waiters, self._drained = self._drained, []
            for w in waiters:
                w.callback(None)

    async def _settle(self) -> None:
        if self._in_flight:
            waiter: Deferred = Deferred()
            self._drained.append(waiter)
            await waiter

    async def _durable(self) -> None:
        if self._error is None and b"fsync@openssh.com" in self._client.extensions:
            try:
                await self._client.extendedRequest(b"fsync@openssh.com", self._handle.handle)
            except Exception as e:  # noqa: BLE001 - kept for commit to report
                self._error = remote_error(e, self.path, self._tree.remote)

    async def _finish(self) -> None:
        try:
            await self._handle.close()
        except Exception as e:  # noqa: BLE001
            raise remote_error(e, self.path, self._tree.remote) from None
        self._handle = None
        temp = _encode(self._tree.path(self._temp_parts))
        final = _encode(self._tree.path(self._parts))
        if self.times is not None:
            try:
                await self._client.setAttrs(temp, {"atime": int(self.times[0]), "mtime": int(self.times[1])})
            except Exception:  # noqa: BLE001 - times are best effort
                pass
        await self._rename_into_place(temp, final)

    async def _rename_into_place(self, temp: bytes, final: bytes) -> None:
        try:
            if self._no_replace:
                # SFTP's plain rename never replaces an existing name (OpenSSH: link + unlink)
                await self._client.renameFile(temp, final)
            else:
                await posix_rename(self._client, temp, final)
        except filetransfer.SFTPError as e:
            if self._no_replace and e.code == filetransfer.FX_FAILURE:
                raise AlreadyExists(f"{self.path} already exists: it was created while this upload ran.") from None
            raise remote_error(e, self.path, self._tree.remote) from None
        except Exception as e:  # noqa: BLE001
            raise remote_error(e, self.path, self._tree.remote) from None

    async def _drop(self) -> None:
        try:
            await self._settle()
        except Exception:  # noqa: BLE001
            pass
        try:
            if self._handle is not None:
                await self._handle.close()
        except Exception:  # noqa: BLE001
            pass
        try:
            client = await self._tree.pool.client() if not self._client.connected else self._client
            await client.removeFile(_encode(self._tree.path(self._temp_parts)))
        except Exception as e:  # noqa: BLE001 - logged: the temporary name is hidden from listings
            log.warn("could not remove the unfinished upload {path}: {error}", path=self.path, error=e)


async def posix_rename(client, old: bytes, new: bytes) -> None:
    """Rename, replacing `new`: OpenSSH's posix-rename when offered, else remove then rename."""
    if b"posix-rename@openssh.com" in client.extensions:
        await client.extendedRequest(b"posix-rename@openssh.com", common.NS(old) + common.NS(new))
        return
    try:
        await client.removeFile(new)
    except filetransfer.SFTPError:
        pass
    await client.renameFile(old, new)


async def copy_into(client, source_handle, target_handle) -> None:
    """Copy a whole remote file between two open handles (OpenSSH's copy-data, else by reading)."""
    if b"copy-data" in client.extensions:
        await client.extendedRequest(
            b"copy-data",
            source_handle.handle + struct.pack("!QQ", 0, 0) + target_handle.handle + struct.pack("!Q", 0),
        )
        return
    offset = 0
    while True:
        try:
            chunk = await source_handle.readChunk(offset, BLOCK)
        except EOFError:
            return
        if not chunk:
            return
        await target_handle.writeChunk(offset, chunk)
        offset += len(chunk)


def temp_name() -> str:
    return TEMP_PREFIX + secrets.token_hex(8)


# -- the sources' pools, and the admin's check ---------------------------------------------------------


class RemoteSources:
    """One pool per remote SFTP source, made on first use and replaced when its config changes."""

    def __init__(self, reactor, threads, secrets, allow_loopback: bool, destinations: netcheck.Destinations):
        self._reactor = reactor
        self._threads = threads
        self._destinations = destinations
        self._sealed = SealedSecrets(secrets)
        self.seal = self._sealed.seal
        self.open = self._sealed.open
        self.allow_loopback = allow_loopback
        self._pools: dict[int, SftpPool] = {}
        reactor.addSystemEventTrigger("before", "shutdown", self.close)

    def remote(self, source, config: dict | None = None) -> Remote:
        """The source's connection settings, secrets decrypted."""
        config = source.config if config is None else config
        what = f"credentials of the source {source.name!r}"
        password = self._sealed.open_field(config, "password_encrypted", what)
        key = self._sealed.open_field(config, "private_key_encrypted", what)
        return Remote(
            host=config.get("host", ""),
            port=int(config.get("port", 22)),
            username=config.get("username", ""),
            password=password,
            private_key=key,
            fingerprint=config.get("host_key_fingerprint", ""),
            path=config.get("path", ""),
            allow_loopback=self.allow_loopback,
        )

    def pool(self, source) -> SftpPool:
        remote = self.remote(source)
        pool = self._pools.get(source.id)
        if pool is None or pool.remote != remote:
            if pool is not None:
                pool.close()
            pool = self._pools[source.id] = SftpPool(self._reactor, self._threads, self._destinations, remote)
        return pool

    async def check(self, remote: Remote) -> str:
        """Connect, sign in, find the folder; the host key's fingerprint. Raises
        RemoteProblem (or Invalid/Unavailable from the host check) saying what is wrong."""
        attempt = await connect(self._reactor, self._threads, self._destinations, remote)
        try:
            base = remote.base()
            try:
                attrs = await attempt.client.getAttrs(_encode(base), 1)
            except filetransfer.SFTPError as e:
                if e.code == filetransfer.FX_NO_SUCH_FILE:
                    raise RemoteProblem(f"The folder {base} does not exist on {remote.name}.", "path") from None
                if e.code == filetransfer.FX_PERMISSION_DENIED:
                    raise RemoteProblem(
                        f"{remote.username} may not open the folder {base} on {remote.name}.", "path"
                    ) from None
                raise RemoteProblem(f"{remote.name} could not open the folder {base}: {e.message}", "path") from None
            if not stat.S_ISDIR(attrs.get("permissions", 0)):
                raise RemoteProblem(f"{base} on {remote.name} is not a folder.", "path")
        finally:
            attempt.transport.loseConnection()
        return attempt.seen_fingerprint

    async def sweep(self, source, now: float, limit: int = SWEEP_LIMIT) -> int:
        """Remove what uploads cut short by a crash left under the source's folder: files
        named TEMP_PREFIX... (not resumable partials) unchanged for TEMP_STALE seconds.
        Visits at most `limit` entries (logged when it stops there); a folder that
        cannot be read is passed over. Raises (Unavailable...) when the server cannot be used."""
        tree = RemoteTree(self.pool(source), [])
        removed = visited = 0
        stack: list[list[str]] = [[]]
        while stack and visited < limit:
            parts = stack.pop()
            try:
                items = await tree.folder_items(parts, limit - visited)
            except (NotFound, PermissionDenied):
                continue
            for name, attrs in items[: limit - visited]:
                visited += 1
                mode = attrs.get("permissions", 0)
                here = parts + [name]
                if stat.S_ISDIR(mode):
                    stack.append(here)
                elif _stale_upload(name, mode, attrs.get("mtime"), now):
                    try:
                        await tree.call(virtual(here), here, "removeFile", _encode(tree.path(here)))
                        removed += 1
                    except NotFound:
                        pass
                    except ApplianceError as e:
                        where = virtual(here)
                        log.warn(
                            "could not remove {path} in {source}: {error}", path=where, source=source.name, error=e
                        )
        if visited >= limit:
            log.warn(
                "stopped looking for unfinished uploads in {source} after {count} entries: the rest waits for the "
                "next start",
                source=source.name,
                count=visited,
            )
        if removed:
            log.info("removed {count} unfinished uploads left in {source}", count=removed, source=source.name)
        return removed

    def close(self) -> None:
        for pool in self._pools.values():
            pool.close()
        self._pools.clear()


def _stale_upload(name: str, mode: int, mtime, now: float) -> bool:
    """A crashed upload's temporary file: an upload in progress keeps writing to it, so
    its mtime stays fresh; a resumable upload's partial file outlives restarts."""
    return (
        stat.S_ISREG(mode)
        and name.startswith(TEMP_PREFIX)
        and not name.startswith(RESUMABLE_PREFIX)
        and mtime is not None
        and now - mtime > TEMP_STALE
    )
