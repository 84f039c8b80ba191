"""The signed-in user's files over HTTP, through the same core as SFTP and FTP
(same confinement, permissions, quotas and audit rows, whose protocol is the door
the caller signed in by: "web" for the console, "api" for an API token)."""

from __future__ import annotations

import posixpath
import re
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from email.utils import formatdate, parsedate_to_datetime
from urllib.parse import quote, urlencode

import multipart
from twisted.internet import defer
from twisted.internet.interfaces import IPushProducer
from zope.interface import implementer

from ...core.files import Entry, FileSession, Reader, Writer, split_path, virtual
from ...errors import Invalid
from .api import Resource, authenticate, bearer, client_address, json_api, paging, query, read_json, reply

CHUNK = 256 * 1024  # bytes per read while streaming a download or a request body
FILES_PAGE = 100  # entries in a page of a folder's listing, unless page_size says
RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")  # one range; others (several, other units) are ignored


def iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def attachment(name: str) -> bytes:
    """Content-Disposition for any name (RFC 6266 / 5987)."""
    fallback = re.sub(r"[^A-Za-z0-9._ -]", "_", name) or "download"
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(name, safe='')}".encode()


@implementer(IPushProducer)
class FileSender:
    """Streams a range of a file to the client as fast as it takes it."""

    def __init__(self, request, reader: Reader, start: int, end: int):
        self._request = request
        self._reader = reader
        self._offset = start
        self._end = end
        self._paused = False
        self._waiting: defer.Deferred | None = None
        self._stopped = False

    def pauseProducing(self):
        self._paused = True

    def resumeProducing(self):
        self._paused = False
        self._wake()

    def stopProducing(self):
        self._stopped = True
        self._wake()

    def _wake(self):
        if self._waiting is not None:
            waiting, self._waiting = self._waiting, None
            waiting.callback(None)

    async def send(self) -> None:
        self._request.registerProducer(self, True)
        self._request.notifyFinish().addBoth(lambda _: self.stopProducing())
        try:
            while self._offset < self._end and not self._stopped:
                if self._paused:
                    self._waiting = defer.Deferred()
                    await self._waiting
                    continue
                data = await self._reader.read(self._offset, min(CHUNK, self._end - self._offset))
                if not data:
                    break
                self._offset += len(data)
                if not self._stopped:
                    self._request.write(data)
            if self._offset >= self._end and not self._stopped:
                # the whole body is out: end the response (and write its access-log line)
                # now, before closing and auditing, so a client that hangs up at once
                # neither waits for them nor goes unlogged
                self._request.unregisterProducer()
                self._request.finish()
        finally:
            if self._request.producer is self:
                self._request.unregisterProducer()
            await self._reader.close()


class SizeOnly:
    """What a HEAD reply needs of a file, without opening it."""

    def __init__(self, size: int, mtime: float | None = None):
        self.size = size
        self.mtime = mtime

    async def discard(self) -> None:
        pass


def entry_view(entry: Entry) -> dict:
    """A folder entry as listings show it."""
    kind = "dir" if entry.is_dir else "file" if entry.kind == "file" else entry.kind
    return {"name": entry.name, "type": kind, "size": entry.size, "modified": iso(entry.mtime)}


def entries_view(entries: list[Entry]) -> list[dict]:
    """Folders first, then files, by name regardless of case (then by case)."""
    return [entry_view(e) for e in sorted(entries, key=lambda e: (not e.is_dir, e.name.lower(), e.name))]


def validators(reader: Reader) -> tuple[str, str] | None:
    """The file's entity tag and Last-Modified date (RFC 9110 8.8): from its size and its
    change time to the nanosecond as it was opened, so a file rewritten with other bytes
    has another tag. None when the backend cannot say when it changed."""
    mtime = getattr(reader, "mtime", None)
    if mtime is None:
        return None
    return f'"{reader.size:x}-{round(mtime * 1e9):x}"', formatdate(mtime, usegmt=True)


def _http_date(value: bytes | None) -> float | None:
    try:
        return parsedate_to_datetime(value.decode("latin-1")).timestamp() if value else None
    except (TypeError, ValueError, IndexError, OverflowError):
        return None  # not a date: the condition is ignored (RFC 9110 13.1.3)


