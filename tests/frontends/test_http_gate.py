"""Anonymous clients cannot fill the disk: a request body is read only once its route
and its caller are known (frontends/http/gate.py). Each case offers 200 MiB from a
raw socket while reading the reply: the reply must come while the client has sent
only a small part (what the kernel's buffers take), and the daemon's TMPDIR (a
folder of this test's own) must hold nothing, not even an open, deleted file."""

from __future__ import annotations

import base64
import json
import os
import socket
import threading
from pathlib import Path

import pytest

from ..api_client import Api, signed_in
from ..helpers import daemon_with

OFFERED = 200 * 1024 * 1024
BLOCK = 1024 * 1024
SMALL_PART = 32 * 1024 * 1024  # far more than the socket buffers of both ends hold


@pytest.fixture(scope="module")
def gated(tmp_path_factory):
    """A daemon whose TMPDIR is a folder this test watches."""
    tmp = tmp_path_factory.mktemp("gate")
    (tmp / "spool").mkdir()
    daemon = daemon_with(tmp, env={"TMPDIR": str(tmp / "spool")})
    daemon.spool = tmp / "spool"
    yield daemon
    daemon.stop()


def spooled(daemon) -> int:
    """Bytes in the daemon's TMPDIR: its files, and the open ones already deleted."""
    total = sum(path.stat().st_size for path in daemon.spool.rglob("*") if path.is_file())
    for fd in Path(f"/proc/{daemon.process.pid}/fd").iterdir():
        try:
            if os.readlink(fd).startswith(str(daemon.spool)):
                total += os.stat(fd).st_size
        except OSError:
            pass  # closed meanwhile
    return total


def read_reply(sock) -> tuple[int, dict, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"the connection closed without a reply: {data!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return int(lines[0].split()[1]), headers, body[:length]


def offer(daemon, head: bytes, total: int = OFFERED, chunked: bool = False) -> tuple[int, dict, bytes, int]:
    """Send `head`, then up to `total` body bytes from another thread while the reply is
    read here: (status, headers, body, bytes sent when the reply had arrived)."""
    sock = socket.create_connection(("127.0.0.1", daemon.http_port), timeout=60)
    sock.sendall(head)
    sent = [0]

    def pump():
        block = (b"%x\r\n" % BLOCK + b"x" * BLOCK + b"\r\n") if chunked else b"x" * BLOCK
        try:
            while sent[0] < total:
                sock.sendall(block)
                sent[0] += BLOCK
        except OSError:
            pass  # the daemon closed the connection: what we want

    sender = threading.Thread(target=pump, daemon=True)
    sender.start()
    try:
        status, headers, body = read_reply(sock)
        at_reply = sent[0]
        assert spooled(daemon) < 4096
    finally:
        try:
            sock.shutdown(socket.SHUT_RDWR)  # ends the sender's sendall
        except OSError:
            pass  # the daemon's close reset it already
        sock.close()
        sender.join(30)
    return status, headers, body, at_reply


def post(path: str, length: int, *headers: str, content_type: str = "application/json", method: str = "POST") -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", f"Content-Type: {content_type}"]
    lines += [f"Content-Length: {length}", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


MULTIPART = "multipart/form-data; boundary=gate"


def assert_refused_early(reply, status: int) -> dict:
    got, headers, body, at_reply = reply
    assert got == status, body
    assert at_reply < SMALL_PART, f"the reply came only after {at_reply} bytes of the body"
    assert headers.get("connection") == "close"
    return json.loads(body)


def test_token_takes_a_small_json_body_only(gated):
    body = assert_refused_early(offer(gated, post("/api/portal/token/", OFFERED)), 413)
    assert "at most 262,144 bytes" in body["detail"]


def test_a_chunked_body_is_counted_as_it_arrives(gated):
    head = b"POST /api/portal/token/ HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    assert_refused_early(offer(gated, head, chunked=True), 413)


def test_an_upload_without_a_token_is_refused_before_its_body(gated):
    reply = offer(gated, post("/api/portal/files/upload/?path=/", OFFERED, content_type=MULTIPART))
    body = assert_refused_early(reply, 401)
    assert body["detail"] == "Authentication credentials were not provided."


def test_an_upload_with_expect_100_continue_gets_no_go_ahead(gated):
    head = post("/api/portal/files/upload/?path=/", OFFERED, "Expect: 100-continue", content_type=MULTIPART)
    status, _, _, _ = offer(gated, head, total=0)
    assert status == 401  # the final answer, not "100 Continue"


def test_an_unknown_share_link_refuses_the_upload_before_its_body(gated):
    reply = offer(gated, post("/api/portal/shared/no-such-link/upload/", OFFERED, content_type=MULTIPART))
    assert_refused_early(reply, 404)


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/no/such/page", 413),  # the console's addresses take no body
        ("/api/portal/no-such-thing/", 404),
        ("/api/elsewhere/", 404),
        ("/api/portal/files/", 405),  # there, but not for POST
        ("/healthz", 413),
    ],
)
def test_an_address_that_takes_no_body_refuses_one(gated, path, status):
    assert_refused_early(offer(gated, post(path, OFFERED)), status)


