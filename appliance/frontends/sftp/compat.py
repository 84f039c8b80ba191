"""What the SFTP front end does differently for particular clients, by the version
string they send, as OpenSSH's compat.c does. One entry per client, each with why.

paramiko (pysftp, Fabric, Ansible's paramiko mode, Airflow's SFTP hook) keeps what
arrives on a channel in a `BufferedPipe` whose every read deletes what it returns
from the front of an `array.array`: a memmove of everything still buffered. A
download sent as fast as its window allows fills that buffer to the whole window
(2 MiB by default), and the client then spends half its CPU moving bytes (a 1 GiB
`get()`: 6.8 s of CPU, 125-160 MB/s, against OpenSSH's sshd too). So at most
`PARAMIKO_UNREAD` bytes are left unread at a paramiko client on a link where that
costs no speed: the allowance grows with the connection's round-trip time
(`BYTES_PER_RTT_SECOND` a second of its least round trip), so over any real network the client's window
is used whole.
"""

from __future__ import annotations

PARAMIKO_UNREAD = 512 * 1024
# what a link might carry in one round trip, per second of it: the unread allowance
# grows by this times the round-trip time (1 ms: 1 MB more), so only a LAN or
# loopback connection is held to little more than PARAMIKO_UNREAD
BYTES_PER_RTT_SECOND = 1_000_000_000


def unread_allowance(version: bytes, window: int, rtt: float | None) -> int | None:
    """At most how many bytes of a channel with the peer's `window` to leave unread
    at the client, or None for the whole window (every client but the ones named)."""
    if not version.startswith(b"SSH-2.0-paramiko"):
        return None
    if rtt is None:
        return None  # unknown link: no limit
    # paramiko reopens its window once a tenth of it is read: at a quarter of the window
    # at least, the client always has enough unread to reach that point
    allowance = max(PARAMIKO_UNREAD, window // 4) + int(rtt * BYTES_PER_RTT_SECOND)
    return allowance if allowance < window else None
