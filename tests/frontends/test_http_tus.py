"""Resumable uploads by the tus 1.0.0 protocol against the live daemon, spoken by
hand over http.client and raw sockets: discovery, creation, appends, offsets,
termination, expiry, the protocol's errors, and resuming after a dropped
connection, a daemon restart (SIGKILL) and a refreshed access token."""

from __future__ import annotations

import base64
import hashlib
import http.client
import json
import os
import socket
import subprocess
from pathlib import Path

import pytest

from ..api_client import Api, signed_in
from ..helpers import ADMIN_PASSWORD, ROOT, daemon_with, wait_for
from .sftp_client import sftp

PASSWORD = "user-password-1"
ENDPOINT = "/api/portal/files/tus/"
STREAM = "application/offset+octet-stream"


class Tus:
    """A tus client by hand: one connection per request, every header explicit."""

    def __init__(self, daemon, token: str):
        self.daemon = daemon
        self.token = token

    def request(self, method: str, path: str, body: bytes = b"", headers: dict | None = None, version="1.0.0"):
        sent = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        if version is not None:
            sent["Tus-Resumable"] = version
        sent.update(headers or {})
        connection = http.client.HTTPConnection("127.0.0.1", self.daemon.http_port, timeout=60)
        try:
            connection.request(method, path, body=body, headers=sent)
            response = connection.getresponse()
            return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
        finally:
            connection.close()

    def create(self, length: int, expect: int = 201, **metadata) -> str:
        status, headers, body = self.request(
            "POST", ENDPOINT, headers={"Upload-Length": str(length), "Upload-Metadata": encode(metadata)}
        )
        assert status == expect, (status, body)
        return headers.get("location", body.decode())

    def head(self, location: str):
        status, headers, _ = self.request("HEAD", location)
        return status, headers

    def offset(self, location: str) -> int:
        status, headers = self.head(location)
        assert status == 200, status
        return int(headers["upload-offset"])

    def patch(self, location: str, offset: int, data: bytes, content_type: str = STREAM):
        return self.request("PATCH", location, data, {"Upload-Offset": str(offset), "Content-Type": content_type})


def encode(metadata: dict) -> str:
    return ",".join(f"{k} {base64.b64encode(str(v).encode()).decode()}" for k, v in metadata.items())


def partials(home) -> list[str]:
    return sorted(p.name for p in home.rglob(".~upload-tus-*")) if home.exists() else []


def user(daemon, name: str, **changes) -> Tus:
    daemon.add_profile(name, **changes)
    return Tus(daemon, signed_in(daemon, name, PASSWORD).token)


def cut_off_patch(daemon, token: str, location: str, offset: int, declared: int, sent: bytes) -> None:
    """A PATCH announcing `declared` bytes whose connection closes after `sent`."""
    with socket.create_connection(("127.0.0.1", daemon.http_port)) as sock:
        sock.sendall(
            f"PATCH {location} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
            f"Tus-Resumable: 1.0.0\r\nContent-Type: {STREAM}\r\nUpload-Offset: {offset}\r\n"
            f"Content-Length: {declared}\r\n\r\n".encode()
            + sent
        )


# -- discovery and the happy path ------------------------------------------------------------


def test_options_tells_the_versions_extensions_and_limit(daemon):
    status, headers, _ = Tus(daemon, None).request("OPTIONS", ENDPOINT, version=None)
    assert status == 204
    assert headers["tus-version"] == "1.0.0" and headers["tus-resumable"] == "1.0.0"
    assert set(headers["tus-extension"].split(",")) == {"creation", "termination", "expiration"}
    assert int(headers["tus-max-size"]) == 1 << 40
    exposed = {h.strip().lower() for h in headers["access-control-expose-headers"].split(",")}
    assert {"location", "upload-offset", "upload-length", "tus-resumable"} <= exposed


