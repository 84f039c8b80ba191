"""The gate in front of every HTTP request: what is read of it before a handler runs.

Twisted reads a request's whole body (spooled to a temporary file past 100 kB)
before it routes it, so anybody could fill the disk through any address. Here a
body is read only once the route and the caller are known:

- when the headers are complete, the route is looked up in the same Klein maps
  that route the request later (`Gate.decide`). An address that takes no body
  (none exists, or the method there takes none) refuses one at once; a JSON call
  takes at most JSON_BODY bytes (Content-Length checked first, the bytes counted
  as they arrive for a chunked body);
- a route its resource lists in `bodies` as an admission method (uploads: files,
  tus PATCH, a share's drop box) is held with the connection paused, no byte of
  the body read, while that method signs the caller in and asks the core whether
  this upload may go ahead (permission, quota against Content-Length); it
  returns the most bytes the body may have. Only then is the body read;
- a refusal is a complete response with Connection: close, and the connection
  closes: what the client sent after the headers is never read as a request. What
  the client is still sending is read and dropped until it has been quiet for
  QUIET seconds, for at most LINGER seconds in all, before the close (a lingering
  close, as Apache and nginx make): closed with bytes
  unread, the connection would be reset by the kernel, and a client that sends
  its whole body before reading (Python's http.client, requests) would get a
  broken pipe instead of the reply. Dropped bytes cost no disk and no memory.

Request lines and header blocks are bounded too (414, 431). The Twisted internals
this leans on (HTTPChannel's line parsing, pausing and 100-continue) are reached
through twisted_private.ChannelBase only; tests/test_twisted_private.py
pins them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from twisted.python.failure import Failure
from werkzeug.exceptions import MethodNotAllowed, NotFound
from werkzeug.routing import RequestRedirect

from .api import MAX_JSON_BODY, body_too_large, error_reply
from .twisted_private import ChannelBase

JSON_BODY = MAX_JSON_BODY  # bytes a JSON call's body may have
MAX_LINE = 8 * 1024  # bytes of the request line, and of any one header line
MAX_HEADERS = 16 * 1024  # bytes of the request line and all headers together
LINGER = 10.0  # seconds at most that a refused body is read and dropped before the close...
QUIET = 2.0  # ...or fewer, once the client has sent nothing for this long
BODY_METHODS = ("POST", "PUT", "PATCH")

Answer = Callable[[object], bytes]  # writes a refusal's status and headers on the request; its body


@dataclass
class Decision:
    """What may be read of one request's body."""

    limit: int | None = 0  # most bytes (None: no limit)
    admit: Callable | None = None  # async (request, length) -> limit: asked before any byte is read
    errors: Callable = error_reply  # the resource's mapping of errors to replies
    refusal: Answer | None = None  # answer at once, read nothing


class Gate:
    """Decides, from the method and address alone, what a request may send as its body."""

    def __init__(self, mounts: list[tuple[str, object]]):
        # (path prefix, resource), longest first: /api/portal/files/tus before /api/portal/files
        self._mounts = sorted(mounts, key=lambda mount: -len(mount[0]))

    def route(self, method: str, path: str) -> tuple[object | None, str | None, dict, Exception | None]:
        """(resource, handler name, route arguments, None), or the 404/405 the request will get."""
        for prefix, resource in self._mounts:
            if path.startswith(prefix + "/"):
                adapter = resource.app.url_map.bind("localhost")
                try:
                    endpoint, args = adapter.match(path[len(prefix) :], method=method)
                except (NotFound, MethodNotAllowed) as e:
                    return resource, None, {}, e
                except RequestRedirect:  # a missing trailing slash: answered by a redirect
                    return resource, None, {}, None
                if endpoint.startswith("not_found"):  # a resource's catch-all
                    return resource, None, {}, NotFound()
                return resource, endpoint, args, None
        if path == "/api" or path.startswith("/api/"):
            return None, None, {}, NotFound()
        return None, None, {}, None  # the ops endpoints and the console: no body anywhere

    def decide(self, request, method: bytes, target: bytes, length: int | None) -> Decision:
        """What may be read of the body of `method target` (length: Content-Length, None when chunked)."""
        method_name = method.decode("latin-1").upper()
        path = target.decode("latin-1")
        if "://" in path:  # absolute-form request target
            path = urlsplit(path).path or "/"
        path = unquote(path.split("?", 1)[0], errors="replace")
        resource, endpoint, args, missing = self.route(method_name, path)
        errors = getattr(resource, "errors", error_reply)
        decision = Decision(errors=errors)
        offered = length is None or length > 0
        if missing is not None:
            if offered:
                failure = Failure(missing)
                decision.refusal = lambda request: errors(request, failure)
            return decision
        spec = getattr(resource, "bodies", {}).get(endpoint) if endpoint else None
        if isinstance(spec, str) and offered:  # an admission method of the resource
            admit = getattr(resource, spec)
            decision.limit = None
            decision.admit = lambda request, length: admit(request, length, **args)
            return decision
        if isinstance(spec, int):
            decision.limit = spec
        else:
            # any API call may carry a small JSON body (a GET or DELETE one is read, then ignored,
            # as HTTP clients send `{}` there); the console's pages and assets take none
            takes_json = method_name in BODY_METHODS or path.startswith("/api/")
            decision.limit = JSON_BODY if endpoint and takes_json else 0
        if offered and (length is None and decision.limit == 0 or length is not None and length > decision.limit):
            decision.refusal = body_too_large(decision.limit)
        return decision