def _tags(value: bytes) -> list[str]:
    """The entity tags of an If-Match / If-None-Match list, weakness dropped (W/"x" is "x")."""
    return [tag.strip().removeprefix("W/") for tag in value.decode("latin-1").split(",") if tag.strip()]


def precondition(request, reader: Reader) -> int | None:
    """RFC 9110 13.2.2, in its order: 412 when If-Match or If-Unmodified-Since fails, 304
    when If-None-Match or If-Modified-Since says the client's copy is current (GET and
    HEAD); None to answer as usual. Without validators only `If-Match: *` can hold."""
    tag, modified = validators(reader) or (None, None)
    mtime = int(reader.mtime) if tag else None
    if_match = request.getHeader(b"if-match")
    if if_match is not None:
        tags = _tags(if_match)
        if "*" not in tags and (tag is None or tag not in tags or if_match.lstrip().startswith(b"W/")):
            return 412  # strong comparison: a weak tag never matches
    elif (since := _http_date(request.getHeader(b"if-unmodified-since"))) is not None:
        if mtime is None or mtime > since:
            return 412
    if_none_match = request.getHeader(b"if-none-match")
    if if_none_match is not None:
        tags = _tags(if_none_match)
        if "*" in tags or (tag is not None and tag in tags):
            return 304 if request.method in (b"GET", b"HEAD") else 412
    elif request.method in (b"GET", b"HEAD") and mtime is not None:
        since = _http_date(request.getHeader(b"if-modified-since"))
        if since is not None and mtime <= since:
            return 304
    return None


def range_applies(request, reader: Reader) -> bool:
    """If-Range (RFC 9110 13.1.5): the Range is served only when the client's validator is
    the file's current one (an entity tag compared strongly, or its Last-Modified date,
    strong only when the file changed a second or more before); otherwise the whole file."""
    if_range = request.getHeader(b"if-range")
    if if_range is None:
        return True
    current = validators(reader)
    if current is None:
        return False
    value = if_range.decode("latin-1").strip()
    if value.startswith(('"', "W/")):
        return value == current[0]
    return value == current[1] and time.time() - reader.mtime >= 1


async def send_file(
    request, reader: Reader, name: str, before_body: Callable[[], Awaitable[None]] | None = None
) -> bytes | None:
    """Answer a download: the whole file or the asked Range, as an attachment, streamed,
    with its validators (ETag, Last-Modified) and the conditional requests of RFC 9110
    (304, 412, If-Range). `before_body` runs once the request is known to be satisfiable
    and a body will be sent (not for HEAD, 304, 412 or 416); if it raises, nothing is
    sent and the error is the reply. Only a response with a body logs a download (when
    the reader closes)."""
    size = reader.size
    start, end = 0, size
    current = validators(reader)
    if current is not None:
        request.setHeader(b"etag", current[0].encode())
        request.setHeader(b"last-modified", current[1].encode())
    # no copy kept by a browser or a cache on the way (a shared computer keeps no one's files);
    # a client that keeps its own (a sync tool, a download manager) asks with the validators
    request.setHeader(b"cache-control", b"no-store")
    status = precondition(request, reader)
    if status is not None:
        await reader.discard()
        request.setResponseCode(status)
        if status == 304:
            return b""
        return reply(request, {"detail": "The file changed since the version the request names."}, 412)
    ranged = (request.getHeader(b"range") or b"").decode("latin-1").strip() if range_applies(request, reader) else ""
    match = RANGE.match(ranged)
    if match and match.group(1) and match.group(2) and int(match.group(2)) < int(match.group(1)):
        match = None  # RFC 9110 14.1.1: not a valid range, so the header is ignored
    header = bool(match and (match.group(1) or match.group(2)))
    if header:
        first, last = match.group(1), match.group(2)
        if first:
            start, end = int(first), min(size, int(last) + 1 if last else size)
        else:
            start, end = max(0, size - int(last)), size
        if start >= end or start >= size:
            await reader.discard()
            request.setHeader(b"content-range", f"bytes */{size}".encode())
            return reply(request, {"detail": f"The file has {size} bytes: the range asked for is outside it."}, 416)
    if before_body is not None and request.method != b"HEAD":
        try:
            await before_body()
        except BaseException:
            await reader.discard()
            raise
    if header:
        request.setResponseCode(206)
        request.setHeader(b"content-range", f"bytes {start}-{end - 1}/{size}".encode())
    request.setHeader(b"accept-ranges", b"bytes")
    request.setHeader(b"content-type", b"application/octet-stream")
    request.setHeader(b"content-disposition", attachment(name))
    request.setHeader(b"content-length", str(end - start).encode())
    if request.method == b"HEAD":
        await reader.discard()
        return b""
    await FileSender(request, reader, start, end).send()
    return None  # the sender finished the response (Klein writes nothing more)


