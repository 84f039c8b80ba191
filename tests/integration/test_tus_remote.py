"""Resumable (tus) uploads to remote sources: a remote SFTP server (OpenSSH's sshd)
and S3 (moto's server), started here beside one daemon that holds a source of each.
The bytes are staged on the appliance's disk (data/uploads/staging/<id>) until the
last one arrives, then sent to the source through its own upload path. Each test
speaks tus by hand (tests/frontends/test_http_tus.py's client) and looks at the
staging folder, the store behind the source and the API's listing."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import unquote

import pytest

from ..api_client import signed_in
from ..frontends.test_http_tus import UI_MODULES, Tus, cut_off_patch, wait_for
from ..helpers import file_sizes
from .sources import BUCKET, S3Server
from .test_backends import PASSWORD, PREFIX, BucketBackend, FolderBackend, create_source

WRITES = ["s3:PutObject", "s3:CreateMultipartUpload", "s3:UploadPart", "s3:CompleteMultipartUpload"]


@pytest.fixture(scope="module")
def gateway(daemon_factory):
    return daemon_factory(sources__allow_loopback=True, uploads__resumable_sweep_seconds=1)


@pytest.fixture(scope="module", params=["sftp", "s3"])
def backend(request, gateway):
    if request.param == "sftp":
        remote = request.getfixturevalue("remote")
        config = {"host": "127.0.0.1", "port": remote.port, "username": remote.user,
                  "private_key": remote.client_key.read_text(), "path": str(remote.files)}  # fmt: skip
        backend = FolderBackend("sftp", gateway, create_source(gateway, "Remote host", "sftp", config), remote.files)
        backend.server = remote
        return backend
    s3 = request.getfixturevalue("s3")
    config = {"endpoint": s3.endpoint, "region": "us-east-1", "bucket": BUCKET, "prefix": PREFIX,
              "access_key": s3.access_key, "secret_key": s3.secret_key, "path_style": True}  # fmt: skip
    return BucketBackend(gateway, create_source(gateway, "Bucket", "s3", config), s3)


def staging(daemon) -> Path:
    return daemon.data_dir / "uploads" / "staging"


def staged(daemon) -> dict[str, int]:
    folder = staging(daemon)
    return {p.name: size for p, size in file_sizes(folder.iterdir())} if folder.is_dir() else {}


def tus_user(backend, stem: str, **extra) -> tuple[str, Tus]:
    user = backend.user(stem, **extra)
    return user, Tus(backend.daemon, signed_in(backend.daemon, user, PASSWORD).token)


def upload_id(location: str) -> str:
    return location.rsplit("/", 1)[1]


def listed(daemon, user: str, folder: str = "/") -> dict[str, int]:
    body = signed_in(daemon, user, PASSWORD).get(f"files/?path={folder}").body
    return {e["name"]: e["size"] for e in body["entries"]}


def test_an_upload_in_chunks_is_staged_and_appears_only_when_complete(backend):
    user, tus = tus_user(backend, "tuschunks")
    data = os.urandom(3 * 1024 * 1024 + 17)
    location = tus.create(len(data), filename="report.bin", path="/", relativePath="q3/report.bin")
    ident = upload_id(location)
    mode = stat.S_IMODE((staging(backend.daemon) / ident).stat().st_mode)
    assert mode == 0o600
    step = 1024 * 1024
    for offset in range(0, len(data) - step, step):
        status, headers, body = tus.patch(location, offset, data[offset : offset + step])
        assert status == 204, body
        assert int(headers["upload-offset"]) == offset + step
        assert staged(backend.daemon)[ident] == offset + step
        assert backend.files(user) == {} and backend.leftovers(user) == []  # nothing on the source yet
        assert listed(backend.daemon, user, "/q3") == {}
    offset = (len(data) - 1) // step * step
    status, headers, body = tus.patch(location, offset, data[offset:])
    assert status == 204, body
    assert headers["upload-offset"] == str(len(data))
    assert backend.files(user) == {"q3/report.bin": len(data)}
    assert backend.read(user, "q3/report.bin") == data
    assert ident not in staged(backend.daemon)
    assert listed(backend.daemon, user, "/q3") == {"report.bin": len(data)}
    down = signed_in(backend.daemon, user, PASSWORD).get("files/download/?path=/q3/report.bin")
    assert down.status == 200 and down.raw == data
    rows = [r for r in backend.daemon.logs("upload") if r["username"] == user]
    assert [(r["path"], r["bytes"], r["protocol"]) for r in rows] == [("/q3/report.bin", len(data), "web")]
    assert tus.head(location)[0] == 404  # finished: the upload is gone


def test_an_empty_file_is_sent_at_creation(backend):
    user, tus = tus_user(backend, "tusempty")
    before = staged(backend.daemon)
    tus.create(0, filename="empty.txt")
    assert backend.files(user) == {"empty.txt": 0}
    assert staged(backend.daemon) == before


def test_an_interrupted_patch_resumes_from_the_offset_head_reports(backend):
    user, tus = tus_user(backend, "tusresume")
    data = os.urandom(2 * 1024 * 1024 + 10)
    location = tus.create(len(data), filename="cut.bin")
    assert tus.patch(location, 0, data[:10])[0] == 204
    cut_off_patch(backend.daemon, tus.token, location, 10, 2 * 1024 * 1024, data[10:700_010])
    wait_for(lambda: tus.offset(location) == 700_010)
    assert backend.files(user) == {}
    status, headers, _ = tus.patch(location, 700_010, data[700_010:])
    assert status == 204 and headers["upload-offset"] == str(len(data))
    assert backend.read(user, "cut.bin") == data
    assert upload_id(location) not in staged(backend.daemon)


def test_the_quota_is_checked_at_creation_counting_uploads_in_progress(backend):
    user, tus = tus_user(backend, "tusquota", quota_bytes=1_000_000)
    backend.seed(user, "already.bin", b"x" * 600_000)  # counted by the first walk of the home
    before = staged(backend.daemon)
    status, _, body = tus.request(
        "POST", "/api/portal/files/tus/", headers={"Upload-Length": "500000", "Upload-Metadata": "filename YS5iaW4="}
    )
    assert status == 507, body
    assert "quota" in json.loads(body)["detail"].lower()
    assert staged(backend.daemon) == before
    first = tus.create(300_000, filename="b.bin")  # fits, and holds its 300 000 bytes
    tus.create(300_000, filename="c.bin", expect=507)
    assert tus.request("DELETE", first)[0] == 204
    assert upload_id(first) not in staged(backend.daemon)
    tus.create(300_000, filename="c.bin")


def test_an_expired_staging_is_removed_by_the_periodic_job(backend):
    user, tus = tus_user(backend, "tusexpire")
    stale, fresh = tus.create(10, filename="stale.bin"), tus.create(10, filename="fresh.bin")
    assert tus.patch(stale, 0, b"12345")[0] == 204 and tus.patch(fresh, 0, b"12345")[0] == 204
    assert {upload_id(stale), upload_id(fresh)} <= set(staged(backend.daemon))
    backend.daemon.execute(
        "UPDATE uploads SET expires_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-1 minute') WHERE id = ?",
        upload_id(stale),
    )
    # the job removes the staged file, then the row: wait for both
    wait_for(
        lambda: (
            upload_id(stale) not in staged(backend.daemon)
            and not backend.daemon.query("SELECT 1 FROM uploads WHERE id = ?", upload_id(stale))
        )
    )
    assert upload_id(stale) not in staged(backend.daemon)
    assert not backend.daemon.query("SELECT 1 FROM uploads WHERE id = ?", upload_id(stale))
    assert tus.head(stale)[0] == 404
    assert tus.offset(fresh) == 5 and upload_id(fresh) in staged(backend.daemon)
    assert tus.patch(fresh, 5, b"67890")[0] == 204
    assert backend.read(user, "fresh.bin") == b"1234567890" and "stale.bin" not in backend.files(user)


def test_a_file_made_meanwhile_is_not_overwritten_and_the_upload_goes(backend):
    user, tus = tus_user(backend, "tusclash")
    location = tus.create(6, filename="clash.txt")
    backend.seed(user, "clash.txt", b"theirs")
    status, _, body = tus.patch(location, 0, b"mine!!")
    assert status == 400 and "already exists" in json.loads(body)["detail"], body
    assert backend.read(user, "clash.txt") == b"theirs"
    assert upload_id(location) not in staged(backend.daemon)
    assert tus.head(location)[0] == 404


def refuse_writes(s3: S3Server, refuse: bool) -> None:
    """The appliance's S3 user loses (or gets back) the right to write objects."""
    iam = s3.client("iam", s3.access_key, s3.secret_key)
    statements = [{"Effect": "Allow", "Action": "*", "Resource": "*"}]
    if refuse:
        statements.append({"Effect": "Deny", "Action": WRITES, "Resource": "*"})
    policy = {"Version": "2012-10-17", "Statement": statements}
    iam.put_user_policy(UserName="appliance", PolicyName="all", PolicyDocument=json.dumps(policy))


