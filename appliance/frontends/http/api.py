"""What every API resource shares: JSON in and out, the caller's account, and the
one mapping of domain errors to the console-spec's JSON error replies."""

from __future__ import annotations

import io
import json
import re
import secrets
from contextlib import contextmanager

from klein import Klein
from twisted.logger import Logger
from twisted.python.failure import Failure
from twisted.web.http import parse_qs
from twisted.web.server import Request
from werkzeug.exceptions import HTTPException, MethodNotAllowed
from werkzeug.routing import IntegerConverter

from ...core.access import Account
from ...core.sessions import TokenInvalid, TokenRefused
from ...deferreds import spawn
from ...errors import (
    AlreadyExists,
    ApplianceError,
    AuthenticationFailed,
    Gone,
    Invalid,
    NotEmpty,
    NotFound,
    PermissionDenied,
    QuotaExceeded,
    RateLimited,
    Unavailable,
)
from .openapi import MAX_PAGE, MAX_PAGE_SIZE, SQLITE_MAX
from .schema import DeclaredKlein, checked_body
from .twisted_private import client_gone

log = Logger()

MAX_JSON_BODY = 256 * 1024  # bytes of a JSON body (the gate refuses a larger one before reading it)
NOT_ALLOWED = "You do not have permission to perform this action."
SECURITY_HEADERS = {
    b"content-security-policy": b"default-src 'self'; img-src 'self' data: blob:; style-src 'self' 'unsafe-inline'; "
    b"connect-src 'self'; object-src 'none'; base-uri 'self'; frame-ancestors 'none'; form-action 'self'",
    b"x-content-type-options": b"nosniff",
    b"referrer-policy": b"same-origin",
    b"x-frame-options": b"DENY",
}


class NotAuthenticated(ApplianceError):
    """No credentials at all (401 without the token_not_valid code)."""


_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")  # a caller's X-Request-Id is kept if it looks like one


