"""Downloads over HTTP carry their validators and answer conditional requests as RFC 9110
says, driven with curl (as a download manager or a sync script would): ETag and
Last-Modified on every download, 304 for a copy that is current (If-None-Match,
If-Modified-Since), the whole file with 200 when If-Range names a stale version and the
range with 206 when it names the current one, 412 for If-Match on another version; a
file rewritten with other bytes has another tag. A 304 or 412 moves no bytes and writes
no download row; a shared link's 304 does not use up its downloads."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from ..api_client import signed_in

PASSWORD = "user-password-1"
pytestmark = pytest.mark.requires("curl")


def curl(daemon, path: str, *headers: str, token: str | None = None, method: str = "GET") -> tuple[int, dict, bytes]:
    """(status, headers, body) of one request, with curl."""
    auth = ["-H", f"Authorization: Bearer {token}"] if token else []
    sent = [arg for header in headers for arg in ("-H", header)]
    verb = ["--head"] if method == "HEAD" else []
    result = subprocess.run(
        ["curl", "-sS", "-D", "-", "-o", "-", *verb, *auth, *sent, f"http://127.0.0.1:{daemon.http_port}{path}"],
        capture_output=True,
        timeout=60,
        check=True,
    )
    head, _, body = result.stdout.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    fields = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        fields[name.strip().lower()] = value.strip()
    return int(lines[0].split()[1]), fields, body


def downloads(daemon, username: str) -> int:
    return len([r for r in daemon.logs("download") if r["username"] == username])


def test_downloads_are_conditional_and_resume_only_the_same_version(daemon):
    daemon.add_profile("cond")
    home = daemon.home("cond")
    home.mkdir(parents=True, exist_ok=True)
    first = os.urandom(50_000)
    (home / "report.bin").write_bytes(first)
    os.utime(home / "report.bin", (time.time() - 60, time.time() - 60))  # changed a minute ago
    token = signed_in(daemon, "cond", PASSWORD).token
    url = "/api/portal/files/download/?path=/report.bin"

    status, head, body = curl(daemon, url, token=token)
    assert status == 200 and body == first
    etag, modified = head["etag"], head["last-modified"]
    assert etag.startswith('"') and etag.endswith('"') and modified.endswith(" GMT")
    assert head["accept-ranges"] == "bytes"
    time.sleep(0.5)
    counted = downloads(daemon, "cond")
    assert counted == 1

    # the client's copy is current: 304, no body, the validators again, no download row
    for condition in (f"If-None-Match: {etag}", f'If-None-Match: "other", W/{etag}', f"If-Modified-Since: {modified}"):
        status, head, body = curl(daemon, url, condition, token=token)
        assert (status, body) == (304, b""), condition
        assert head["etag"] == etag and head["last-modified"] == modified
    status, head, body = curl(daemon, url, 'If-None-Match: "not-this-one"', token=token)
    assert status == 200 and body == first
    status, _, body = curl(daemon, url, "If-Modified-Since: Sat, 01 Jan 2000 00:00:00 GMT", token=token)
    assert status == 200 and body == first

    # If-Range: the current version resumes; a stale one gets the whole file (200, not 206)
    status, head, body = curl(daemon, url, "Range: bytes=100-199", f"If-Range: {etag}", token=token)
    assert status == 206 and body == first[100:200] and head["content-range"] == "bytes 100-199/50000"
    status, _, body = curl(daemon, url, "Range: bytes=100-199", f"If-Range: {modified}", token=token)
    assert status == 206 and body == first[100:200]
    status, head, body = curl(daemon, url, "Range: bytes=100-199", 'If-Range: "stale"', token=token)
    assert status == 200 and body == first and "content-range" not in head
    status, _, body = curl(daemon, url, "Range: bytes=100-199", "If-Range: Sat, 01 Jan 2000 00:00:00 GMT", token=token)
    assert status == 200 and body == first
    status, _, body = curl(daemon, url, "Range: bytes=100-199", f"If-Range: W/{etag}", token=token)
    assert status == 200 and body == first  # a weak tag never validates a range

    # If-Match: another version is a 412, the current one is served
    status, _, body = curl(daemon, url, 'If-Match: "other"', token=token)
    assert status == 412 and b"changed" in body
    status, _, body = curl(daemon, url, f"If-Match: {etag}", token=token)
    assert status == 200 and body == first

    # rewritten with other bytes of the same length: another tag, and the old one resumes nothing
    second = os.urandom(50_000)
    (home / "report.bin").write_bytes(second)
    status, head, body = curl(daemon, url, f"If-None-Match: {etag}", token=token)
    assert status == 200 and body == second and head["etag"] != etag
    status, _, body = curl(daemon, url, "Range: bytes=0-9", f"If-Range: {etag}", token=token)
    assert status == 200 and body == second

    # HEAD answers the same conditions
    status, head, _ = curl(daemon, url, f"If-None-Match: {head['etag']}", token=token, method="HEAD")
    assert status == 304


def test_a_shared_links_304_does_not_use_up_its_downloads(daemon):
    daemon.add_profile("condshare")
    home = daemon.home("condshare")
    home.mkdir(parents=True, exist_ok=True)
    (home / "once.txt").write_bytes(b"only once")
    api = signed_in(daemon, "condshare", PASSWORD)
    reply = api.post("shares/", {"path": "/once.txt", "max_downloads": 1})
    assert reply.status in (200, 201), reply.body
    token = reply.body["token"]
    url = f"/api/portal/shared/{token}/download/"
    status, head, body = curl(daemon, url, "If-None-Match: *")
    assert status == 304 and body == b"", (status, head, body)
    status, head, body = curl(daemon, url)
    assert status == 200 and body == b"only once" and head["etag"]
    status, _, _ = curl(daemon, url)
    assert status in (403, 404, 410)  # its one download was the 200