def test_a_source_failing_at_the_last_chunk_keeps_the_upload_and_a_retry_sends_it(backend):
    user, tus = tus_user(backend, "tusretry")
    data = os.urandom(1_500_000)
    location = tus.create(len(data), filename="late.bin")
    assert tus.patch(location, 0, data[:1_000_000])[0] == 204
    if backend.kind == "sftp":
        backend.server.stop()  # the remote host goes down
    else:
        refuse_writes(backend.s3, True)  # the bucket refuses the appliance's writes
    try:
        status, headers, body = tus.patch(location, 1_000_000, data[1_000_000:])
        assert status == 503, body
        detail = json.loads(body)["detail"]
        assert "did not take the file" in detail and backend.source["name"] in detail, detail
        assert staged(backend.daemon)[upload_id(location)] == len(data)  # kept, complete
        status, headers = tus.head(location)  # what tus-js-client asks next: 423, which it retries
        assert status == 423
        assert backend.source["name"] in unquote(headers["upload-error"])  # a HEAD's reply has no body
        assert backend.files(user) == {} and backend.leftovers(user) == []
    finally:
        if backend.kind == "sftp":
            backend.server.start()
        else:
            refuse_writes(backend.s3, False)
    answers = []
    wait_for(lambda: answers.append(tus.head(location)) or answers[-1][0] != 423, timeout=30)
    status, headers = answers[-1]  # the HEAD that sent it reports the upload complete
    assert status == 200 and headers["upload-offset"] == headers["upload-length"] == str(len(data)), answers[-1]
    assert tus.head(location)[0] == 404
    assert backend.read(user, "late.bin") == data
    assert upload_id(location) not in staged(backend.daemon)
    rows = [r for r in backend.daemon.logs("upload") if r["username"] == user]
    assert [(r["path"], r["bytes"]) for r in rows] == [("/late.bin", len(data))]


