"""Sources in an S3-compatible bucket: botocore's S3 client, its blocking calls on
the network thread pool (`threads.net`).

Why botocore in threads rather than an async HTTP client signing SigV4 itself:
botocore is what every S3-compatible service is tested against (SigV4 with its
payload and header rules, path and virtual-hosted addressing, region redirects,
multipart and copy APIs, error codes parsed from XML, retries), and a second
implementation of all that would be a second source of bugs. Its calls block,
so they run on their own bounded pool (see threads.py), never on the reactor and
never in the way of the disk work; each call is one HTTP request, so a slow
service holds a thread for one request at a time, within botocore's timeouts.

Layout: a file is an object; a folder is the prefix `name/`, which exists when a
marker object `name/` or any key under it exists. Every key is the source's
prefix, the profile's home and components that `split_path` already checked (no
'..', no '/', no reserved names), joined with '/': a key cannot leave the home.

Downloads read ranges (GET with Range and If-Match on the ETag seen at open) in
windows of WINDOW bytes, the next one fetched in the background, so reads at any
offset work (SFTP offsets, FTP REST, HTTP Range). Uploads are buffered into parts
of at least PART bytes and sent as a multipart upload, one part in flight while
the next fills (so at most about two parts in memory); a file smaller than one
part is a single PUT. The object appears only when the upload completes; an
interrupted upload is aborted (its parts dropped). Renames copy then delete
(folders key by key); set_times is accepted and ignored (S3 keeps the upload
time). The endpoint's host goes through netcheck when the client is made, and every
connection botocore opens goes to an address netcheck checked for that connection
(netcheck.pin_botocore: no DNS rebinding between the check and the connection). Keys
are percent-encoded into the URL by botocore, the bucket name is checked by botocore
and the endpoint, access key and prefix refused with control characters at save and
before use (a header value with CR LF is refused by http.client as well).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from twisted.internet.defer import Deferred
from twisted.logger import Logger
from twisted.python.failure import Failure

from ... import netcheck
from ...errors import AlreadyExists, ApplianceError, Invalid, NotFound, PermissionDenied, Unavailable
from ...text import control_characters
from ..interface import Budget as Limits
from ..paths import TEMP_PREFIX, Entry, has_control, virtual
from ..remote_io import RemoteDownload, RemoteUpload
from ..sealed import SealedSecrets

log = Logger()

PART = 8 << 20  # bytes per multipart part (S3: at least 5 MiB except the last)
WINDOW = 4 << 20  # bytes per ranged GET of a download
REORDER = 8 << 20  # bytes of writes that arrived ahead of their offset kept until the gap fills
COPY_LIMIT = 5 << 30  # S3's largest single CopyObject
COPY_RANGE = 1 << 30  # bytes per part of a multipart copy
DELETE_BATCH = 1000  # keys per DeleteObjects
STALE = 24 * 3600  # seconds after which a multipart upload found at start-up is taken as a crash's leftover
FILE_MODE = 0o100640
DIR_MODE = 0o040750


class S3Problem(Unavailable):
    """The bucket cannot be used; `field` is the config field to fix."""

    def __init__(self, message: str, field: str = "endpoint"):
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Bucket:
    """What it takes to reach the bucket: the source's config with its secret decrypted."""

    endpoint: str  # scheme://host[:port]
    region: str
    bucket: str
    prefix: str  # "" or "a/b" (checked components, no slashes at either end)
    access_key: str
    secret_key: str
    path_style: bool
    verify_tls: bool
    allow_loopback: bool
    # a source that signs in with OpenID Connect: its WebIdentity (s3_credentials.py), whose
    # temporary keys replace access_key/secret_key
    credentials: object = None

    @property
    def name(self) -> str:
        return f"the bucket {self.bucket} at {self.endpoint}"

    @property
    def who(self) -> str:
        """Whose permissions the S3 service checks, in words."""
        if self.credentials is not None:
            return "the role the provider's sign-in assumes (config.oauth.role_arn)"
        return f"the access key {self.access_key}"

    def hosts(self) -> tuple[list[str], int]:
        """The host names connections go to (virtual-hosted style: the bucket's own name too)."""
        url = urlsplit(self.endpoint)
        port = url.port or (443 if url.scheme == "https" else 80)
        hosts = [url.hostname or ""]
        if not self.path_style:
            hosts.append(f"{self.bucket}.{url.hostname}")
        return hosts, port


