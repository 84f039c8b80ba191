"""The data side of FTP: data connections (twisted's DTP machinery, checked and
with backpressure both ways, in TLS under PROT P), files opened for transfer,
and the watch that ends a stalled or aborted transfer.

Nothing here touches the disk: reads and writes go through the core's Reader
and Writer, which do their disk work on the work pool.
"""

from __future__ import annotations

import functools
import ipaddress
import socket

from OpenSSL import SSL
from twisted.internet import defer
from twisted.internet.error import ConnectionDone, ConnectionLost
from twisted.internet.interfaces import IConsumer, IHandshakeListener, IPushProducer
from twisted.logger import Logger
from twisted.protocols import ftp
from twisted.protocols.tls import TLSMemoryBIOFactory
from twisted.python.failure import Failure
from zope.interface import implementer

from ...core.files import Reader, SocketError, Writer
from ...deferreds import as_deferred
from .errors import DataConnectionFailed, DataConnectionRefused
from .twisted_private import HoldingTLS

log = Logger()

CHUNK = 256 * 1024  # bytes per read handed to a data connection
SOCKET_CHUNK = 256 * 1024  # bytes per recv() on a data connection, and buffered before a download pauses
# an upload that has brought this many bytes through the reactor moves to a transfer
# thread (splice); a smaller one is done without a thread waiting on its socket
SPLICE_AFTER = 1024 * 1024


@functools.lru_cache(maxsize=1024)  # asked several times per transfer, of the same few addresses
def plain_host(host: str) -> str:
    """An address as text, IPv4-mapped IPv6 addresses as plain IPv4."""
    try:
        address = ipaddress.ip_address(host.split("%")[0])
    except ValueError:
        return host
    if address.version == 6 and address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)
    return str(address)


# -- data connections -------------------------------------------------------------


class TruncatedTLS(ConnectionLost):
    """A TLS data connection ended without the client's close_notify."""

    def __str__(self) -> str:
        return (
            "The TLS data connection ended without close_notify, so the upload may be truncated: "
            "it was not saved. Send the file again."
        )


class TLSHandshakeFailed(ConnectionLost):
    """The TLS handshake of a data connection failed (PROT P without TLS, an old client)."""

    def __str__(self) -> str:
        return f"The TLS handshake on the data connection failed ({self.args[0] if self.args else 'no detail'})."


class TLSSessionRefused(ConnectionLost):
    """A TLS data connection was refused after its handshake: it did not resume the
    control connection's TLS session (data.DataChannels.tls_refusal says why)."""

    def __str__(self) -> str:
        return self.args[0] if self.args else "The TLS data connection was refused."


class DataTLS(HoldingTLS):
    """TLS, as the server, on one data connection (PROT P). It remembers how the TCP
    connection itself ended, which TLS alone reports only as 'lost'.

    Under TLS 1.3 OpenSSL sends session tickets right after the handshake. A client
    that only uploads never reads them (lftp): when it closes the socket
    with them unread, its kernel resets the connection and drops what it had not sent
    yet, so the upload's end (and close_notify) never arrives. The tickets are kept
    in the TLS layer until we send something ourselves (a download's first bytes, or
    our close_notify after the client's), so such a client has nothing unread when it
    closes. (pyOpenSSL offers no SSL_set_num_tickets to not send them at all.)"""

    wire_reason: Failure | None = None
    _sending = False  # we have sent (or are sending) data or an alert: nothing is held back

    def connectionLost(self, reason):
        self.wire_reason = reason
        super().connectionLost(reason)

    def hold_output(self) -> bool:
        # Handshake messages go at once; under TLS 1.3 the server's come before the client's
        # Finished, so what OpenSSL writes after the handshake (the tickets) waits here.
        return not self._sending and self.handshake_done and self.getHandle().get_protocol_version_name() == "TLSv1.3"

    def sending(self) -> None:
        self._sending = True


