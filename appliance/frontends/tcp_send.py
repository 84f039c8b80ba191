"""Sending on a Twisted TCP connection at once, for the front ends' small replies.

Twisted's `write()` only buffers: it asks the reactor to watch the socket for
writability (an epoll_ctl), and the bytes leave on the reactor's next turn, after
which it stops watching (another epoll_ctl). For a reply of a few dozen bytes that
is most of its cost, paid for every command of a small file (an FTP `150`, `226`,
`213`; SFTP's HANDLE and STATUS). `send_now` hands the bytes to the socket itself
when nothing of ours waits in Twisted's buffer, in order, and leaves everything else
(what the socket does not take, a closing connection, TLS) to Twisted's buffer, as
`write()` would.

The state of Twisted's send buffer comes from twisted_private.py (private names).
"""

from __future__ import annotations

from twisted.internet import tcp as _tcp
from twisted.protocols.policies import ProtocolWrapper

from .twisted_private import nothing_unsent, write_side_closed

IOV_MAX = 512  # pieces per sendmsg() (Linux allows 1024)


def _tcp_under(transport) -> _tcp.Connection | None:
    """The TCP connection a protocol's `transport` is, or is under a plain ProtocolWrapper
    of (Twisted's connection-limiting factories add one); None for anything else (a
    test's transport, a TLS wrapper: bytes must go through those)."""
    if type(transport) is ProtocolWrapper:
        transport = transport.transport
    return transport if isinstance(transport, _tcp.Connection) else None


def send_now(transport, pieces: list) -> None:
    """Send `pieces` (bytes or memoryviews) on a protocol's `transport`, in order. On
    Twisted's TCP connection: with sendmsg() at once when nothing of ours waits in its
    buffer, what the socket does not take through the buffer; everything through the
    buffer when something waits, the connection is closing or its bytes go through TLS
    (startTLS). On any other transport: its writeSequence()."""
    tcp = _tcp_under(transport)
    if tcp is None:
        transport.writeSequence(pieces)
        return
    if tcp.TLS or tcp.disconnecting or write_side_closed(tcp) or not nothing_unsent(tcp):
        tcp.writeSequence(pieces)
        return
    sock = tcp.socket
    while pieces:
        batch, pieces = pieces[:IOV_MAX], pieces[IOV_MAX:]
        try:
            sent = sock.sendmsg(batch)
        except BlockingIOError:
            sent = 0
        except OSError:  # the connection is going: Twisted finds out on its own write
            tcp.writeSequence(batch + pieces)
            return
        if sent < sum(len(p) for p in batch):
            tcp.writeSequence(_unsent(batch, sent) + pieces)
            return


def _unsent(pieces: list, sent: int) -> list:
    """`pieces` without their first `sent` bytes."""
    for i, piece in enumerate(pieces):
        if sent < len(piece):
            return [piece[sent:] if sent else piece, *pieces[i + 1 :]]
        sent -= len(piece)
    return []