def aws_endpoint(region: str) -> str:
    return f"https://s3.{region}.amazonaws.com"


def s3_error(e: BaseException, path: str, bucket: Bucket) -> ApplianceError:
    """A botocore error as the domain error a person can act on."""
    if isinstance(e, ApplianceError):
        return e
    from botocore import exceptions as bx  # imported with botocore, on the network pool

    if isinstance(e, bx.HTTPClientError) and isinstance(e.kwargs.get("error"), ApplianceError):
        refused = e.kwargs["error"]  # the address check of a connection (netcheck.pin_botocore)
        return S3Problem(refused.message, "endpoint") if isinstance(refused, Invalid) else refused

    if isinstance(e, bx.ClientError):
        error = e.response.get("Error", {})
        code = str(error.get("Code", ""))
        message = str(error.get("Message", "") or "")
        status = e.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        if code == "NoSuchBucket":
            return S3Problem(
                f"The bucket {bucket.bucket} does not exist at {bucket.endpoint}: check config.bucket "
                "(and config.region).",
                "bucket",
            )
        if code in ("InvalidAccessKeyId", "InvalidToken", "ExpiredToken") and bucket.credentials is not None:
            return S3Problem(
                f"{bucket.endpoint} refused the temporary keys of the provider's sign-in ({code}): sign in again.",
                "oauth",
            )
        if code == "InvalidAccessKeyId":
            return S3Problem(
                f"{bucket.endpoint} does not know the access key {bucket.access_key}: check config.access_key.",
                "access_key",
            )
        if code == "SignatureDoesNotMatch":
            return S3Problem(
                f"{bucket.endpoint} refused the request's signature: the secret key does not belong to the access "
                f"key {bucket.access_key} (check config.secret_key).",
                "secret_key",
            )
        if code in ("AuthorizationHeaderMalformed", "PermanentRedirect", "IllegalLocationConstraintException") or (
            status == 301
        ):
            region = error.get("Region") or e.response.get("ResponseMetadata", {}).get("HTTPHeaders", {}).get(
                "x-amz-bucket-region", ""
            )
            hint = f" (it says {region})" if region else ""
            return S3Problem(
                f"{bucket.name} is in another region than {bucket.region}{hint}: set config.region.", "region"
            )
        if code in ("NoSuchKey", "NotFound", "404") or status == 404:
            return NotFound(f"No such file or folder: {path}")
        if code in ("AccessDenied", "AllAccessDisabled", "403") or status == 403:
            return PermissionDenied(
                f"The S3 service refused access to {path} in {bucket.name}: {bucket.who} "
                "lacks a permission there (it needs to list, read, write and delete objects)."
            )
        if code in ("SlowDown", "ServiceUnavailable", "InternalError", "RequestTimeout") or status >= 500:
            return Unavailable(f"{bucket.name} is busy or failing ({code or status}); try again.")
        detail = f": {code} {message}".rstrip() if code or message else ""
        return Unavailable(f"{bucket.name} could not do that on {path}{detail}.")
    if isinstance(e, bx.SSLError):
        return S3Problem(
            f"The TLS connection to {bucket.endpoint} failed ({e}). If the service uses a certificate this "
            "appliance does not trust, install its CA on the appliance; turn config.verify_tls off only on a "
            "network you trust.",
            "verify_tls",
        )
    if isinstance(e, bx.ConnectTimeoutError | bx.ReadTimeoutError):
        return Unavailable(f"{bucket.endpoint} did not answer in time (a firewall, or the wrong endpoint?).")
    if isinstance(e, bx.EndpointConnectionError | bx.ConnectionClosedError):
        return S3Problem(
            f"Cannot connect to {bucket.endpoint}: is an S3 service listening there? (check config.endpoint)",
            "endpoint",
        )
    if isinstance(e, bx.NoCredentialsError | bx.PartialCredentialsError):
        return S3Problem("Give the access key and secret key as config.access_key and config.secret_key.", "access_key")
    if isinstance(e, bx.BotoCoreError):
        return Unavailable(f"The S3 request for {path} to {bucket.endpoint} failed: {e}")
    return Unavailable(f"The S3 storage failed on {path}: {e}")