def test_an_upload_in_several_patches_appears_only_when_complete(daemon, tmp_path):
    tus = user(daemon, "tusser")
    data = os.urandom(3 * 1024 * 1024 + 17)
    location = tus.create(len(data), filename="report é.bin", path="/")
    assert location.startswith(ENDPOINT)
    status, headers = tus.head(location)
    assert status == 200 and headers["upload-offset"] == "0" and headers["upload-length"] == str(len(data))
    assert headers["cache-control"] == "no-store" and headers["tus-resumable"] == "1.0.0"
    assert "GMT" in headers["upload-expires"]
    assert base64.b64decode(dict(p.split(" ") for p in headers["upload-metadata"].split(","))["filename"]) == (
        "report é.bin".encode()
    )
    api = signed_in(daemon, "tusser", PASSWORD)
    cuts = [0, 1_000_000, 2_500_000, len(data)]
    for start, end in zip(cuts, cuts[1:], strict=False):
        status, headers, _ = tus.patch(location, start, data[start:end])
        assert status == 204 and headers["upload-offset"] == str(end) and headers["tus-resumable"] == "1.0.0"
        if end < len(data):
            assert tus.offset(location) == end
            # not under its real name, neither to the files API nor over SFTP, nor on disk
            assert api.get("files/?path=/").body["entries"] == []
            listing = sftp(daemon, "tusser", PASSWORD, "ls -la /", tmp_path)
            assert listing.returncode == 0 and "report" not in listing.stdout and ".~upload" not in listing.stdout
            assert [p.name for p in daemon.home("tusser").iterdir()] == partials(daemon.home("tusser"))
    assert "upload-expires" not in headers  # complete: nothing left to expire
    down = api.get("files/download/?path=/report%20%C3%A9.bin")
    assert down.status == 200 and hashlib.sha256(down.raw).digest() == hashlib.sha256(data).digest()
    assert partials(daemon.home("tusser")) == []
    rows = [r for r in daemon.logs("upload") if r["username"] == "tusser"]
    assert [(r["path"], r["bytes"], r["protocol"]) for r in rows] == [("/report é.bin", len(data), "web")]
    assert tus.head(location)[0] == 404  # finished uploads are forgotten
    assert daemon.query("SELECT count(*) FROM uploads WHERE profile_id = (SELECT id FROM profiles "
                        "WHERE username = 'tusser')")[0][0] == 0  # fmt: skip


def test_an_empty_file_is_complete_at_creation(daemon):
    tus = user(daemon, "tusempty")
    tus.create(0, filename="empty.txt")
    assert (daemon.home("tusempty") / "empty.txt").read_bytes() == b""
    assert partials(daemon.home("tusempty")) == []


def test_folder_uploads_create_the_parents(daemon):
    tus = user(daemon, "tusfolder")
    location = tus.create(5, relativePath="album/2026/a.txt", filename="a.txt", path="/drop")
    assert tus.patch(location, 0, b"hello")[0] == 204
    assert (daemon.home("tusfolder") / "drop" / "album" / "2026" / "a.txt").read_bytes() == b"hello"


def test_method_override_for_clients_without_patch(daemon):
    tus = user(daemon, "tusoverride")
    location = tus.create(3, filename="o.txt")
    status, headers, _ = tus.request(
        "POST", location, b"abc", {"X-HTTP-Method-Override": "PATCH", "Upload-Offset": "0", "Content-Type": STREAM}
    )
    assert status == 204 and headers["upload-offset"] == "3"
    assert (daemon.home("tusoverride") / "o.txt").read_bytes() == b"abc"


# -- the protocol's errors --------------------------------------------------------------------


