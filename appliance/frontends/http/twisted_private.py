"""Every use of a private name of twisted.web by the HTTP front end, in one place.

Written against Twisted 26.10. tests/test_twisted_private.py pins each
name used here (and the source of each method overridden): after an upgrade, a
failure there names what to re-read in Twisted before trusting this module again.
The rest of the HTTP front end uses only public names and these.

- `ChannelBase`: HTTPChannel offers no public way to bound the header block, to
  hold a body unread while the gate decides, or to delay "100 Continue" (see
  gate.py). It reads HTTPChannel's parsing state (`__first_line`, name-mangled;
  `_receivedHeaderSize`), its pausing state (`_networkProducer`,
  `_waitingForTransport`, `_handlingRequest`), and overrides `_send100Continue`
  (sent as a request's headers end) and `_respondToBadRequestAndDisconnect`
  (the bare 400 for a malformed request), each turned into a public hook.
- `client_gone`: Request keeps "the connection was lost" in `_disconnected`.
- `bound_instance`: a Klein app reached through its resource class's instance (Klein
  is a descriptor) keeps that instance in `_instance`, and has no public name for it.
"""

from __future__ import annotations

from twisted.web.http import HTTPChannel


class ChannelBase(HTTPChannel):
    """HTTPChannel with its parsing and pausing state and two private steps under public names."""

    @property
    def reading_request_line(self) -> bool:
        """Whether the next line is a request line (not a header)."""
        return self._HTTPChannel__first_line

    @property
    def received_header_size(self) -> int:
        """Bytes of the current request's header block so far."""
        return self._receivedHeaderSize

    @property
    def network_producer(self):
        """The producer over the transport that HTTPChannel pauses and resumes reading with."""
        return self._networkProducer

    @property
    def waiting_for_transport(self) -> bool:
        """Whether HTTPChannel paused reading because the transport's send buffer is full."""
        return self._waitingForTransport

    @property
    def handling_request(self) -> bool:
        """Whether a request is being answered (HTTPChannel reads no further request meanwhile)."""
        return self._handlingRequest

    def bad_request(self) -> None:
        """Answer a malformed request and close (HTTPChannel's: a bare 400)."""
        HTTPChannel._respondToBadRequestAndDisconnect(self)

    def continue_requested(self) -> None:
        """A request's headers asked for "100 Continue" (HTTPChannel's: sent at once)."""
        self.send_100_continue()

    def send_100_continue(self) -> None:
        """Send "HTTP/1.1 100 Continue" now."""
        HTTPChannel._send100Continue(self)

    def _respondToBadRequestAndDisconnect(self):
        self.bad_request()

    def _send100Continue(self):
        self.continue_requested()


def client_gone(request) -> bool:
    """Whether the request's connection was lost."""
    return request._disconnected


def bound_instance(app) -> object:
    """The object a Klein app was reached through (`FilesApi().app`): the one its routes are called on."""
    return app._instance