@implementer(IHandshakeListener)
class DataChannel(ftp.DTP):
    """One data connection. Unlike twisted's DTP it keeps the reason it closed
    (a clean close ends an upload, a reset aborts it), never buffers without
    bound, and leaves closing to the transfer that uses it.

    Under TLS (`secure`), an upload ends cleanly only with the client's close_notify:
    a bare TCP close could be an attacker's truncation (curl, lftp and Python's ftplib
    send close_notify). A download ends cleanly when the client closes after our
    close_notify, with or without its own. A connection whose handshake did not resume
    the control connection's TLS session is refused as the handshake ends (`refused`)."""

    def __init__(self, secure: bool = False):
        self.secure = secure
        self._consumer = None  # where an upload's data goes, once attached
        self._early: list[bytes] = []  # data that came before the consumer
        self.reason: Failure | None = None
        self._closed_waiters: list[defer.Deferred] = []
        self._held = False  # paused because data came before an upload consumed it
        self._consumer_paused = False
        self._aborted = False
        self._finishing = False
        self._handshake_done = False
        self._producing = False  # a producer (a download) is registered with the transport
        self._written = 0
        self._handed_over = None  # the stop flag of the core transfer (thread or reactor sendfile) using the socket
        self.refused: str | None = None  # why the TLS handshake's outcome refused this connection

    def connectionMade(self):
        self.isConnected = True
        # Twisted's 64 KiB per recv() (and per pause of a download) costs a system call and
        # a reactor turn per 64 KiB; the socket's own buffer holds more on a fast link
        tcp = self.transport.transport if self.secure else self.transport
        tcp.bufferSize = SOCKET_CHUNK
        self.factory.channel_made(self)

    def dataReceived(self, data: bytes) -> None:
        if self._consumer is not None:
            self._consumer.write(data)
            return
        self._early.append(data)
        if not self._held:
            self._held = True
            self.transport.pauseProducing()

    def attach(self, consumer) -> None:
        """Send what arrives (and what already arrived) to `consumer`."""
        self._consumer = consumer
        consumer.registerProducer(self, True)
        while self._early:  # one at a time: a hand_over meanwhile takes the rest
            consumer.write(self._early.pop(0))
        if self._held:
            self._held = False
            if not self._consumer_paused and self.isConnected:
                self.transport.resumeProducing()

    def socket_fd(self) -> int | None:
        """The socket's descriptor when a transfer thread may read it: plain TCP only."""
        if self.secure or not self.isConnected or self._aborted or self._handed_over is not None:
            return None
        return self.transport.fileno()

    def hand_over(self, stop) -> list[bytes]:
        """Stop reading: a transfer thread uses the socket until `handed_back`
        (`stop`: its flag, set by `abort`). Returns what arrived before."""
        self._handed_over = stop
        self.transport.stopReading()
        self._held = False
        buffered, self._early = self._early, []
        return buffered

    async def run_handed_over(self, what: str, transfer, *args) -> int:
        """Run `transfer(*args)` (a core Reader's send_socket or Writer's receive_socket,
        on a transfer thread or the reactor, after `hand_over`); take the socket back as it ended and
        return the bytes moved. A reset is logged and the connection aborted (the
        transfer then ends as broken); a disk or quota error is raised on (the
        transfer fails, and its caller resets the connection)."""
        how = "failed"
        moved = 0
        try:
            how, moved = await transfer(*args)
        except SocketError as e:
            log.info("FTP {what}: the data connection failed: {error}", what=what, error=e)
            how = "reset"
        finally:
            self.handed_back(how)
        if how == "reset":
            self.abort()
        return moved

    def handed_back(self, how: str) -> None:
        """The core's transfer is done with the socket: close it if the transfer was
        aborted meanwhile or the client ended an upload ("eof"); a finished download
        is closed by the transfer (`finish`)."""
        self._handed_over = None
        if not self.isConnected:
            return
        if self._aborted:  # abort() came while the thread read: close now
            self.transport.abortConnection()
        elif how == "eof":
            self.transport.loseConnection()  # the client closed: connectionLost(ConnectionDone)

    def connectionLost(self, reason: Failure) -> None:
        self.isConnected = False
        self.reason = self._tls_outcome(reason) if self.secure else reason
        waiters, self._closed_waiters = self._closed_waiters, []
        for d in waiters:
            d.callback(None)

    def _tls_outcome(self, reason: Failure) -> Failure:
        """How a TLS data connection ended, as a plain one would say it."""
        if self.refused is not None:
            return Failure(TLSSessionRefused(self.refused))
        tls = self.transport
        handle = tls.getHandle()
        if handle is None:
            return reason
        if not self._handshake_done:
            if self._finishing and self._written == 0 and not self._aborted and not reason.check(SSL.Error):
                # an empty file or listing: a client that knows the size may close without a handshake
                return Failure(ConnectionDone("nothing to send"))
            why = reason.value.args[0] if reason.check(SSL.Error) and reason.value.args else reason.getErrorMessage()
            return Failure(TLSHandshakeFailed(str(why)))
        if self._aborted:
            return reason
        # The client's close_notify proves it sent everything; ours, that we did. A
        # reset after either loses nothing: a client that closes with our TLS 1.3
        # session tickets unread makes its kernel send one (lftp, curl on an empty file).
        if handle.get_shutdown() & SSL.RECEIVED_SHUTDOWN:
            return Failure(ConnectionDone("closed with a TLS close_notify"))
        if self._finishing and handle.get_shutdown() & SSL.SENT_SHUTDOWN:
            return Failure(ConnectionDone("closed after our close_notify"))
        wire = getattr(tls, "wire_reason", None)
        if wire is None or wire.check(ConnectionDone) is None:
            return reason  # reset or timed out: not clean, as without TLS
        return Failure(TruncatedTLS())

    def handshakeCompleted(self) -> None:  # IHandshakeListener, called by the TLS layer
        refusal = self.pi.tls_refusal(self.transport.getHandle())
        if refusal is not None:
            self._refuse(refusal)
            return
        self._handshake_done = True
        if self._finishing and self.isConnected and not self._aborted:
            self.transport.loseConnection()  # finish() came first (an empty file or listing)

    def _refuse(self, why: str) -> None:
        """Drop a connection that may not carry this session's data, before anything more
        is sent on it or read from it: not our last handshake message under TLS 1.2, not
        the session tickets under TLS 1.3 (held by DataTLS), not the file."""
        self.refused = why
        self._aborted = True
        self.transport.transport.abortConnection()  # the TCP connection: nothing more leaves
        self.transport.abortConnection()  # the TLS layer: nothing more is read or written
        self.factory.channel_refused(self, why)

    def when_closed(self) -> defer.Deferred:
        """Fires (with None) once the connection is closed; `reason` says how."""
        if self.reason is not None:
            return defer.succeed(None)
        d = defer.Deferred()
        self._closed_waiters.append(d)
        return d

    # IConsumer, for downloads: proxied to the transport, without twisted's
    # close-on-unregister (the transfer decides how the connection ends).
    def registerProducer(self, producer, streaming):
        self._producing = True
        self.transport.registerProducer(producer, streaming)

    def unregisterProducer(self):
        if self._producing and self.transport is not None:
            self._producing = False
            # A lost connection has let go of its producer already; and Twisted's TLS, asked
            # after its loss while closing, would try to send a close_notify without a TLS
            # connection (a refused data connection is closed while a download runs).
            if self.isConnected:
                self.transport.unregisterProducer()

    def write(self, data: bytes) -> None:
        if self.isConnected:
            self._written += len(data)
            self.transport.write(data)

    # IPushProducer, for uploads: the consumer pauses us while the disk catches up.
    def pauseProducing(self):
        self._consumer_paused = True
        if self.isConnected:
            self.transport.pauseProducing()

    def resumeProducing(self):
        self._consumer_paused = False
        if self.isConnected and not self._held and self._handed_over is None:
            self.transport.resumeProducing()

    def stopProducing(self):
        self.abort()

    def finish(self) -> None:
        """Close after what was written has been sent (under TLS: with a close_notify)."""
        if self.isConnected and not self._aborted:
            self._finishing = True
            if self.secure and not self._handshake_done:
                return  # Twisted's TLS would reset a connection closed before its handshake with nothing to send
            self.transport.loseConnection()

    def close_idle(self, clock, grace: float) -> None:
        """Close a connection no transfer is using. Under TLS the client has `grace`
        seconds to answer our close_notify (or close): a client that does neither
        must not hold the connection open."""
        self.finish()
        if self.secure and self.isConnected:
            clock.callLater(grace, self.abort)

    def abort(self) -> None:
        """Close at once, dropping anything unsent (the client sees a reset)."""
        if self.isConnected and not self._aborted:
            self._aborted = True
            if self._handed_over is not None:  # the core uses the socket: stop it first
                self._handed_over.set()
                try:
                    self.transport.socket.shutdown(socket.SHUT_RD)  # wakes a transfer thread's poll()
                except OSError:
                    pass
                return  # handed_back() closes the connection
            self.transport.abortConnection()