def test_a_staging_no_upload_knows_is_swept_at_start_up_and_live_ones_resume(backend):
    daemon = backend.daemon
    user, tus = tus_user(backend, "tusrestart")
    data = os.urandom(800_000)
    location = tus.create(len(data), filename="survivor.bin")
    assert tus.patch(location, 0, data[:300_000])[0] == 204
    orphan = staging(daemon) / "0123456789abcdef0123456789abcdef"
    orphan.write_bytes(b"left by a crash")
    daemon.stop(kill=True)
    daemon.start()
    wait_for(lambda: not orphan.exists())
    assert staged(daemon)[upload_id(location)] == 300_000
    tus = Tus(daemon, signed_in(daemon, user, PASSWORD).token)
    assert tus.offset(location) == 300_000
    assert tus.patch(location, 300_000, data[300_000:])[0] == 204
    assert backend.read(user, "survivor.bin") == data


@pytest.mark.requires("node", str(UI_MODULES / "tus-js-client"))  # the console's npm packages (make build)
def test_the_consoles_tus_js_client_uploads_and_resumes(backend, tmp_path):
    user = backend.user("tusjs")
    token = signed_in(backend.daemon, user, PASSWORD).token
    data = os.urandom(5 * 1024 * 1024 + 3)
    source = tmp_path / "source.bin"
    source.write_bytes(data)
    script = Path(__file__).parent.parent / "frontends" / "tus_client.js"
    run = subprocess.run(
        ["node", str(script), f"http://127.0.0.1:{backend.daemon.http_port}", token, str(source)],
        env=dict(os.environ, NODE_PATH=str(UI_MODULES)), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    results = {r["name"]: r for r in map(json.loads, run.stdout.splitlines())}
    assert results["cut"]["done"] is False and results["resumed"]["url"] == results["cut"]["url"]
    for path in ("whole.bin", "up/album/chunked.bin", "resumed.bin"):
        assert backend.read(user, path) == data, path
    assert backend.leftovers(user) == []


def test_a_new_profiles_first_requests_at_once_all_find_its_home(backend):
    # the console lists the folder and creates the upload together: each may be the first
    # to make the home on the remote; the loser of that race must not fail
    user, tus = tus_user(backend, "tusfirst")
    api = signed_in(backend.daemon, user, PASSWORD)
    with ThreadPoolExecutor(4) as pool:
        listings = [pool.submit(api.get, "files/?path=/") for _ in range(3)]
        created = pool.submit(tus.request, "POST", "/api/portal/files/tus/",
                              headers={"Upload-Length": "3", "Upload-Metadata": "filename eC50eHQ="})  # fmt: skip
        assert [f.result().status for f in listings] == [200, 200, 200]
        assert created.result()[0] == 201, created.result()