def multipart_boundary(request) -> str:
    """The boundary of a multipart/form-data upload (anything else is a 400)."""
    content_type = (request.getHeader(b"content-type") or b"").decode("latin-1")
    kind, options = multipart.parse_options_header(content_type)
    if kind != "multipart/form-data" or "boundary" not in options:
        raise Invalid("Upload files as multipart/form-data.")
    return options["boundary"]


async def receive_uploads(work, request, open_writer: Callable[[str], Awaitable[Writer]]) -> list[dict]:
    """Parse a multipart body piece by piece, writing each file part through the upload
    handle `open_writer(filename)` gives (a temporary file renamed into place when
    complete); the request body is never held whole in memory, and read off the reactor
    through `work` (the core's work pool). [{path, size}] saved."""
    parser = multipart.PushMultipartParser(multipart_boundary(request), max_header_size=8192, max_segment_count=10_000)
    body = request.content
    body.seek(0)
    saved, writer, written = [], None, 0
    try:
        while True:
            chunk = await work(body.read, CHUNK)
            for event in parser.parse(chunk):
                if isinstance(event, multipart.MultipartSegment):
                    if event.filename:  # a form's file input left empty sends filename=""
                        writer = await open_writer(event.filename)
                        written = 0
                elif isinstance(event, (bytes, bytearray)):
                    if writer is not None:
                        await writer.write(written, bytes(event))
                        written += len(event)
                elif event is None and writer is not None:
                    await writer.commit()
                    saved.append({"path": writer.path, "size": writer.size})
                    writer = None
            if not chunk:
                break
    except multipart.ParserError as e:
        raise Invalid(f"The upload is not valid multipart data: {e}") from None
    finally:
        if writer is not None:
            await writer.abort()
    return saved


MULTIPART_FRAMING = 16 * 1024  # bytes of a multipart body that are its framing, not a file


