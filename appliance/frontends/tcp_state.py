"""What the kernel knows of a TCP connection (Linux's TCP_INFO), for the front ends.

- `least_round_trip`: the connection's least round trip seen (SFTP paces paramiko
  clients by it, see sftp/compat.py);
- `peer_has_closed`: whether the peer has closed or reset the connection, as the
  kernel knows it now, before the reactor has read the end of the stream (FTP commits
  an upload only if its control connection is still open, see ftp/data.py).
"""

from __future__ import annotations

import socket
import struct

# struct tcp_info (linux/tcp.h): tcpi_state is its first byte; tcpi_min_rtt, the least
# round trip seen (microseconds), is at byte 148. Not tcpi_rtt, the smoothed one, which
# on a busy machine holds the time the daemon took to answer during the handshake.
_STATE = struct.Struct("=B")
_MIN_RTT = struct.Struct("=148xL")
# the states of a connection whose peer has not sent its FIN (net/tcp_states.h): open
# (TCP_ESTABLISHED), or closing from our side only (TCP_FIN_WAIT1, TCP_FIN_WAIT2)
_PEER_OPEN = frozenset({1, 4, 5})


def _tcp_info(sock, layout: struct.Struct) -> tuple | None:
    try:
        return layout.unpack(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, layout.size))
    except (OSError, AttributeError, struct.error, ValueError):
        return None


def least_round_trip(sock) -> float | None:
    """The least round-trip time the kernel has seen on a TCP socket, in seconds, or None."""
    info = _tcp_info(sock, _MIN_RTT)
    return None if info is None else info[0] / 1_000_000


def peer_has_closed(sock) -> bool:
    """True when the peer has closed (FIN) or reset the connection, or our socket is
    closed; False while the peer's side is open, or where nothing can tell (no socket,
    not TCP): the caller then knows only what its reactor has seen."""
    if sock is None:
        return False
    try:
        if sock.fileno() < 0:
            return True
    except (OSError, AttributeError):
        return True
    info = _tcp_info(sock, _STATE)
    if info is None:
        return False
    return info[0] not in _PEER_OPEN