STATUS_LINES = {
    400: b"400 Bad Request",
    414: b"414 URI Too Long",
    431: b"431 Request Header Fields Too Large",
}


class ApplianceChannel(ChannelBase):
    """HTTPChannel with bounded request lines and headers, complete error replies, and
    a body that can wait, unread, while the gate asks whether it may come."""

    MAX_LENGTH = MAX_LINE
    totalHeadersSize = MAX_HEADERS
    _holding = False  # the current request's body waits for admission: nothing is read
    _unread = False  # a refused request left bytes unread: linger before closing
    _lingering = None  # (quiet, deadline): the delayed calls that end a lingering close

    def _answer_and_close(self, status: int, detail: str) -> None:
        body = json.dumps({"detail": detail}).encode()
        self.transport.write(
            b"HTTP/1.1 %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n"
            b"cache-control: no-store\r\nconnection: close\r\n\r\n%s" % (STATUS_LINES[status], len(body), body)
        )
        self.paused = True  # LineReceiver reads no further line or byte of this connection
        self._unread = True
        self.loseConnection()

    def loseConnection(self):
        """Close; after a refusal, first read and drop what the client still sends until
        it closes, goes quiet, or LINGER seconds have passed (see the module's docstring)."""
        if self._lingering is not None:
            return
        if not self._unread:
            super().loseConnection()
            return
        self.network_producer.unregisterProducer()
        self._lingering = (self.callLater(QUIET, self._close_now), self.callLater(LINGER, self._close_now))
        self.transport.resumeProducing()

    def _close_now(self) -> None:
        self._stop_lingering()
        self.transport.loseConnection()

    def _stop_lingering(self) -> None:
        for call in self._lingering or ():
            if call.active():
                call.cancel()
        self._lingering = None

    def dataReceived(self, data):
        if self._lingering is not None:
            self._lingering[0].reset(QUIET)  # dropped: the reply is out, the connection closing
        elif not (self._unread and self.paused):  # else dropped: a refused body, the reply on its way
            super().dataReceived(data)

    def connectionLost(self, reason):
        self._stop_lingering()
        super().connectionLost(reason)

    def bad_request(self):
        self._answer_and_close(400, "The request is not valid HTTP.")

    def lineLengthExceeded(self, line):
        if self.reading_request_line:
            self._answer_and_close(414, f"The request line is too long: at most {MAX_LINE:,} bytes.")
        else:
            self._answer_and_close(431, f"A header line is too long: at most {MAX_LINE:,} bytes.")

    def lineReceived(self, line):
        if not self.reading_request_line and self.received_header_size + len(line) > self.totalHeadersSize:
            self._answer_and_close(431, f"The request headers are too large: at most {MAX_HEADERS:,} bytes in all.")
            return
        self._parsing += 1
        try:
            super().lineReceived(line)
        finally:
            self._parsing -= 1
        self.answer_refused()

    def rawDataReceived(self, data):
        self._parsing += 1
        try:
            super().rawDataReceived(data)
        finally:
            self._parsing -= 1
        self.answer_refused()

    _parsing = 0  # inside HTTPChannel's parsing of a line or of body bytes

    def answer_refused(self) -> None:
        """Answer a refused request now, or, when it was refused while its headers or
        body were being parsed, once the parser is done with the bytes at hand (the
        rest stay unread)."""
        request = self.requests[-1] if self.requests else None
        if not self._parsing and request is not None and getattr(request, "refused_unanswered", False):
            self.allContentReceived()

    def refuse_body(self) -> None:
        """Read nothing more: the request is answered with a refusal, then the connection closes."""
        self.persistent = False
        self._unread = True
        self.paused = True
        self.network_producer.pauseProducing()

    def hold_body(self) -> None:
        """Read no byte of the body until `release_body`."""
        self._holding = True
        self.paused = True
        self.network_producer.pauseProducing()

    def release_body(self, expects_continue: bool) -> None:
        self._holding = False
        self.paused = False
        if expects_continue:
            self.send_100_continue()
        if not self.waiting_for_transport:
            self.network_producer.resumeProducing()
        self.dataReceived(b"")  # what arrived with the headers

    def continue_requested(self):
        request = self.requests[-1] if self.requests else None
        if self._holding or self.paused or request is None or request.refused:
            if request is not None:
                request.expects_continue = True  # sent once the body is admitted, never for a refusal
            return
        self.send_100_continue()

    def resumeProducing(self):
        super().resumeProducing()
        if self._holding or (self.paused and not self.handling_request):
            self.network_producer.pauseProducing()  # the transport drained: still nothing to read