WAITING, CONNECTED, FAILED = "waiting", "connected", "failed"  # a DataChannelFactory's phases
TWO_CONNECTIONS = (
    "Two data connections came from your address for one PASV/EPSV, so one may be someone else's: "
    "neither was used. Send PASV or EPSV again (with FTPS and PROT P this cannot happen)."
)


class DataChannelFactory(ftp.DTPFactory):
    """Makes the one data connection of a PASV/EPSV or PORT/EPRT, and only with
    the control connection's peer: connections from other addresses are dropped,
    and so is any connection after the first (in plain FTP, one that comes before a
    transfer took the first drops both: `_second_connection`).

    Under PROT P the connection is wrapped in TLS as the server, in whichever
    direction it was opened, with the control connection's context (one of its
    own): the client resumes the control connection's session (FileZilla, lftp
    and curl do), and one that does not is refused as its handshake ends
    (data.DataChannels.tls_refusal). Someone else at the client's address who took a
    passive port first has no session of that context to resume: refused before
    any transfer used it, the port waits for the client's own connection (that
    refusal answers a transfer that comes while none is there); refused once a
    transfer has it, that transfer ends with the refusal (522)."""

    noisy = False

    def __init__(self, pi, peer_host: str, reactor, passive: bool = True):
        super().__init__(pi, peerHost=peer_host, reactor=reactor)
        self._clock = reactor
        self._passive = passive
        self._phase = WAITING  # then CONNECTED or FAILED
        self.deferred.addErrback(lambda _: None)  # twisted's; we use when_connected
        self.channel: DataChannel | None = None
        self._taken = False  # a transfer has the channel
        self._refusal: str | None = None  # why a connection was refused after its TLS handshake
        self._failure: Exception | None = None
        self._waiters: list[defer.Deferred] = []

    def buildProtocol(self, addr):
        host = plain_host(addr.host)
        if self._phase != WAITING:
            if host == self.peerHost and self._phase == CONNECTED:
                self._second_connection()
            return None
        if host != self.peerHost:
            log.warn(
                "refused an FTP data connection from {host}: the control connection comes from {peer}",
                host=host,
                peer=self.peerHost,
            )
            return None
        self._phase = CONNECTED
        self.cancelTimeout()
        tls = self.pi.tls()  # the PROT level when the connection is made
        channel = DataChannel(secure=tls is not None)
        channel.factory = self
        channel.pi = self.pi
        if tls is None:
            return channel
        return DataTLS(TLSMemoryBIOFactory(tls, False, self, self._clock), channel)

    def _second_connection(self) -> None:
        """Another connection from the client's address, for a set-up that has one. It is
        refused. Under TLS the first proves itself by resuming the control connection's
        session (or is refused in turn). In plain FTP nothing tells the client's own from
        someone else's: until a transfer has the first, neither is used (the transfer
        answers 425 and the client sends PASV again); once a transfer has it, it goes on."""
        channel = self.channel
        if channel is None or channel.secure or self._taken:
            return
        log.warn("refused two FTP data connections from {host} for one passive set-up", host=self.peerHost)
        self._phase = FAILED
        self.channel = None
        self._fail(DataConnectionFailed(TWO_CONNECTIONS))
        channel.abort()

    def stopFactory(self):
        self.cancelTimeout()

    def channel_made(self, channel: DataChannel) -> None:
        self.channel = channel
        waiters, self._waiters = self._waiters, []
        self._taken = bool(waiters)
        for d in waiters:
            d.callback(channel)

    def channel_refused(self, channel: DataChannel, why: str) -> None:
        """`channel`'s TLS handshake did not resume the control connection's session."""
        log.warn(
            "refused an FTP data connection from {host}: its TLS handshake did not resume the control "
            "connection's TLS session",
            host=self.peerHost,
        )
        self._refusal = why
        if self._passive and channel is self.channel and not self._taken and self._phase == CONNECTED:
            self.channel = None  # no transfer has it: the port takes the next connection
            self._phase = WAITING

    def clientConnectionFailed(self, connector, reason):
        if self._phase != WAITING:
            return
        self._phase = FAILED
        self._fail(DataConnectionFailed(f"Cannot connect to your data port: {reason.getErrorMessage()}"))

    def close(self, why: str) -> None:
        """No connection is wanted any more (a new PASV, an abort, the end of the session)."""
        if self._phase == WAITING:
            self._phase = FAILED
        self.cancelTimeout()
        self._fail(DataConnectionFailed(why))

    def _fail(self, error: Exception) -> None:
        self._failure = error
        waiters, self._waiters = self._waiters, []
        for d in waiters:
            d.errback(error)

    def when_connected(self) -> defer.Deferred:
        """Fires with the DataChannel once the client (or our PORT connect) made it. A
        refused TLS connection, with none since, answers at once with the refusal."""
        if self.channel is not None:
            self._taken = True
            return defer.succeed(self.channel)
        if self._failure is not None:
            return defer.fail(self._failure)
        if self._refusal is not None:
            return defer.fail(DataConnectionRefused(self._refusal))
        d = defer.Deferred(lambda d: self._waiters.remove(d))
        self._waiters.append(d)
        return d