class ApplianceRequest(Request):
    """Every reply carries the security headers (HSTS too, over TLS)."""

    def setHeader(self, name, value):
        if name.lower() in (b"server", "server"):
            value = b"Appliance"  # not the server library and its version
        super().setHeader(name, value)

    request_id = "-"
    signed_in = "-"  # organisation/username once authenticate() knows the caller

    def process(self):
        given = (self.getHeader(b"x-request-id") or b"")[:64].decode("latin-1")
        self.request_id = given if _REQUEST_ID.fullmatch(given) else secrets.token_hex(8)
        self.setHeader(b"x-request-id", self.request_id.encode())
        for name, value in SECURITY_HEADERS.items():
            self.setHeader(name, value)
        if self.isSecure():
            self.setHeader(b"strict-transport-security", b"max-age=31536000; includeSubDomains")
        if self.refused:  # the gate's answer: no handler runs
            self.site = self.channel.site
            self.setHeader(b"connection", b"close")
            body = self._refusal(self)
            self.setHeader(b"content-length", str(len(body)).encode())
            self.write(body)
            self.finish()
            return
        super().process()

    # What is read of the body is the gate's call (gate.py): site.gate decides when the
    # headers are complete; the channel (gate.ApplianceChannel) holds or stops the reading.
    refused = False  # answered by `_refusal`, not by a handler; the connection closes after
    expects_continue = False  # a 100 Continue the gate held back
    _refusal = None
    _limit: int | None = None  # most body bytes this request may send (None: no limit)
    _received = 0
    _complete = False  # the whole request has arrived (or was cut short by a refusal)

    @property
    def refused_unanswered(self) -> bool:
        return self.refused and not self._complete

    def _refuse(self, answer) -> None:
        self.refused, self._refusal = True, answer
        self._cut_off = None
        if self.content is not None:
            self.content.close()
        self.content = io.BytesIO()  # nothing of the body is kept
        self.channel.refuse_body()

    def gotLength(self, length):
        gate = getattr(self.channel.site, "gate", None)
        method, path = getattr(self.channel, "_command", None), getattr(self.channel, "_path", None)
        if gate is None or method is None or path is None:
            super().gotLength(length)
            return
        self.method, self.uri = method, path  # the admission checks read the query and headers
        self.path, _, arguments = path.partition(b"?")
        self.args = parse_qs(arguments, 1)  # as Request.requestReceived will
        decision = gate.decide(self, method, path, length)
        if decision.refusal is not None:
            self.content = None
            self._refuse(decision.refusal)
            return
        super().gotLength(length)
        self._limit = decision.limit
        if decision.admit is None:
            self._keep_cut_off(method, path)
            return
        self.channel.hold_body()
        spawn(self._admit(decision, length, method, path), "admitting a request body")

    async def _admit(self, decision, length, method, path) -> None:
        try:
            limit = await decision.admit(self, length)
        except Exception:  # noqa: BLE001 - every refusal (and any fault) is answered by the resource's mapping
            failure = Failure()
            if not client_gone(self) and not self._complete:
                self._refuse(lambda request: decision.errors(request, failure))
                self.channel.answer_refused()
            return
        if client_gone(self) or self._complete:
            return
        if length is not None and limit is not None and length > limit:
            self._refuse(body_too_large(limit))
            self.channel.answer_refused()
            return
        self._limit = limit
        self._keep_cut_off(method, path)
        self.channel.release_body(self.expects_continue)

    def handleContentChunk(self, data):
        if self.refused:
            return
        self._received += len(data)
        if self._limit is not None and self._received > self._limit:
            self._refuse(body_too_large(self._limit))
            return
        super().handleContentChunk(data)

    # A resumable upload keeps the part of a body cut off by a broken connection: the
    # site's `keep_partial_body(request, method, path, body) -> bool` (tus.py) may take it.

    _cut_off = None  # (keeper, method, path) while the body is arriving

    def _keep_cut_off(self, method, path) -> None:
        keeper = getattr(self.channel.site, "keep_partial_body", None)
        if keeper is not None and method in (b"PATCH", b"POST") and path:
            self._cut_off = (keeper, method, path)

    def requestReceived(self, command, path, version):
        self._cut_off = None  # the body is complete: the handler gets it as usual
        self._complete = True
        super().requestReceived(command, path, version)

    def connectionLost(self, reason):
        cut_off, self._cut_off = self._cut_off, None
        if cut_off is not None and self.content is not None:
            keeper, method, path = cut_off
            try:
                if keeper(self, method, path, self.content):
                    self.content = None  # the keeper closes it
            except Exception:  # noqa: BLE001 - never let this break the connection's clean-up
                log.failure("keeping the body of a cut-off request failed")
        super().connectionLost(reason)


def body_too_large(limit: int):
    def answer(request) -> bytes:
        if limit == 0:
            detail = "This address takes no request body: send the request without one."
        else:
            detail = f"The request body is too large: this request may send at most {limit:,} bytes."
        return reply(request, {"detail": detail}, 413)

    return answer


def reply(request, body, status: int = 200) -> bytes:
    request.setResponseCode(status)
    request.setHeader(b"content-type", b"application/json")
    request.setHeader(b"cache-control", b"no-store")
    return json.dumps(body).encode()


def read_json(request) -> dict:
    """The request's JSON object (at most MAX_JSON_BODY bytes), checked against its
    operation's declaration (schema.py)."""
    length = request.getHeader(b"content-length")
    if length is not None and int(length) > MAX_JSON_BODY:
        raise Invalid(f"The request body is too large (at most {MAX_JSON_BODY} bytes).")
    raw = request.content.read(MAX_JSON_BODY + 1) if request.content is not None else b""
    if len(raw) > MAX_JSON_BODY:
        raise Invalid(f"The request body is too large (at most {MAX_JSON_BODY} bytes).")
    if not raw.strip():
        return checked_body(request, {})
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):  # RecursionError: nested too deep
        raise Invalid("The request body is not valid JSON.") from None
    if not isinstance(body, dict):
        raise Invalid("The request body must be a JSON object.")
    return checked_body(request, body)