def _make_client(bucket: Bucket, destinations: netcheck.Destinations):
    """A botocore S3 client (blocking: loads botocore's models; call on a thread)."""
    import botocore.config
    import botocore.session

    config = botocore.config.Config(
        region_name=bucket.region,
        signature_version="s3v4",
        s3={"addressing_style": "path" if bucket.path_style else "virtual"},
        connect_timeout=10,
        read_timeout=60,
        retries={"max_attempts": 3, "mode": "standard"},
        max_pool_connections=16,
        # CRC checksums only where S3 demands them: many S3-compatible services refuse the new defaults
        request_checksum_calculation="when_required",
        response_checksum_validation="when_required",
        user_agent_appid="appliance",
    )
    if not bucket.verify_tls:  # the admin turned verification off for this source: no warning per request
        import warnings

        from urllib3.exceptions import InsecureRequestWarning

        warnings.filterwarnings("ignore", category=InsecureRequestWarning)
    session = botocore.session.Session()
    keys = {"aws_access_key_id": bucket.access_key, "aws_secret_access_key": bucket.secret_key}
    if bucket.credentials is not None:  # temporary keys of a sign-in, fetched on first use and before they expire
        bucket.credentials.install(session)
        keys = {}
    client = session.create_client("s3", endpoint_url=bucket.endpoint, verify=bucket.verify_tls, config=config, **keys)
    return netcheck.pin_botocore(client, destinations, bucket.allow_loopback)


class S3Client:
    """One source's bucket: a botocore client made on first use, calls on the network pool."""

    def __init__(self, threads, bucket: Bucket, destinations: netcheck.Destinations):
        self._threads = threads
        self._destinations = destinations
        self.bucket = bucket
        self._client = None
        self._making: Deferred | None = None

    async def client(self):
        if self._client is None:
            stored = [v for v in (self.bucket.endpoint, self.bucket.bucket, self.bucket.prefix, self.bucket.access_key)
                      if control_characters(v)]  # fmt: skip
            if stored:  # saved before such values were refused: never sent on
                raise S3Problem(
                    "The source's stored settings hold a control character: an admin must enter them again."
                )
            hosts, port = self.bucket.hosts()
            for host in hosts:
                try:
                    await self._threads.work(self._destinations.allowed, host, port, self.bucket.allow_loopback)
                except Invalid as e:
                    raise S3Problem(e.message, "endpoint") from None
                except Unavailable as e:
                    raise S3Problem(e.message, "endpoint") from None
            client = await self._threads.net(_make_client, self.bucket, self._destinations)
            if self._client is None:
                self._client = client
        return self._client

    async def call(self, path: str, method: str, **kwargs):
        client = await self.client()
        try:
            return await self._threads.net(getattr(client, method), Bucket=self.bucket.bucket, **kwargs)
        except Exception as e:  # noqa: BLE001 - mapped to the domain error
            raise s3_error(e, path, self.bucket) from None

    async def get_range(self, path: str, key: str, start: int, end: int, etag: str) -> bytes:
        client = await self.client()

        def fetch() -> bytes:
            kwargs = {"IfMatch": etag} if etag else {}
            reply = client.get_object(Bucket=self.bucket.bucket, Key=key, Range=f"bytes={start}-{end}", **kwargs)
            body = reply["Body"]
            try:
                return body.read()
            finally:
                body.close()

        try:
            return await self._threads.net(fetch)
        except Exception as e:  # noqa: BLE001
            code = getattr(e, "response", {}).get("Error", {}).get("Code") if hasattr(e, "response") else None
            if code == "PreconditionFailed":
                raise Unavailable(f"{path} changed while it was being downloaded: download it again.") from None
            raise s3_error(e, path, self.bucket) from None

    def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            try:
                client.close()
            except Exception:  # noqa: BLE001 - closing idle connections
                pass