def test_what_follows_a_refused_body_is_never_read_as_a_request(gated):
    smuggled = b"GET /api/portal/initialized/ HTTP/1.1\r\nHost: x\r\n\r\n"
    sock = socket.create_connection(("127.0.0.1", gated.http_port), timeout=30)
    sock.sendall(b"POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 52\r\n\r\n" + smuggled)
    status, _, _ = read_reply(sock)
    rest = b""
    while chunk := sock.recv(65536):
        rest += chunk
    sock.close()
    assert status == 413 and rest == b""  # one reply, then the connection closed


def test_a_client_that_sends_its_whole_body_before_reading_still_gets_the_refusal(gated):
    # Python's http.client and requests send a body whole, then read. Closed with that
    # body unread, the connection would be reset by the kernel and the reply lost.
    sock = socket.create_connection(("127.0.0.1", gated.http_port), timeout=30)
    size = 16 * 1024 * 1024  # more than the buffers of both ends hold
    sock.sendall(post("/api/portal/token/", size) + b"{" + b" " * (size - 1))
    status, headers, body = read_reply(sock)
    sock.close()
    assert status == 413 and headers.get("connection") == "close"
    assert "at most 262,144 bytes" in json.loads(body)["detail"]


def test_an_upload_past_the_quota_is_refused_before_its_body(gated):
    gated.add_profile("gatequota", quota_bytes=1024 * 1024)
    api = signed_in(gated, "gatequota", "user-password-1")
    auth = f"Authorization: Bearer {api.token}"
    reply = offer(gated, post("/api/portal/files/upload/?path=/", OFFERED, auth, content_type=MULTIPART))
    assert "quota" in assert_refused_early(reply, 507)["detail"]
    # a body that says less than it sends is cut off where the quota ends
    head = post("/api/portal/files/upload/?path=/", 512 * 1024, auth, content_type=MULTIPART)
    head = head.replace(b"Content-Length: 524288", b"Transfer-Encoding: chunked")
    status, _, _, at_reply = offer(gated, head, chunked=True)
    assert status == 413 and at_reply < SMALL_PART


def test_a_read_only_profile_cannot_start_an_upload(gated):
    gated.add_profile("gatereader", permissions=["list", "download"])
    api = signed_in(gated, "gatereader", "user-password-1")
    head = post(
        "/api/portal/files/upload/?path=/", OFFERED, f"Authorization: Bearer {api.token}", content_type=MULTIPART
    )
    assert "upload files" in assert_refused_early(offer(gated, head), 403)["detail"]


def test_a_tus_patch_to_someone_elses_upload_is_refused_before_its_body(gated):
    gated.add_profile("gateowner")
    gated.add_profile("gateother")
    owner = signed_in(gated, "gateowner", "user-password-1")
    name = base64.b64encode(b"big.bin").decode()
    created = owner.call(
        "POST", "files/tus/", headers={"Tus-Resumable": "1.0.0", "Upload-Length": str(OFFERED),
                                      "Upload-Metadata": f"filename {name}"},
    )  # fmt: skip
    assert created.status == 201, created.raw
    location = created.headers["location"]
    other = signed_in(gated, "gateother", "user-password-1")
    head = post(location, OFFERED, f"Authorization: Bearer {other.token}", "Tus-Resumable: 1.0.0",
                "Upload-Offset: 0", content_type="application/offset+octet-stream", method="PATCH")  # fmt: skip
    assert_refused_early(offer(gated, head), 404)
    # its owner sends it, but no more than the upload's length
    head = post(location, OFFERED + BLOCK, f"Authorization: Bearer {owner.token}", "Tus-Resumable: 1.0.0",
                "Upload-Offset: 0", content_type="application/offset+octet-stream", method="PATCH")  # fmt: skip
    assert_refused_early(offer(gated, head), 413)


def test_over_long_or_broken_request_heads_get_a_4xx_and_the_connection_closes(gated):
    for head, status in (
        (b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414),
        (b"GET / HTTP/1.1\r\nX-Long: " + b"a" * 9000 + b"\r\n\r\n", 431),
        (b"GET / HTTP/1.1\r\n" + b"".join(b"X-%d: %s\r\n" % (n, b"a" * 4000) for n in range(5)) + b"\r\n", 431),
        (b"GET / HTTP/1.1\r\nNo colon here\r\n\r\n", 400),  # not HTTP: a whole reply too
    ):
        sock = socket.create_connection(("127.0.0.1", gated.http_port), timeout=30)
        sock.sendall(head)
        got, headers, _ = read_reply(sock)
        assert got == status and headers["connection"] == "close"
        assert sock.recv(65536) == b""  # closed
        sock.close()


def test_good_uploads_still_land(gated):
    gated.add_profile("gategood", quota_bytes=10 * 1024 * 1024)
    api = signed_in(gated, "gategood", "user-password-1")
    payload = os.urandom(3 * 1024 * 1024)
    body = (
        b'--gate\r\nContent-Disposition: form-data; name="file"; filename="good.bin"\r\n'
        b"Content-Type: application/octet-stream\r\n\r\n" + payload + b"\r\n--gate--\r\n"
    )
    for expect in ({}, {"Expect": "100-continue"}):
        reply = api.call(
            "POST", "files/upload/?path=/&overwrite=1", raw=body, headers={"Content-Type": MULTIPART, **expect}
        )
        assert reply.status == 201, reply.raw
        assert (gated.home("gategood") / "good.bin").read_bytes() == payload
    assert Api(gated).post("token/", {"username": "gategood", "password": "user-password-1"}).status == 200