def test_protocol_errors(daemon):
    tus = user(daemon, "tuserrors")
    location = tus.create(10, filename="e.bin")
    assert tus.patch(location, 0, b"12345")[0] == 204
    status, headers, body = tus.patch(location, 3, b"xx")  # not the upload's offset
    assert status == 409 and headers["tus-resumable"] == "1.0.0" and b"offset 5" in body
    assert tus.patch(location, 5, b"xx", content_type="application/octet-stream")[0] == 415
    for version in (None, "0.2.2"):
        status, headers, _ = tus.request(
            "PATCH", location, b"xx", {"Upload-Offset": "5", "Content-Type": STREAM}, version=version
        )
        assert status == 412 and headers["tus-version"] == "1.0.0"
        assert tus.request("HEAD", location, version=version)[0] == 412
    assert tus.offset(location) == 5  # none of those wrote anything
    assert tus.patch(location, 5, b"123456")[0] == 413  # past Upload-Length
    assert tus.request("PATCH", location, b"x", {"Content-Type": STREAM})[0] == 400  # no Upload-Offset
    assert tus.request("POST", ENDPOINT, headers={"Upload-Metadata": encode({"filename": "x"})})[0] == 400
    assert tus.create(1 << 41, expect=413, filename="huge.bin")
    status, _, body = tus.request("POST", ENDPOINT, headers={"Upload-Length": "1", "Upload-Metadata": "filename %%%"})
    assert status == 400
    assert tus.create(1, expect=400)  # no file name
    assert tus.offset(location) == 5
    for method in ("HEAD", "DELETE"):
        assert tus.request(method, ENDPOINT + "0123456789abcdef0123456789abcdef")[0] == 404
    assert tus.patch(ENDPOINT + "0123456789abcdef0123456789abcdef", 0, b"x")[0] == 404
    assert Tus(daemon, None).request("HEAD", location)[0] == 401
    assert tus.request("GET", location)[0] == 405


def test_names_with_dot_dot_and_escapes_are_refused(daemon):
    tus = user(daemon, "tusdots")
    for metadata in ({"filename": "../x.txt"}, {"relativePath": "a/../../x.txt"}, {"filename": "a/../b.txt"}):
        assert tus.create(1, expect=400, **metadata)
    assert tus.create(1, expect=403, filename="x.txt", path="/../..")
    assert tus.create(1, expect=400, filename=".~upload-tus-x")  # the hidden names are reserved
    assert partials(daemon.home("tusdots")) == []


def test_overwrite_only_when_asked_and_never_by_surprise(daemon):
    tus = user(daemon, "tusover")
    home = daemon.home("tusover")
    home.mkdir(parents=True, exist_ok=True)
    (home / "there.txt").write_bytes(b"old")
    assert tus.create(3, expect=400, filename="there.txt")
    location = tus.create(3, filename="there.txt", overwrite="true")
    assert tus.patch(location, 0, b"new")[0] == 204
    assert (home / "there.txt").read_bytes() == b"new"
    # a file that appears under the name while the upload runs is not replaced at completion
    location = tus.create(4, filename="race.txt")
    assert tus.patch(location, 0, b"ab")[0] == 204
    (home / "race.txt").write_bytes(b"first")
    status, _, body = tus.patch(location, 2, b"cd")
    assert status == 400 and b"already exists" in body
    assert (home / "race.txt").read_bytes() == b"first" and partials(home) == []


def test_uploading_needs_the_permission(daemon):
    tus = user(daemon, "tusreadonly", permissions=["list", "download"])
    assert tus.create(3, expect=403, filename="no.txt")
    assert partials(daemon.home("tusreadonly")) == []


def test_the_quota_is_checked_at_creation_with_uploads_in_progress(daemon):
    tus = user(daemon, "tusquota", quota_bytes=1_000_000)
    status, _, body = tus.request(
        "POST", ENDPOINT, headers={"Upload-Length": "1000001", "Upload-Metadata": encode({"filename": "big.bin"})}
    )
    assert status == 507 and b"quota" in body
    first = tus.create(600_000, filename="one.bin")
    assert tus.create(600_000, expect=507, filename="two.bin")  # the first one's length is held
    assert tus.request("DELETE", first)[0] == 204
    assert tus.create(600_000, filename="two.bin")
    assert len(partials(daemon.home("tusquota"))) == 1


# -- termination, ownership, expiry ---------------------------------------------------------------