def required(body: dict, *names: str) -> dict[str, str]:
    """The named string fields of a JSON body; missing or empty ones are a 400."""
    values = {name: body.get(name) for name in names}
    missing = {
        name: ["This field is required."] for name, value in values.items() if not isinstance(value, str) or not value
    }
    if missing:
        raise Invalid("Some fields are missing.", missing)
    return values


@contextmanager
def field_named(core_name: str, request_name: str):
    """An Invalid raised inside names the field `core_name` (the core's word, say
    "organisation name"); the reply names it as this request's body does, so the
    console shows the error under its own field."""
    try:
        yield
    except Invalid as e:
        if core_name in e.fields:
            e.fields[request_name] = e.fields.pop(core_name)
        raise


def client_address(request) -> str:
    return getattr(request.getClientAddress(), "host", "") or ""


def query(request, name: str, default: str = "") -> str:
    """The query parameter `name` (`default` when absent); one given more than once is a
    400 naming it (no parameter of the API is a list: which one would count?)."""
    values = request.args.get(name.encode())
    if not values:
        return default
    if len(values) > 1:
        message = f"Give {name} once, not {len(values)} times."
        raise Invalid(message, {name: [message]})
    return values[0].decode("utf-8", "replace")


def bearer(request) -> str | None:
    header = request.getHeader(b"authorization") or b""
    kind, _, token = header.decode("latin-1").partition(" ")
    if kind.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


async def authenticate(core, request, *, admin: bool = False, scope: str | None = None) -> Account:
    """The signed-in caller (a session or an API token with `scope`, "admin" for admin
    calls), whom the core's access policy lets act now."""
    token = bearer(request)
    if token is None:
        if request.getHeader(b"authorization"):  # say, "Token ..." or a bare token: say how instead
            raise NotAuthenticated("Send the token as 'Authorization: Bearer <token>'.")
        raise NotAuthenticated("Authentication credentials were not provided.")
    address, encrypted = client_address(request), request.isSecure()
    if core.api_tokens.looks_like(token):
        account = await core.api_tokens.account(token, "admin" if admin else scope, address, encrypted)
    else:
        account = await core.sessions.account(token, address, encrypted)
    if admin and not account.profile.is_admin:
        raise PermissionDenied(NOT_ALLOWED)
    request.signed_in = f"{account.organisation.subdomain}/{account.profile.username}"
    return account