# -- one transfer -------------------------------------------------------------------


def closed_cleanly(outcome) -> bool:
    return outcome[0] == "closed" and outcome[1].check(ConnectionDone) is not None


def describe(outcome) -> str:
    """How a transfer ended, for the daemon log."""
    kind, detail = outcome
    if kind == "closed":
        return f"the data connection closed: {detail.getErrorMessage()} ({detail.type.__name__})"
    return f"{kind}: {detail}"


def refused_because(outcome) -> str | None:
    """Why a TLS data connection was refused after its handshake, if it was."""
    if outcome[0] == "closed" and outcome[1].check(TLSSessionRefused):
        return str(outcome[1].value)
    return None


def broken_because(outcome) -> str | None:
    """What to tell the client about a TLS data connection that did not end cleanly."""
    if outcome[0] == "closed" and outcome[1].check(TruncatedTLS, TLSHandshakeFailed):
        return str(outcome[1].value)
    return None


class Transfer:
    """Watches one transfer on one data connection. It ends exactly once: when the
    connection closes (("closed", reason)), when it is cancelled by ABOR, a stall
    or the loss of the control connection (("cancelled", why)), or when the
    file side fails (("failed", error))."""

    def __init__(self, channel: DataChannel, clock, timeout: float):
        self.channel = channel
        self.cancelled: str | None = None
        self._clock = clock
        self._timeout = timeout
        self._end = defer.Deferred()
        self._timer = clock.callLater(timeout, self._expired) if timeout > 0 else None
        channel.when_closed().addCallback(lambda _: self._finish(("closed", channel.reason)))

    def progress(self) -> None:
        """Data moved: the stall timer starts again."""
        if self._timer is not None and self._timer.active():
            self._timer.reset(self._timeout)

    def _expired(self) -> None:
        self._timer = None
        self.cancel(f"No data moved for {self._timeout} seconds: the transfer timed out.")

    def cancel(self, why: str) -> None:
        if self._end.called:
            return
        self.cancelled = why
        self._finish(("cancelled", why))
        self.channel.abort()

    def fail(self, error: Exception) -> None:
        self._finish(("failed", error))

    def _finish(self, outcome) -> None:
        if not self._end.called:
            self.stop()
            self._end.callback(outcome)

    def stop(self) -> None:
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        self._timer = None

    def ended(self) -> defer.Deferred:
        """Fires with the outcome (once; a second caller gets nothing useful)."""
        return self._end