def test_termination_removes_the_partial_file(daemon):
    tus = user(daemon, "tusdelete")
    location = tus.create(100, filename="gone.bin")
    assert tus.patch(location, 0, b"x" * 40)[0] == 204
    assert len(partials(daemon.home("tusdelete"))) == 1
    status, headers, _ = tus.request("DELETE", location)
    assert status == 204 and headers["tus-resumable"] == "1.0.0"
    assert partials(daemon.home("tusdelete")) == []
    assert tus.head(location)[0] == 404 and tus.patch(location, 40, b"x")[0] == 404
    assert not (daemon.home("tusdelete") / "gone.bin").exists()


def test_another_profile_cannot_see_or_touch_an_upload(daemon):
    owner = user(daemon, "tusowner")
    other = user(daemon, "tusother")
    location = owner.create(10, filename="mine.bin")
    assert owner.patch(location, 0, b"12345")[0] == 204
    assert other.head(location)[0] == 404
    assert other.patch(location, 5, b"67890")[0] == 404
    assert other.request("DELETE", location)[0] == 404
    org = daemon.add_organisation("Tus Elsewhere")
    daemon.add_profile("tusforeign", org_id=org, is_admin=True)
    foreign = Tus(daemon, signed_in(daemon, "tusforeign", PASSWORD).token)
    assert foreign.head(location)[0] == 404
    assert owner.offset(location) == 5  # untouched


def test_an_expired_upload_answers_410_and_its_partial_file_goes(daemon):
    tus = user(daemon, "tusexpired")
    location = tus.create(10, filename="late.bin")
    assert tus.patch(location, 0, b"12345")[0] == 204
    daemon.execute(
        "UPDATE uploads SET expires_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-1 minute') WHERE id = ?",
        location.rsplit("/", 1)[1],
    )
    assert tus.head(location)[0] == 410
    assert partials(daemon.home("tusexpired")) == []
    assert tus.head(location)[0] == 404


def test_the_periodic_job_removes_expired_uploads(tmp_path):
    daemon = daemon_with(tmp_path, uploads__resumable_sweep_seconds=1)
    try:
        tus = user(daemon, "tusjob")
        stale, fresh = tus.create(10, filename="stale.bin"), tus.create(10, filename="fresh.bin")
        assert tus.patch(stale, 0, b"12345")[0] == 204 and tus.patch(fresh, 0, b"12345")[0] == 204
        daemon.execute(
            "UPDATE uploads SET expires_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-1 minute') WHERE id = ?",
            stale.rsplit("/", 1)[1],
        )
        wait_for(lambda: not daemon.query("SELECT 1 FROM uploads WHERE id = ?", stale.rsplit("/", 1)[1]))
        assert len(partials(daemon.home("tusjob"))) == 1  # only the fresh one's
        assert tus.head(stale)[0] == 404
        assert tus.offset(fresh) == 5
    finally:
        daemon.stop()


# -- resuming ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("declared, sent", [(4 * 1024 * 1024, 1_234_567), (60_000, 20_000)])
def test_a_patch_cut_off_midway_keeps_what_arrived(daemon, declared, sent):
    # large bodies are spooled to a temporary file, small ones kept in memory: both are kept
    tus = user(daemon, f"tuscut{sent}")
    data = os.urandom(declared + 10)
    location = tus.create(len(data), filename="cut.bin")
    assert tus.patch(location, 0, data[:10])[0] == 204
    cut_off_patch(daemon, tus.token, location, 10, declared, data[10 : 10 + sent])
    wait_for(lambda: tus.offset(location) == 10 + sent)
    assert not (daemon.home(f"tuscut{sent}") / "cut.bin").exists()
    status, headers, _ = tus.patch(location, 10 + sent, data[10 + sent :])
    assert status == 204 and headers["upload-offset"] == str(len(data))
    assert (daemon.home(f"tuscut{sent}") / "cut.bin").read_bytes() == data