def valid_name(name: str) -> bool:
    return (
        bool(name)
        and name not in (".", "..")
        and not name.startswith(TEMP_PREFIX)
        and not has_control(name)
        and len(name.encode("utf-8", "surrogateescape")) <= 255
    )


def _mtime(value) -> float:
    try:
        return value.timestamp()
    except AttributeError:
        return 0.0


class S3Tree:
    """A profile's home in the bucket: keys from checked components."""

    def __init__(self, client: S3Client, home_parts: list[str]):
        self.client = client
        self.bucket = client.bucket
        self.home = "/".join([p for p in [self.bucket.prefix] if p] + home_parts)
        self.root = f"s3://{self.bucket.endpoint}/{self.bucket.bucket}/{self.home}"

    def key(self, parts: list[str]) -> str:
        return "/".join([p for p in [self.home] if p] + parts)

    def folder(self, parts: list[str]) -> str:
        """The prefix of the keys inside a folder ("" for the bucket's root)."""
        key = self.key(parts)
        return key + "/" if key else ""

    async def head(self, parts: list[str]) -> dict | None:
        if not parts:
            return None
        try:
            return await self.client.call(virtual(parts), "head_object", Key=self.key(parts))
        except NotFound:
            return None

    async def folder_state(self, parts: list[str]) -> tuple[bool, float, bool]:
        """(exists, mtime of its marker, holds anything besides the marker)."""
        if not parts:
            return True, 0.0, True
        prefix = self.folder(parts)
        reply = await self.client.call(virtual(parts), "list_objects_v2", Prefix=prefix, MaxKeys=2)
        contents = reply.get("Contents", [])
        marker = next((c for c in contents if c["Key"] == prefix), None)
        others = [c for c in contents if c["Key"] != prefix]
        return bool(contents), _mtime(marker["LastModified"]) if marker else 0.0, bool(others)

    async def kind(self, parts: list[str]) -> tuple[str, dict] | None:
        """("file", head) or ("dir", {"mtime": ...}), or None when nothing is there."""
        if not parts:
            return "dir", {"mtime": 0.0}
        head = await self.head(parts)
        if head is not None:
            return "file", head
        exists, mtime, _ = await self.folder_state(parts)
        return ("dir", {"mtime": mtime}) if exists else None

    async def stat(self, parts: list[str], follow: bool = True) -> Entry:
        found = await self.kind(parts)  # (a bucket has no links: `follow` changes nothing)
        name = parts[-1] if parts else "/"
        if found is None:
            raise NotFound(f"No such file or folder: {virtual(parts)}")
        kind, info = found
        if kind == "file":
            mtime = _mtime(info.get("LastModified"))
            return Entry(name, "file", int(info.get("ContentLength", 0)), mtime, mtime, FILE_MODE)
        return Entry(name, "dir", 0, info["mtime"], info["mtime"], DIR_MODE)

    async def pages(self, path: str, prefix: str, delimiter: str | None):
        """Every page of a listing (ListObjectsV2, following continuation tokens)."""
        token = None
        while True:
            kwargs: dict = {"Prefix": prefix, "MaxKeys": 1000}
            if delimiter:
                kwargs["Delimiter"] = delimiter
            if token:
                kwargs["ContinuationToken"] = token
            reply = await self.client.call(path, "list_objects_v2", **kwargs)
            yield reply
            if not reply.get("IsTruncated"):
                return
            token = reply.get("NextContinuationToken")
            if not token:
                return

    async def list(self, parts: list[str]) -> list[Entry]:
        where = virtual(parts)
        prefix = self.folder(parts)
        seen: dict[str, Entry] = {}
        exists = not parts
        async for page in self.pages(where, prefix, "/"):
            for common in page.get("CommonPrefixes", []):
                exists = True
                name = common["Prefix"][len(prefix) :].rstrip("/")
                if valid_name(name) and "/" not in name:
                    seen[name] = Entry(name, "dir", 0, 0.0, 0.0, DIR_MODE)
            for item in page.get("Contents", []):
                exists = True
                name = item["Key"][len(prefix) :]
                if item["Key"] == prefix or not valid_name(name) or name in seen:
                    continue
                mtime = _mtime(item.get("LastModified"))
                seen[name] = Entry(name, "file", int(item.get("Size", 0)), mtime, mtime, FILE_MODE)
        if not exists:
            if await self.head(parts) is not None:
                raise Invalid(f"{where} is not a folder.")
            raise NotFound(f"No such folder: {where}")
        return list(seen.values())

    async def keys_under(self, parts: list[str]) -> list[tuple[str, int]]:
        """Every key inside a folder (its marker too), with sizes."""
        prefix = self.folder(parts)
        found = []
        async for page in self.pages(virtual(parts), prefix, None):
            found.extend((item["Key"], int(item.get("Size", 0))) for item in page.get("Contents", []))
        return found

    async def usage(self) -> tuple[int, int]:
        """Bytes and files under the home (folder markers not counted)."""
        total = files = 0
        for key, size in await self.keys_under([]):
            if not key.endswith("/"):
                total += size
                files += 1
        return total, files

    async def copy(self, path: str, source_key: str, target_key: str, size: int) -> None:
        """Copy an object inside the bucket (a multipart copy past S3's 5 GiB CopyObject limit)."""
        source = {"Bucket": self.bucket.bucket, "Key": source_key}
        if size <= COPY_LIMIT:
            await self.client.call(path, "copy_object", Key=target_key, CopySource=source)
            return
        upload = await self.client.call(path, "create_multipart_upload", Key=target_key)
        upload_id = upload["UploadId"]
        try:
            parts = await copy_parts(self.client, path, target_key, upload_id, source, size, 1)
            await self.client.call(
                path, "complete_multipart_upload", Key=target_key, UploadId=upload_id, MultipartUpload={"Parts": parts}
            )
        except BaseException:
            await abort_upload(self.client, path, target_key, upload_id)
            raise

    async def delete_keys(self, path: str, keys: list[str]) -> None:
        for start in range(0, len(keys), DELETE_BATCH):
            batch = keys[start : start + DELETE_BATCH]
            reply = await self.client.call(
                path, "delete_objects", Delete={"Objects": [{"Key": k} for k in batch], "Quiet": True}
            )
            errors = reply.get("Errors", [])
            if errors:
                first = errors[0]
                raise Unavailable(
                    f"{self.bucket.name} did not delete {len(errors)} objects under {path} "
                    f"({first.get('Code')}: {first.get('Message')})."
                )

    async def keep_folder(self, parts: list[str]) -> None:
        """After a removal: a folder that just lost its last object stays, as a marker."""
        if not parts:
            return
        exists, _, _ = await self.folder_state(parts)
        if not exists:
            await self.client.call(virtual(parts), "put_object", Key=self.folder(parts), Body=b"")


