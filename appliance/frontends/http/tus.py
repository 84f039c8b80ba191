"""Resumable uploads over HTTP by the tus 1.0.0 protocol (core, creation,
termination, expiration), for tus-js-client in the console and for scripts.

    OPTIONS /api/portal/files/tus/         versions, extensions, maximum size
    POST    /api/portal/files/tus/         create: Upload-Length, Upload-Metadata -> 201 + Location
    HEAD    /api/portal/files/tus/<id>     Upload-Offset and Upload-Length
    PATCH   /api/portal/files/tus/<id>     append at Upload-Offset -> 204 + the new Upload-Offset
    DELETE  /api/portal/files/tus/<id>     terminate

Upload-Metadata (base64 values) names the file: `filename` (or `name`), the target
folder `path`, `relativePath` for a file inside a dropped folder (its folders are
created), and `overwrite`. Every request is authenticated on its own (a session or
an API token with the files scope); the upload belongs to the profile, so a
refreshed access token continues it. The rules live in core/files/resumable.py.

Twisted hands a request to its handler only once the whole body has arrived,
spooled to request.content (a temporary file past 100 kB, so memory stays flat
whatever the size). A PATCH whose connection breaks before the body is complete
never reaches a handler: ApplianceRequest passes its partial body to
`keep_partial_body`, which appends the bytes that did arrive, so the client's
next HEAD reports them and it resumes from there instead of from the last
completed PATCH.

On a remote source the bytes are staged on the appliance's disk and sent to the
source when the last one arrives; if that send fails the request is answered 503
(a HEAD: 423 Locked) with the source's words, and the next HEAD sends it again.
"""

from __future__ import annotations

import base64
import binascii
import re
from email.utils import formatdate
from urllib.parse import quote, unquote_to_bytes

from klein import Klein
from twisted.logger import Logger
from werkzeug.exceptions import HTTPException

from ...core.files.resumable import OffsetMismatch, SendFailed, TooLarge, UploadState
from ...deferreds import spawn
from ...errors import ApplianceError, Invalid
from .api import Resource, authenticate, client_address, error_reply, reply

log = Logger()

TUS_VERSION = b"1.0.0"
EXTENSIONS = b"creation,termination,expiration"
PREFIX = "/api/portal/files/tus/"
OFFSET_STREAM = b"application/offset+octet-stream"
EXPOSED = (
    b"Location, Upload-Offset, Upload-Length, Upload-Metadata, Upload-Expires, "
    b"Tus-Resumable, Tus-Version, Tus-Extension, Tus-Max-Size, Upload-Error"
)
UPLOAD_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
NUMBER = re.compile(rb"^[0-9]{1,20}$")


class VersionMismatch(ApplianceError):
    """No or another Tus-Resumable version (412)."""


class UnsupportedMediaType(ApplianceError):
    """A PATCH whose body is not application/offset+octet-stream (415)."""


STATUS = ((VersionMismatch, 412), (UnsupportedMediaType, 415), (OffsetMismatch, 409), (TooLarge, 413))


def tus_headers(request) -> None:
    request.setHeader(b"tus-resumable", TUS_VERSION)
    request.setHeader(b"access-control-expose-headers", EXPOSED)


def tus_error(request, failure) -> bytes:
    """The catalogue's JSON errors, with the protocol's own statuses and headers."""
    tus_headers(request)
    if isinstance(failure.value, SendFailed) and request.method == b"HEAD":
        # tus-js-client retries a HEAD answered 423 and starts the upload over on any other error;
        # a HEAD's reply has no body, so the detail also rides in a header (percent-encoded UTF-8)
        request.setHeader(b"upload-error", quote(failure.value.message, safe=" ,.:;'()!?").encode("ascii"))
        return reply(request, {"detail": failure.value.message}, 423)
    for kind, status in STATUS:
        if isinstance(failure.value, kind):
            if status == 412:
                request.setHeader(b"tus-version", TUS_VERSION)
            return reply(request, {"detail": failure.value.message}, status)
    if isinstance(failure.value, HTTPException):  # no such route or method here
        missing = failure.value.code == 404
        return reply(request, {"detail": "Not found." if missing else "Method not allowed."}, failure.value.code)
    return error_reply(request, failure)


def tus_api() -> Klein:
    app = Klein()
    app.handle_errors(Exception)(lambda resource, request, failure: tus_error(request, failure))
    return app


def http_date(epoch: float) -> bytes:
    return formatdate(epoch, usegmt=True).encode()