# -- files open for transfer -----------------------------------------------------------


@implementer(ftp.IReadFile, IPushProducer)
class ReadFile:
    """A file (core Reader) sent to a consumer in large chunks, paced by the consumer."""

    def __init__(self, reader: Reader):  # or a listing (listing.ListingReader)
        self.reader = reader
        self.size = reader.size
        self.sent = 0
        self._paused = False
        self._stopped = False
        self._wake: defer.Deferred | None = None

    def send(self, consumer, offset: int = 0, progress=None) -> defer.Deferred:
        """Write the file from `offset` to `consumer`; fires with the bytes written.

        Stops early (without error) if the consumer stops us (connection lost).
        """
        return as_deferred(self._send(consumer, offset, progress))

    async def _send(self, consumer, offset: int, progress) -> int:
        if isinstance(consumer, DataChannel) and await self._send_socket(consumer, offset, progress):
            return self.sent
        consumer.registerProducer(self, True)
        try:
            while not self._stopped:
                if self._paused:
                    self._wake = defer.Deferred()
                    await self._wake
                    continue
                data = await self.reader.read(offset, CHUNK)
                if not data or self._stopped:
                    break
                offset += len(data)
                self.sent += len(data)
                consumer.write(data)
                if progress is not None:
                    progress()
        finally:
            consumer.unregisterProducer()
        return self.sent

    async def _send_socket(self, channel: DataChannel, offset: int, progress) -> bool:
        """Send with sendfile(2) (file to socket in the kernel, from the reactor or
        a transfer thread: the core decides) when the data connection is plain
        TCP and the file a local one; False: send through the reactor's reads."""
        sender = self.reader.socket_sender  # the storage's declared fast path, or None
        fd = channel.socket_fd() if sender is not None else None
        stop = sender.socket_slot() if fd is not None else None
        if stop is None:
            return False
        channel.hand_over(stop)
        moved = await channel.run_handed_over(
            "download", sender.send_socket, fd, offset, stop, progress or (lambda: None)
        )
        self.sent += moved
        return True

    def pauseProducing(self):
        self._paused = True

    def resumeProducing(self):
        self._paused = False
        self._resume()

    def stopProducing(self):
        self._stopped = True
        self._resume()

    def _resume(self) -> None:
        wake, self._wake = self._wake, None
        if wake is not None:
            wake.callback(None)

    def close(self) -> defer.Deferred:
        """Close the file (for a core Reader: writes the download's audit row)."""
        return as_deferred(self.reader.close())