async def copy_parts(client: S3Client, path: str, key: str, upload_id: str, source: dict, size: int, first: int):
    """UploadPartCopy of a whole object in ranges of about COPY_RANGE (each at least 5 MiB)."""
    count = max(1, -(-size // COPY_RANGE))
    step = -(-size // count)
    parts = []
    for index, start in enumerate(range(0, size, step)):
        end = min(size, start + step) - 1
        reply = await client.call(
            path,
            "upload_part_copy",
            Key=key,
            UploadId=upload_id,
            PartNumber=first + index,
            CopySource=source,
            CopySourceRange=f"bytes={start}-{end}",
        )
        parts.append({"ETag": reply["CopyPartResult"]["ETag"], "PartNumber": first + index})
    return parts


async def abort_upload(client: S3Client, path: str, key: str, upload_id: str) -> None:
    try:
        await client.call(path, "abort_multipart_upload", Key=key, UploadId=upload_id)
    except Exception as e:  # noqa: BLE001 - logged: the service drops it by its lifecycle rules, or never
        log.warn("could not abort the unfinished upload of {path}: {error}", path=path, error=e)


class S3Reader(RemoteDownload):
    """An object read at offsets, a window at a time, the next window fetched ahead."""

    def __init__(
        self,
        client: S3Client,
        key: str,
        path: str,
        size: int,
        etag: str,
        on_close: Callable[[int, int], Awaitable[None]],
        mtime: float | None = None,
    ):
        super().__init__(path, size, on_close, mtime)
        self._client = client
        self._key = key
        self._etag = etag
        self._window = b""
        self._window_start = 0
        self._next: Deferred | None = None
        self._next_start = 0

    def _fetch(self, start: int) -> Deferred:
        end = min(self.size, start + WINDOW) - 1
        return Deferred.fromCoroutine(self._client.get_range(self.path, self._key, start, end, self._etag))

    async def _read(self, offset: int, length: int) -> bytes:
        length = min(length, max(0, self.size - offset))
        pieces = []
        while length > 0:
            start = offset - self._window_start
            if not (0 <= start < len(self._window)):
                await self._move_to(offset)
                start = offset - self._window_start
                if not 0 <= start < len(self._window):
                    break  # the object is shorter than it was
            piece = self._window[start : start + length]
            pieces.append(piece)
            offset += len(piece)
            length -= len(piece)
            self._prefetch(offset - self._window_start)
        return b"".join(pieces)

    def _prefetch(self, position: int) -> None:
        following = self._window_start + len(self._window)
        if self._next is None and position >= len(self._window) // 2 and following < self.size:
            self._next_start = following
            self._next = self._fetch(following)

    async def _move_to(self, offset: int) -> None:
        pending, self._next = self._next, None
        if pending is not None and self._next_start <= offset < self._next_start + WINDOW:
            self._window, self._window_start = await pending, self._next_start
            return
        if pending is not None:  # a jump elsewhere: the read ahead is not wanted
            pending.addErrback(lambda _f: None)
        self._window, self._window_start = b"", offset
        self._window = await self._fetch(offset)

    async def _release(self) -> None:
        if self._next is not None:
            self._next.addErrback(lambda _f: None)
            self._next = None
        self._window = b""


class S3Writer(RemoteUpload):
    """An upload: parts sent as they fill, the object made only by `commit`."""

    def __init__(
        self,
        tree: S3Tree,
        parts: list[str],
        limits: Limits,
        replaced: int | None,
        commit: Callable[[S3Writer], Awaitable[None]],
        registry: set,
        no_replace: bool = False,
    ):
        super().__init__(parts, 0, limits, replaced, commit, registry, no_replace)
        self._tree = tree
        self._client = tree.client
        self.key = tree.key(parts)
        self._buffer: list[bytes] = []
        self._buffered = 0
        self._early: dict[int, bytes] = {}  # writes ahead of self.size, by offset
        self._early_bytes = 0
        self.upload_id: str | None = None
        self._sent: list[dict] = []  # {"ETag", "PartNumber"} of the parts sent
        self._in_flight: Deferred | None = None

    async def start_from(self, size: int) -> None:
        """Begin as a copy of the existing object (a resumed or appended upload)."""
        source = {"Bucket": self._tree.bucket.bucket, "Key": self.key}
        if size <= PART:
            if size:
                data = await self._client.get_range(self.path, self.key, 0, size - 1, "")
                self._buffer.append(data)
                self._buffered += len(data)
        else:
            upload = await self._client.call(self.path, "create_multipart_upload", Key=self.key)
            self.upload_id = upload["UploadId"]
            self._sent = await copy_parts(self._client, self.path, self.key, self.upload_id, source, size, 1)
        self.size = size

    def write_nowait(self, offset: int, data: bytes) -> Deferred | None:
        self._check_write(offset)
        if offset < self.size:
            self._error = Invalid(
                "Files on an S3 source are uploaded from start to end: this client wrote again at an earlier "
                "offset, which S3 cannot take. Upload the file again from the start."
            )
            raise self._error
        if offset > self.size:
            if self._early_bytes + len(data) > REORDER:
                self._error = Invalid(
                    "Files on an S3 source are uploaded from start to end: this client left a gap the upload "
                    "cannot fill. Upload the file again from the start."
                )
                raise self._error
            self._early[offset] = bytes(data)
            self._early_bytes += len(data)
            return None
        self._append(data)
        while self.size in self._early:
            piece = self._early.pop(self.size)
            self._early_bytes -= len(piece)
            self._append(piece)
        self._send_full_part()
        if self._in_flight is not None and self._buffered >= PART:
            return self._wait_for_room()
        return None

    def _append(self, data: bytes) -> None:
        self._grow_to(self.size + len(data))
        self._buffer.append(bytes(data))
        self._buffered += len(data)
        self.bytes_written += len(data)

    def _send_full_part(self) -> None:
        if self._in_flight is None and self._buffered >= PART and self._error is None:
            data, self._buffer, self._buffered = b"".join(self._buffer), [], 0
            self._in_flight = Deferred.fromCoroutine(self._send_part(data))
            self._in_flight.addBoth(self._part_sent)

    async def _send_part(self, data: bytes) -> None:
        if self.upload_id is None:
            upload = await self._client.call(self.path, "create_multipart_upload", Key=self.key)
            self.upload_id = upload["UploadId"]
        number = len(self._sent) + 1
        reply = await self._client.call(
            self.path, "upload_part", Key=self.key, UploadId=self.upload_id, PartNumber=number, Body=data
        )
        self._sent.append({"ETag": reply["ETag"], "PartNumber": number})

    def _part_sent(self, result) -> None:
        self._in_flight = None
        if isinstance(result, Failure) and self._error is None:
            value = result.value
            self._error = value if isinstance(value, ApplianceError) else s3_error(value, self.path, self._tree.bucket)
        if self._error is None:
            self._send_full_part()
        if self._error is not None or self._buffered < PART or self._in_flight is None:
            self._wake()

    async def _settle(self) -> None:
        """Wait for the part in flight."""
        while self._in_flight is not None:
            pending: Deferred = Deferred()
            self._in_flight.addBoth(lambda result, p=pending: (p.callback(None), result)[1])
            await pending

    def set_times(self, atime: float, mtime: float) -> None:
        self.times = (atime, mtime)  # S3 keeps the upload's time; accepted and ignored

    async def _finish(self) -> None:
        if self._early:
            raise Invalid("The upload has a gap that the client never filled: nothing was saved.")
        data, self._buffer, self._buffered = b"".join(self._buffer), [], 0
        condition = {"IfNoneMatch": "*"} if self._no_replace else {}
        if self.upload_id is None:
            await self._client.call(self.path, "put_object", Key=self.key, Body=data, **condition)
        else:
            if data or not self._sent:
                await self._send_part(data)
            await self._client.call(
                self.path,
                "complete_multipart_upload",
                Key=self.key,
                UploadId=self.upload_id,
                MultipartUpload={"Parts": self._sent},
                **condition,
            )
            self.upload_id = None

    def _refusal(self, error: BaseException) -> ApplianceError | None:
        if self._no_replace and isinstance(error, Unavailable) and "PreconditionFailed" in error.message:
            return AlreadyExists(f"{self.path} already exists: it was created while this upload ran.")
        return None

    async def _drop(self) -> None:
        self._buffer, self._buffered, self._early = [], 0, {}
        try:
            await self._settle()
        except Exception:  # noqa: BLE001
            pass
        waiters, self._room = self._room, []
        for w in waiters:
            w.errback(Unavailable("The upload was stopped."))
        if self.upload_id is not None:
            upload_id, self.upload_id = self.upload_id, None
            await abort_upload(self._client, self.path, self.key, upload_id)


# -- the sources' clients, and the admin's check ---------------------------------------------------


class S3Sources:
    """One client per S3 source, made on first use and replaced when its config changes."""

    def __init__(self, reactor, threads, secrets, allow_loopback: bool, identities, destinations):
        self._threads = threads
        self.destinations = destinations  # netcheck.Destinations: where connections may go
        self.identities = identities  # WebIdentities (s3_credentials.py): sources that sign in with OpenID Connect
        self._sealed = SealedSecrets(secrets)
        self.seal = self._sealed.seal
        self.open = self._sealed.open
        self.allow_loopback = allow_loopback
        self._clients: dict[int, S3Client] = {}
        reactor.addSystemEventTrigger("before", "shutdown", self.close)

    def bucket(self, source, config: dict | None = None) -> Bucket:
        config = source.config if config is None else config
        region = config.get("region") or "us-east-1"
        endpoint = config.get("endpoint") or aws_endpoint(region)
        identity, secret = None, ""
        if config.get("auth") == "oauth2":
            verify = bool(config.get("verify_tls", True))
            identity = self.identities.identity(source, config, endpoint, region, verify)
        else:
            what = f"secret key of the source {source.name!r}"
            secret = self._sealed.open_field(config, "secret_key_encrypted", what)
        return Bucket(
            endpoint=endpoint,
            region=region,
            bucket=config.get("bucket", ""),
            prefix=config.get("prefix", ""),
            access_key=config.get("access_key", ""),
            secret_key=secret,
            path_style=bool(config.get("path_style", False)),
            verify_tls=bool(config.get("verify_tls", True)),
            allow_loopback=self.allow_loopback,
            credentials=identity,
        )

    def client(self, source) -> S3Client:
        bucket = self.bucket(source)
        client = self._clients.get(source.id)
        if client is None or client.bucket != bucket:
            if client is not None:
                client.close()
            client = self._clients[source.id] = S3Client(self._threads, bucket, self.destinations)
        return client

    async def check(self, bucket: Bucket) -> None:
        """The host allowed, the endpoint reachable, the credentials accepted, the bucket
        there and listable. Raises S3Problem (or another ApplianceError) saying what is wrong."""
        client = S3Client(self._threads, bucket, self.destinations)
        try:
            prefix = bucket.prefix + "/" if bucket.prefix else ""
            try:
                await client.call(bucket.prefix or "/", "list_objects_v2", Prefix=prefix, MaxKeys=1)
            except PermissionDenied:
                raise S3Problem(
                    f"{bucket.who[0].upper()}{bucket.who[1:]} may not list {bucket.name}: it needs s3:ListBucket "
                    "(and s3:GetObject, s3:PutObject, s3:DeleteObject) on the bucket.",
                    "access_key" if bucket.credentials is None else "oauth",
                ) from None
            except NotFound:
                raise S3Problem(
                    f"{bucket.endpoint} answered 'not found' for {bucket.name}: check config.endpoint, "
                    "config.bucket and config.path_style.",
                    "bucket",
                ) from None
        finally:
            client.close()

    async def sweep(self, source, now: float) -> int:
        """Abort the multipart uploads under the source's prefix begun more than STALE
        seconds ago (left by a crash: their parts cost storage and never show)."""
        client = self.client(source)
        prefix = client.bucket.prefix + "/" if client.bucket.prefix else ""
        aborted = 0
        markers: dict = {}
        while True:
            reply = await client.call(prefix or "/", "list_multipart_uploads", Prefix=prefix, **markers)
            for upload in reply.get("Uploads", []):
                if now - _mtime(upload.get("Initiated")) > STALE:
                    await abort_upload(client, upload["Key"], upload["Key"], upload["UploadId"])
                    aborted += 1
            if not reply.get("IsTruncated") or not reply.get("NextKeyMarker"):
                return aborted
            markers = {"KeyMarker": reply["NextKeyMarker"], "UploadIdMarker": reply.get("NextUploadIdMarker", "")}

    def close(self) -> None:
        for client in self._clients.values():
            client.close()
        self._clients.clear()