class FilesApi(Resource):
    app = json_api()
    bodies = {"upload": "admit_upload"}  # the gate reads an upload's body only once this allows it

    async def admit_upload(self, request, length: int | None) -> int | None:
        """Before any byte of an upload is read: the caller, the body's kind, the permission
        to upload into the folder and the quota for Content-Length (less its framing).
        Returns the most bytes the body may have (None: no limit)."""
        files = await self._files(request)
        multipart_boundary(request)
        overwrite = query(request, "overwrite").lower() in ("1", "true", "yes")
        size = None if length is None else max(0, length - MULTIPART_FRAMING)
        room = await files.check_receive(self._path(request), size, overwrite=overwrite)
        return None if room is None else room + MULTIPART_FRAMING

    async def _files(self, request) -> FileSession:
        account = await authenticate(self.core, request, scope="files")
        return await self.core.files.session(account, account.protocol, client_address(request))

    @staticmethod
    def _path(request, name: str = "path") -> str:
        path = query(request, name, "/")
        if "\x00" in path:
            raise Invalid("Paths may not contain NUL characters.", {name: ["Invalid path."]})
        return path

    @app.route("/", methods=["GET"])
    async def listing(self, request):
        """A folder's entries, folders first; with ?page= or ?page_size=, one page of them
        and the count, next and previous of a paged list (a big folder: only the page's
        files are looked at)."""
        files = await self._files(request)
        path = files.normalise(self._path(request))
        if b"page" not in request.args and b"page_size" not in request.args:
            entries = await files.list(path)
            return reply(
                request, {"path": path, "permissions": sorted(files.allowed), "entries": entries_view(entries)}
            )
        size, offset = paging(request, FILES_PAGE)
        count, entries = await files.list_page(path, offset, size)
        number = offset // size + 1

        def link(target: int) -> str:
            return f"{request.path.decode()}?{urlencode({'path': path, 'page': target, 'page_size': size})}"

        return reply(
            request,
            {
                "path": path,
                "permissions": sorted(files.allowed),
                "entries": entries_view(entries),
                "count": count,
                "next": link(number + 1) if offset + size < count else None,
                "previous": link(number - 1) if number > 1 else None,
            },
        )

    @app.route("/", methods=["DELETE"])
    async def delete(self, request):
        files = await self._files(request)
        await files.delete(self._path(request))
        request.setResponseCode(204)
        return b""

    @app.route("/download/", methods=["GET", "HEAD"])
    async def download(self, request):
        """Download a file (Range works); `access` from download-link/ stands in for the Bearer header"""
        access = query(request, "access")
        if access:
            files = await self._linked_files(request, access)
        else:
            files = await self._files(request)
        path = files.normalise(self._path(request))
        if request.method == b"HEAD":  # the headers only: nothing is read, so no download is logged
            path = await files.check_download(path)
            entry = await files.stat(path)
            return await send_file(request, SizeOnly(entry.size, entry.mtime), posixpath.basename(path))
        reader = await files.open_read(path)
        return await send_file(request, reader, posixpath.basename(path))

    async def _linked_files(self, request, access: str) -> FileSession:
        """The files of the profile a download link was made for, for the link's path only."""
        path = virtual(split_path(self._path(request)))
        signed_in = await authenticate(self.core, request, scope="files") if bearer(request) else None
        account = await self.core.sessions.download_account(
            access, path, signed_in, client_address(request), request.isSecure()
        )
        return await self.core.files.session(account, account.protocol, client_address(request))

    @app.route("/download-link/", methods=["POST"])
    async def download_link(self, request):
        """A URL that downloads one file without the Bearer header, for a minute (the browser streams it to disk)"""
        body = read_json(request)
        path = body.get("path")
        if not isinstance(path, str) or not path.strip("/") or "\x00" in path:
            raise Invalid("Say which file to download.", {"path": ["This field is required."]})
        account = await authenticate(self.core, request, scope="files")
        files = await self.core.files.session(account, account.protocol, client_address(request))
        path = await files.check_download(path)
        access, until = self.core.sessions.download_access(account, path)
        url = "/api/portal/files/download/?" + urlencode({"path": path, "access": access}, safe="/", quote_via=quote)
        return reply(request, {"url": url, "expires_at": iso(until)})

    @app.route("/upload/", methods=["POST"])
    async def upload(self, request):
        files = await self._files(request)
        folder = files.normalise(self._path(request))
        overwrite = query(request, "overwrite").lower() in ("1", "true", "yes")
        multipart_boundary(request)  # a wrong body is refused before anything is written

        async def open_writer(filename: str) -> Writer:
            return await files.open_write(await files.upload_path(folder, filename), exclusive=not overwrite)

        saved = await receive_uploads(self.core.work, request, open_writer)
        if not saved:
            raise Invalid("No file in the upload.", {"file": ["Choose a file to upload."]})
        return reply(request, {"files": saved}, 201)

    @app.route("/mkdir/", methods=["POST"])
    async def mkdir(self, request):
        body = read_json(request)
        path = body.get("path")
        if not isinstance(path, str) or not path.strip("/"):
            raise Invalid("Name the folder to create.", {"path": ["This field is required."]})
        files = await self._files(request)
        created = await files.mkdir(path, parents=bool(body.get("parents", True)))
        return reply(request, {"path": created}, 201)

    @app.route("/rename/", methods=["POST"])
    async def rename(self, request):
        body = read_json(request)
        path, new_path = body.get("path"), body.get("new_path")
        errors = {
            name: ["This field is required."]
            for name, value in (("path", path), ("new_path", new_path))
            if not isinstance(value, str) or not value.strip("/")
        }
        if errors:
            raise Invalid("Say what to rename and to what.", errors)
        files = await self._files(request)
        await files.rename(path, new_path, overwrite=bool(body.get("overwrite", False)))
        return reply(request, {"path": files.normalise(new_path)})