def parse_metadata(header: bytes | None) -> dict[str, str]:
    """Upload-Metadata as {key: base64 value} (validated, kept as sent for HEAD)."""
    metadata: dict[str, str] = {}
    for pair in (header or b"").decode("latin-1").split(","):
        pair = pair.strip()
        if not pair:
            continue
        key, _, value = pair.partition(" ")
        value = value.strip()
        if not key.isascii() or not key.isprintable() or key in metadata or " " in value:
            raise Invalid(f"Upload-Metadata: the key {key!r} is not valid or given twice.")
        try:
            base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise Invalid(f"Upload-Metadata: the value of {key!r} is not base64.") from None
        metadata[key] = value
    return metadata


def metadata_text(metadata: dict[str, str], *keys: str) -> str | None:
    """The first of `keys` present with a value, decoded as UTF-8."""
    for key in keys:
        if metadata.get(key):
            try:
                return base64.b64decode(metadata[key]).decode("utf-8")
            except UnicodeDecodeError:
                raise Invalid(f"Upload-Metadata: {key} is not UTF-8 text.") from None
    return None


def encode_metadata(metadata: dict[str, str]) -> bytes:
    return ",".join(f"{key} {value}".rstrip() for key, value in metadata.items()).encode("latin-1")


def number(request, name: bytes) -> int:
    value = request.getHeader(name)
    if value is None or not NUMBER.match(value):
        header = name.decode().title()
        raise Invalid(f"{header} must be a whole number of bytes.", {header: ["A whole number of bytes is required."]})
    return int(value)


def check_version(request) -> None:
    if request.getHeader(b"tus-resumable") != TUS_VERSION:
        raise VersionMismatch("This server speaks tus 1.0.0: send Tus-Resumable: 1.0.0.")


def patch_offset(request) -> int:
    """The checks of a PATCH's headers (version, content type, offset); the offset."""
    check_version(request)
    kind = (request.getHeader(b"content-type") or b"").split(b";")[0].strip().lower()
    if kind != OFFSET_STREAM:
        raise UnsupportedMediaType("Send the bytes as application/offset+octet-stream.")
    return number(request, b"upload-offset")


def upload_id_of(path: bytes) -> str | None:
    """The upload id in a request target under PREFIX, or None."""
    target = unquote_to_bytes(path.split(b"?", 1)[0]).decode("utf-8", "replace")
    if "://" in target:  # absolute-form request target
        target = "/" + target.split("://", 1)[1].partition("/")[2]
    if not target.startswith(PREFIX):
        return None
    upload_id = target[len(PREFIX) :]
    return upload_id if UPLOAD_ID.match(upload_id) else None