@implementer(IConsumer)
class UploadConsumer:
    """Writes what a data connection delivers to a core Writer at increasing
    offsets. A write that goes to the disk (the Writer flushes 1 MiB at a time on
    the work pool) is left running while data keeps arriving; the connection is
    paused only while MAX_IN_FLIGHT of them are pending, so memory stays bounded."""

    MAX_IN_FLIGHT = 2

    def __init__(self, writer: Writer, offset: int):
        self._writer = writer
        self.offset = offset
        self.received = 0
        self.error: Exception | None = None
        self.on_data = None  # called for every chunk (the stall timer)
        self.on_error = None  # called once with the first write error
        self._producer = None
        self._in_flight = 0
        self._paused = False
        self._stopped = False
        self._idle: list[defer.Deferred] = []
        self._splice_channel: DataChannel | None = None  # to move to a transfer thread at _splice_at bytes
        self._splice_at = 0

    def registerProducer(self, producer, streaming):
        self._producer = producer

    def unregisterProducer(self):
        self._producer = None

    def write(self, data: bytes) -> None:
        if self._stopped or self.error is not None:
            return
        self.received += len(data)
        if self.on_data is not None:
            self.on_data()
        offset = self.offset
        self.offset += len(data)
        try:
            d = self._writer.write_nowait(offset, data)
        except Exception:  # noqa: BLE001 - a refusal (quota, ...): reported like a failed disk write
            self._failed(Failure())
            return
        if d is not None:  # a disk write started (else buffered in memory: the common case)
            self._in_flight += 1
            if self._in_flight >= self.MAX_IN_FLIGHT:
                self._pause()
            d.addErrback(self._failed)
            d.addBoth(self._landed)
        if self._splice_channel is not None:
            self._maybe_splice()

    def splice_after(self, channel: DataChannel, size: int = SPLICE_AFTER) -> None:
        """Once `size` bytes have come through the reactor, move the rest of the upload to
        a transfer thread (splice(2): socket to file in the kernel) when the data
        connection is plain TCP, the file a local one and a transfer thread is free.
        A small file ends before that: its bytes go to the disk with its fsync, in one
        trip to the work pool, and no thread waits on its socket."""
        if self._writer.socket_receiver is not None:  # the storage's declared fast path
            self._splice_channel, self._splice_at = channel, size
            self._maybe_splice()

    def _maybe_splice(self) -> None:
        channel = self._splice_channel
        if channel is None or self.received < self._splice_at or self._stopped or self.error is not None:
            return
        self._splice_channel = None  # asked once
        fd = channel.socket_fd()
        if fd is None:
            return
        receiver = self._writer.socket_receiver
        stop = receiver.socket_slot()
        if stop is None:
            return  # every transfer thread is busy: the reactor goes on
        for chunk in channel.hand_over(stop):  # what arrived and is not written yet
            self.write(chunk)
        self._in_flight += 1
        d = defer.Deferred.fromCoroutine(self._receive_socket(receiver.receive_socket, channel, fd, stop))
        d.addErrback(self._failed)
        d.addBoth(self._landed)

    async def _receive_socket(self, receive, channel: DataChannel, fd: int, stop) -> None:
        received = await channel.run_handed_over("upload", receive, fd, self.offset, stop, self._tick)
        self.offset += received
        self.received += received

    def _tick(self) -> None:
        if self.on_data is not None:
            self.on_data()

    def _landed(self, _) -> None:
        self._in_flight -= 1
        if self._paused and self._in_flight < self.MAX_IN_FLIGHT and self.error is None and not self._stopped:
            self._paused = False
            if self._producer is not None:
                self._producer.resumeProducing()
        if self._in_flight == 0:
            idle, self._idle = self._idle, []
            for d in idle:
                d.callback(None)

    def _failed(self, failure) -> None:
        if self.error is None:
            self.error = failure.value
            if self.on_error is not None and not self._stopped:
                self.on_error(failure.value)

    def _pause(self) -> None:
        if not self._paused and self._producer is not None:
            self._paused = True
            self._producer.pauseProducing()

    def stop(self) -> None:
        """Take no more data (the upload is being aborted)."""
        self._stopped = True

    async def drained(self) -> None:
        """Wait until every chunk received so far is with the Writer; raise its error."""
        if self._in_flight:
            d = defer.Deferred()
            self._idle.append(d)
            await d
        if self.error is not None and not self._stopped:
            raise self.error


@implementer(ftp.IWriteFile)
class WriteFile:
    """An upload (core Writer): nothing appears under the real name until close()."""

    def __init__(self, writer: Writer):
        self.writer = writer
        self.size = writer.size  # bytes already there (resume, append)

    def receive(self, offset: int | None = None) -> defer.Deferred:
        """A consumer writing from `offset` (default: the end)."""
        return defer.succeed(UploadConsumer(self.writer, self.size if offset is None else offset))

    def close(self, still_wanted=None) -> defer.Deferred:
        """Commit: flush, fsync, (`still_wanted()`, see Writer.commit) rename into place,
        audit row."""
        return as_deferred(self.writer.commit(still_wanted))

    def abort(self) -> defer.Deferred:
        """Remove the temporary file; the real name is untouched."""
        return as_deferred(self.writer.abort())
