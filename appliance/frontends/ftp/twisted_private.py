"""Every use of a private name of Twisted by the FTP front end, in one place.

Written against Twisted 26.10. tests/test_twisted_private.py pins each
name used here (and the source of each method overridden): after an upgrade, a
failure there names what to re-read in Twisted before trusting this module again.
The rest of the FTP front end uses only Twisted's public names and these.

- `HoldingTLS`: TLSMemoryBIOProtocol (twisted.protocols.tls) has no public way to
  hold back what OpenSSL writes after the handshake (TLS 1.3 session tickets, see
  transfer.DataTLS for why), nor to say when the application starts sending. Its
  private `_flushSendBIO` (every write to the socket goes through it), `_write`
  (application data), `_shutdownTLS` (our close_notify) and `_tlsShutdownFinished`
  (the TLS shutdown done) are overridden to call two public hooks, and
  `_handshakeDone` is read (Twisted tells the wrapped protocol through
  IHandshakeListener, not the TLS protocol itself).
"""

from __future__ import annotations

from twisted.protocols.tls import TLSMemoryBIOProtocol


class HoldingTLS(TLSMemoryBIOProtocol):
    """TLSMemoryBIOProtocol with hooks at its private send points."""

    def hold_output(self) -> bool:
        """Whether what OpenSSL wrote waits in the TLS layer instead of going out now."""
        return False

    def sending(self) -> None:
        """Called before we send application data, our close_notify, or finish the TLS shutdown."""

    @property
    def handshake_done(self) -> bool:
        return self._handshakeDone

    def _flushSendBIO(self):
        if not self.hold_output():
            super()._flushSendBIO()

    def _write(self, data):
        self.sending()
        super()._write(data)

    def _shutdownTLS(self):
        self.sending()
        super()._shutdownTLS()

    def _tlsShutdownFinished(self, reason):
        self.sending()
        super()._tlsShutdownFinished(reason)