class TusApi(Resource):
    app = tus_api()
    bodies = {"append": "admit_append", "overridden": "admit_append"}  # read only once allowed

    def errors(self, request, failure) -> bytes:
        return tus_error(request, failure)

    async def admit_append(self, request, length: int | None, upload_id: str) -> int:
        """Before any byte of a PATCH is read: its headers, the caller, and that the upload is
        theirs and takes that many bytes. The most bytes the body may have."""
        if (
            request.method == b"POST"
            and (request.getHeader(b"x-http-method-override") or b"").strip().upper() != b"PATCH"
        ):
            return 0  # a DELETE or a mistake: no body
        tus_headers(request)
        patch_offset(request)
        account = await self._account(request)
        return await self.core.uploads.check_append(account, upload_id, length)

    async def _account(self, request):
        return await authenticate(self.core, request, scope="files")

    def _state_headers(self, request, state: UploadState) -> None:
        request.setHeader(b"upload-offset", str(state.offset).encode())
        if state.expires_at is not None:
            request.setHeader(b"upload-expires", http_date(state.expires_at))

    # -- discovery ---------------------------------------------------------------------

    @app.route("/", methods=["OPTIONS"])
    def options(self, request):
        """The tus versions, extensions and maximum upload size (no sign-in)."""
        tus_headers(request)
        request.setHeader(b"tus-version", TUS_VERSION)
        request.setHeader(b"tus-extension", EXTENSIONS)
        request.setHeader(b"tus-max-size", str(self.core.uploads.max_size).encode())
        request.setResponseCode(204)
        return b""

    @app.route("/<upload_id>", methods=["OPTIONS"])
    def upload_options(self, request, upload_id):
        return self.options(request)

    # -- creation ------------------------------------------------------------------------

    @app.route("/", methods=["POST"])
    async def create(self, request):
        """Create a resumable upload (tus creation): Upload-Length and Upload-Metadata in, 201 and Location out."""
        tus_headers(request)
        check_version(request)
        if request.getHeader(b"upload-defer-length") is not None:
            raise Invalid("Upload-Defer-Length is not supported: send Upload-Length.")
        length = number(request, b"upload-length")
        if length > self.core.uploads.max_size:
            raise TooLarge(f"The upload is larger than the {self.core.uploads.max_size} bytes this server accepts.")
        metadata = parse_metadata(request.getHeader(b"upload-metadata"))
        account = await self._account(request)
        overwrite = (metadata_text(metadata, "overwrite") or "").strip().lower() in ("1", "true", "yes")
        state = await self.core.uploads.create(
            account,
            account.protocol,
            client_address(request),
            folder=metadata_text(metadata, "path") or "/",
            name=metadata_text(metadata, "relativePath", "filename", "name") or "",
            length=length,
            metadata=metadata,
            overwrite=overwrite,
        )
        request.setResponseCode(201)
        request.setHeader(b"content-length", b"0")
        request.setHeader(b"location", (PREFIX + state.id).encode())
        if state.expires_at is not None:
            request.setHeader(b"upload-expires", http_date(state.expires_at))
        return b""

    # -- one upload ----------------------------------------------------------------------

    @app.route("/<upload_id>", methods=["HEAD"])
    async def status(self, request, upload_id):
        tus_headers(request)
        request.setHeader(b"cache-control", b"no-store")
        check_version(request)
        account = await self._account(request)
        state = await self.core.uploads.status(account, account.protocol, client_address(request), upload_id)
        request.setHeader(b"upload-length", str(state.length).encode())
        if state.metadata:
            request.setHeader(b"upload-metadata", encode_metadata(state.metadata))
        self._state_headers(request, state)
        request.setResponseCode(200)
        return b""

    @app.route("/<upload_id>", methods=["PATCH"])
    async def append(self, request, upload_id):
        """Append bytes at Upload-Offset (application/offset+octet-stream); 204 with the new Upload-Offset."""
        tus_headers(request)
        offset = patch_offset(request)
        account = await self._account(request)
        # The body is ours now: Twisted would close request.content under the copy if the client left.
        body, request.content = request.content, None
        try:
            state = await self.core.uploads.append(
                account, account.protocol, client_address(request), upload_id, offset, body
            )
        finally:
            body.close()
        self._state_headers(request, state)
        request.setResponseCode(204)
        return b""

    @app.route("/<upload_id>", methods=["DELETE"])
    async def terminate(self, request, upload_id):
        """Cancel an upload (tus termination): its partial data is removed."""
        tus_headers(request)
        check_version(request)
        account = await self._account(request)
        await self.core.uploads.terminate(account, account.protocol, client_address(request), upload_id)
        request.setResponseCode(204)
        return b""

    @app.route("/<upload_id>", methods=["POST"])
    async def overridden(self, request, upload_id):
        """PATCH or DELETE sent as POST with X-HTTP-Method-Override (for clients that cannot send them)."""
        method = (request.getHeader(b"x-http-method-override") or b"").strip().upper()
        if method == b"PATCH":
            return await self.append(request, upload_id)
        if method == b"DELETE":
            return await self.terminate(request, upload_id)
        tus_headers(request)
        check_version(request)
        raise Invalid("POST to an upload needs X-HTTP-Method-Override: PATCH or DELETE.")

    # -- a PATCH cut off midway -------------------------------------------------------------

    def keep_partial_body(self, request, command: bytes, path: bytes, body) -> bool:
        """Called by ApplianceRequest when a connection breaks before the request's body is
        complete. For a tus PATCH, append what arrived; returns whether it took `body`."""
        method = command.upper()
        if method == b"POST":
            method = (request.getHeader(b"x-http-method-override") or b"").strip().upper()
        upload_id = upload_id_of(path)
        if method != b"PATCH" or upload_id is None or self.core.auth.closing:
            return False
        try:
            offset = patch_offset(request)
        except ApplianceError:
            return False
        spawn(self._keep(request, upload_id, offset, body), "keeping the bytes of a cut-off upload")
        return True

    async def _keep(self, request, upload_id: str, offset: int, body) -> None:
        try:
            # claimed before the first await, so a HEAD that follows the reconnection waits for it
            async with self.core.uploads.exclusive(upload_id):
                account = await self._account(request)
                state = await self.core.uploads.append(
                    account, account.protocol, client_address(request), upload_id, offset, body, held=True
                )
            log.info(
                "a cut-off upload {id} keeps {count} bytes: now at offset {offset}",
                id=upload_id,
                count=state.offset - offset,
                offset=state.offset,
            )
        except ApplianceError as e:
            log.info("the bytes of a cut-off upload {id} were not kept: {error}", id=upload_id, error=e.message)
        finally:
            body.close()
