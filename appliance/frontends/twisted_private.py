"""Every use of a private name of Twisted's TCP transport by the front ends, in one
place (those of Conch, of the FTP and of the HTTP protocols are in the front ends' own
twisted_private modules).

Written against Twisted 26.10; tests/test_twisted_private.py pins each name.
twisted.internet.abstract.FileDescriptor counts the bytes written and not yet in its
`dataBuffer` in `_tempDataLen`, and marks a half-closed write side in
`_writeDisconnected`: sending at once (tcp_send.py) and SFTP's flow control read them.
"""

from __future__ import annotations


def unsent_bytes(tcp) -> int:
    """Bytes written to a Twisted TCP transport and not yet sent."""
    return len(tcp.dataBuffer) - tcp.offset + tcp._tempDataLen


def nothing_unsent(tcp) -> bool:
    """Whether a Twisted TCP transport has nothing of ours waiting to go (and is connected)."""
    return not tcp._tempDataLen and tcp.offset == len(tcp.dataBuffer) and tcp.connected


def write_side_closed(tcp) -> bool:
    """Whether a Twisted TCP transport's write side is closed (loseWriteConnection)."""
    return tcp._writeDisconnected