def test_resuming_after_the_daemon_is_killed(fresh_daemon):
    daemon = fresh_daemon
    tus = user(daemon, "tusrestart")
    data = os.urandom(2 * 1024 * 1024)
    location = tus.create(len(data), filename="survivor.bin")
    assert tus.patch(location, 0, data[:700_000])[0] == 204
    home = daemon.home("tusrestart")
    orphan = home / ".~upload-tus-0123456789abcdef0123456789abcdef"  # a partial file no row knows
    orphan.write_bytes(b"left by a crash")
    crashed = home / ".~upload-0123456789abcdef"  # an ordinary upload's temporary file
    crashed.write_bytes(b"left by a crash")
    daemon.stop(kill=True)
    daemon.start()
    wait_for(lambda: not orphan.exists() and not crashed.exists())
    assert len(partials(home)) == 1  # the live upload's partial file survived the sweep
    tus = Tus(daemon, signed_in(daemon, "tusrestart", PASSWORD).token)
    assert tus.offset(location) == 700_000
    assert tus.patch(location, 700_000, data[700_000:])[0] == 204
    assert (home / "survivor.bin").read_bytes() == data


def test_a_refreshed_access_token_or_an_api_token_continues_the_upload(daemon):
    daemon.add_profile("tusrefresh", is_admin=True)
    api = signed_in(daemon, "tusrefresh", PASSWORD)
    data = os.urandom(300_000)
    first = Tus(daemon, api.token)
    location = first.create(len(data), filename="long.bin")
    assert first.patch(location, 0, data[:100_000])[0] == 204
    renewed = Api(daemon).post("token/refresh/", {"refresh": api.refresh_token})
    assert renewed.status == 200
    second = Tus(daemon, renewed.body["access"])
    assert second.offset(location) == 100_000
    assert second.patch(location, 100_000, data[100_000:200_000])[0] == 204
    created = Api(daemon, renewed.body["access"]).post("tokens/", {"name": "uploader", "scopes": ["files"]})
    assert created.status == 201
    script = Tus(daemon, created.body["token"])
    assert script.offset(location) == 200_000
    status, _, _ = script.patch(location, 200_000, data[200_000:])
    assert status == 204
    assert (daemon.home("tusrefresh") / "long.bin").read_bytes() == data
    assert daemon.logs("upload")[-1]["protocol"] == "api"  # the request that completed it


def test_sessions_and_other_scopes_are_still_checked(daemon):
    daemon.add_profile("tusscope", is_admin=True)
    api = signed_in(daemon, "tusscope", PASSWORD)
    location = Tus(daemon, api.token).create(10, filename="s.bin")
    admin_only = Api(daemon, api.token).post("tokens/", {"name": "admin only", "scopes": ["admin"]})
    assert Tus(daemon, admin_only.body["token"]).head(location)[0] == 403
    assert Tus(daemon, "garbage").head(location)[0] == 401
    assert Tus(daemon, signed_in(daemon, "admin", ADMIN_PASSWORD).token).head(location)[0] == 404


# -- the console's client ------------------------------------------------------------------------

UI_MODULES = ROOT / "ui" / "node_modules"


@pytest.mark.requires("node", str(UI_MODULES / "tus-js-client"))  # the console's npm packages (make build)
def test_the_consoles_tus_js_client_uploads_and_resumes(daemon, tmp_path):
    daemon.add_profile("tusjs")
    token = signed_in(daemon, "tusjs", PASSWORD).token
    data = os.urandom(5 * 1024 * 1024 + 3)
    source = tmp_path / "source.bin"
    source.write_bytes(data)
    run = subprocess.run(
        ["node", str(Path(__file__).with_name("tus_client.js")), f"http://127.0.0.1:{daemon.http_port}", token,
         str(source)], env=dict(os.environ, NODE_PATH=str(UI_MODULES)), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    results = {r["name"]: r for r in map(json.loads, run.stdout.splitlines())}
    assert results["cut"]["done"] is False and results["resumed"]["url"] == results["cut"]["url"]
    home = daemon.home("tusjs")
    for path in ("whole.bin", "up/album/chunked.bin", "resumed.bin"):
        assert (home / path).read_bytes() == data, path
    assert partials(home) == []
    rows = [r for r in daemon.logs("upload") if r["username"] == "tusjs"]
    assert sorted(r["path"] for r in rows) == ["/resumed.bin", "/up/album/chunked.bin", "/whole.bin"]