def error_reply(request, failure) -> bytes:
    """The one mapping of errors to replies (console-spec §8 shapes)."""
    error = failure.value
    if isinstance(error, TokenRefused) and error.refusal.organisation:
        return reply(request, {"detail": error.message}, 403)  # console-spec: the organisation of a token's owner
    if isinstance(error, (TokenInvalid, NotAuthenticated, AuthenticationFailed)):
        request.setHeader(b"www-authenticate", b'Bearer realm="api"')  # RFC 9110 15.5.2: a 401 names its scheme
    if isinstance(error, TokenInvalid):
        token_class = "AccessToken" if error.token_type == "access" else "RefreshToken"
        return reply(
            request,
            {
                "detail": "Given token not valid for any token type",
                "code": "token_not_valid",
                "messages": [{"token_class": token_class, "token_type": error.token_type, "message": error.message}],
            },
            401,
        )
    if isinstance(error, AuthenticationFailed):
        body = {"detail": error.message}
        if error.code:
            body["code"] = error.code  # why, so the console shows each reason its own way
        if error.retry_after is not None:
            request.setHeader(b"retry-after", str(error.retry_after).encode())  # a banned address: when to come back
            body["retry_after"] = error.retry_after
        return reply(request, body, 401)
    if isinstance(error, NotAuthenticated):
        return reply(request, {"detail": error.message}, 401)
    if isinstance(error, Invalid):
        body = dict(error.fields) if error.fields else {"detail": error.message}
        return reply(request, body, 400)
    if isinstance(error, PermissionDenied):
        return reply(request, {"detail": error.message}, 403)
    if isinstance(error, NotFound):
        return reply(request, {"detail": error.message}, 404)
    if isinstance(error, Gone):
        return reply(request, {"detail": error.message}, 410)
    if isinstance(error, (AlreadyExists, NotEmpty)):
        return reply(request, {"detail": error.message}, 409 if isinstance(error, NotEmpty) else 400)
    if isinstance(error, QuotaExceeded):
        return reply(request, {"detail": error.message}, 507)
    if isinstance(error, Unavailable):
        return reply(request, {"detail": error.message}, 503)
    if isinstance(error, RateLimited):
        request.setHeader(b"retry-after", str(error.retry_after).encode())
        return reply(request, {"detail": error.message}, 429)
    if isinstance(error, MethodNotAllowed):  # the path exists, not with this method
        request.setHeader(b"allow", ", ".join(sorted(error.valid_methods or ())).encode())
        method = request.method.decode("latin-1")
        return reply(request, {"detail": f'Method "{method}" not allowed.'}, 405)
    if isinstance(error, HTTPException):  # no route of the resource matches (say, /profiles/abc/)
        return reply(
            request, {"detail": "Not found."} if error.code == 404 else {"detail": error.name}, error.code or 400
        )
    log.failure("unexpected error answering {method} {path}", failure, method=request.method, path=request.path)
    return reply(request, {"detail": "Internal error: the request was not carried out."}, 500)


def page(request, items: list, count: int, default: int = 25) -> dict:
    """{count, next, previous, results} for a list endpoint."""
    size, offset = paging(request, default)
    number = offset // size + 1
    base = request.path.decode()

    def link(target: int) -> str:
        return f"{base}?page={target}&page_size={size}"

    return {
        "count": count,
        "next": link(number + 1) if number * size < count else None,
        "previous": link(number - 1) if number > 1 else None,
        "results": items,
    }


def paging(request, default: int = 25) -> tuple[int, int]:
    """(limit, offset) from ?page=&page_size= (a number out of its range, as the OpenAPI
    document declares it, is a 400 naming the field, never silently moved into range)."""
    try:  # given empty is not a number either
        number = int(query(request, "page", "1"))
        size = int(query(request, "page_size", str(default)))
    except ValueError:
        raise Invalid("page and page_size must be whole numbers.") from None
    if not 1 <= number <= MAX_PAGE:  # past MAX_PAGE: an offset past SQLite's integers
        raise Invalid(f"page must be from 1 to {MAX_PAGE:,}.", {"page": [f"Ask for a page from 1 to {MAX_PAGE:,}."]})
    if not 1 <= size <= MAX_PAGE_SIZE:
        message = f"Ask for 1 to {MAX_PAGE_SIZE} items a page."
        raise Invalid(f"page_size: {message}", {"page_size": [message]})
    return size, (number - 1) * size


class RowId(IntegerConverter):
    """`<int:...>` in routes: a database id. One larger than SQLite's largest integer names no
    row: it reaches the handler as 0, which no row has, so every method answers the resource's
    404 (refused here, werkzeug would answer 405 to every method of the path but its first)."""

    def to_python(self, value: str) -> int:
        number = super().to_python(value)
        return number if number <= SQLITE_MAX else 0


def json_api() -> Klein:
    """A Klein app whose every error becomes the catalogue's JSON reply."""
    app = DeclaredKlein()  # tells read_json which operation's declaration the body must match
    app.url_map.converters["int"] = RowId
    app.handle_errors(Exception)(lambda resource, request, failure: error_reply(request, failure))
    return app


class Resource:
    """An API resource group: a Klein app of its own over the core."""

    def __init__(self, core):
        self.core = core
