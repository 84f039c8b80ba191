"""One protocol-level suite run against every source type: a local folder, a
remote SFTP server (OpenSSH's sshd started here) and S3 (moto's server, a
stand-in for S3, started here). One daemon (with [sources] allow_loopback on)
holds a source of each type, made through the admin API; each test makes its
own profile on the source under test and drives it with real clients (OpenSSH
sftp, lftp, curl, the HTTP API), then looks at what the store itself holds."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from ..api_client import signed_in
from ..frontends.sftp_client import OPTIONS, auth_options, sftp, sha256
from ..helpers import ADMIN_PASSWORD, file_sizes, require
from .sources import BUCKET, S3Server

PASSWORD = "backend-password-1"
PREFIX = "tenants/backends"
TEMP_PREFIX = ".~upload-"  # a local or remote-SFTP upload in progress (appliance/storage/paths.py)
ALL = ["list", "download", "upload", "overwrite", "delete", "rename", "mkdir"]


class Backend:
    """A source of one type on the shared daemon, and a look at its store from outside."""

    def __init__(self, kind: str, daemon, source: dict):
        self.kind = kind
        self.daemon = daemon
        self.source = source

    def user(self, stem: str, **extra) -> str:
        """A new profile on this source; returns its username (unique per backend)."""
        username = f"{stem}{self.kind}"
        body = {"username": username, "email": f"{username}@example.com", "password": PASSWORD,
                "source": self.source["id"], "protocols": ["sftp", "ftp", "web"], "permissions": ALL}  # fmt: skip
        body.update(extra)
        reply = signed_in(self.daemon, "admin", ADMIN_PASSWORD).post("profiles/", body)
        assert reply.status == 201, reply.body
        return username

    def home(self, username: str) -> str:
        """The home's path inside the source ('' for the source's root)."""
        if not username:
            return ""
        return self.daemon.query("SELECT home FROM profiles WHERE username=?", username)[0]["home"].strip("/")

    # what a subclass tells about its store: paths relative to the home
    def files(self, username: str) -> dict[str, int]:
        """Every file under the home (temporary ones included) and its size."""
        raise NotImplementedError

    def folders(self, username: str) -> set[str]:
        raise NotImplementedError

    def read(self, username: str, name: str) -> bytes:
        raise NotImplementedError

    def seed(self, username: str, name: str, data: bytes) -> None:
        """Put a file there behind the appliance's back."""
        raise NotImplementedError

    def upload_started(self, username: str, name: str) -> bool:
        raise NotImplementedError

    def leftovers(self, username: str) -> list[str]:
        """Uploads begun and neither finished nor dropped."""
        return [name for name in self.files(username) if name.rsplit("/", 1)[-1].startswith(TEMP_PREFIX)]


class FolderBackend(Backend):
    """A source whose store is a folder this machine sees: local, or the remote sshd's."""

    def __init__(self, kind: str, daemon, source: dict, root: Path):
        super().__init__(kind, daemon, source)
        self.root = root

    def path(self, username: str) -> Path:
        return self.root / self.home(username)

    def files(self, username):
        base = self.path(username)
        return {str(p.relative_to(base)): size for p, size in file_sizes(base.rglob("*"))}

    def folders(self, username):
        base = self.path(username)
        return {str(p.relative_to(base)) for p in base.rglob("*") if p.is_dir()}

    def read(self, username, name):
        return (self.path(username) / name).read_bytes()

    def seed(self, username, name, data):
        target = self.path(username) / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)

    def upload_started(self, username, name):
        base = self.path(username)
        return base.is_dir() and any(
            p.name.startswith(TEMP_PREFIX) and size > 0 for p, size in file_sizes(base.iterdir())
        )


class BucketBackend(Backend):
    def __init__(self, daemon, source: dict, s3: S3Server):
        super().__init__("s3", daemon, source)
        self.s3 = s3

    def key(self, username: str, name: str = "") -> str:
        return "/".join(part for part in (PREFIX, self.home(username), name) if part)

    def files(self, username):
        base = self.key(username) + "/"
        return {k[len(base) :]: size for k, size in self.s3.keys(base).items() if not k.endswith("/")}

    def folders(self, username):
        base = self.key(username) + "/"
        return {k[len(base) :].rstrip("/") for k in self.s3.keys(base) if k.endswith("/") and k != base}

    def read(self, username, name):
        return self.s3.body(self.key(username, name))

    def seed(self, username, name, data):
        self.s3.s3.put_object(Bucket=BUCKET, Key=self.key(username, name), Body=data)

    def upload_started(self, username, name):
        return self.key(username, name) in self.s3.pending_uploads()

    def leftovers(self, username):
        base = self.key(username) + "/"
        return [k for k in self.s3.pending_uploads() if k.startswith(base)]


@pytest.fixture(scope="module")
def gateway(daemon_factory):
    require("sftp", "sshpass")
    return daemon_factory(sources__allow_loopback=True)


def create_source(daemon, name: str, kind: str, config: dict) -> dict:
    created = signed_in(daemon, "admin", ADMIN_PASSWORD).post(
        "sources/", {"name": name, "type": kind, "config": config}
    )
    assert created.status == 201, created.body
    assert created.body["status"] == "ok", created.body
    return created.body


@pytest.fixture(scope="module", params=["local", "sftp", "s3"])
def backend(request, gateway) -> Backend:
    kind = request.param
    if kind == "local":
        root = gateway.source_root() / "backends-local"
        root.mkdir()
        source = create_source(gateway, "Local folder", "local", {"path": "backends-local"})
        return FolderBackend(kind, gateway, source, root)
    if kind == "sftp":
        remote = request.getfixturevalue("remote")
        config = {"host": "127.0.0.1", "port": remote.port, "username": remote.user,
                  "private_key": remote.client_key.read_text(), "path": str(remote.files)}  # fmt: skip
        return FolderBackend(kind, gateway, create_source(gateway, "Remote host", "sftp", config), remote.files)
    s3 = request.getfixturevalue("s3")
    config = {"endpoint": s3.endpoint, "region": "us-east-1", "bucket": BUCKET, "prefix": PREFIX,
              "access_key": s3.access_key, "secret_key": s3.secret_key, "path_style": True}  # fmt: skip
    return BucketBackend(gateway, create_source(gateway, "Bucket", "s3", config), s3)


def test_round_trip_over_sftp(backend, tmp_path):
    user = backend.user("gw")
    payload = tmp_path / "payload.bin"
    payload.write_bytes(os.urandom(3 * 1024 * 1024 + 12345))
    result = sftp(
        backend.daemon, user, PASSWORD,
        "mkdir docs\nput payload.bin docs/payload.bin\nls -l docs\nrename docs/payload.bin docs/moved.bin\n"
        "get docs/moved.bin back.bin\nls docs",
        tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "payload.bin" in result.stdout and "moved.bin" in result.stdout
    assert backend.files(user) == {"docs/moved.bin": payload.stat().st_size}
    assert backend.read(user, "docs/moved.bin") == payload.read_bytes()
    assert sha256(tmp_path / "back.bin") == sha256(payload)
    result = sftp(backend.daemon, user, PASSWORD, "rm docs/moved.bin\nrmdir docs\nls -la", tmp_path)
    assert result.returncode == 0, result.stderr
    assert backend.files(user) == {} and backend.folders(user) == set()
    actions = {row["action"] for row in backend.daemon.logs() if row["username"] == user}
    assert {"upload", "download", "mkdir", "rename", "delete"} <= actions, actions


def test_round_trip_over_ftp_with_a_resumed_download(backend, tmp_path):
    require("lftp", "curl")
    user = backend.user("ftp")
    payload = tmp_path / "blob.bin"
    payload.write_bytes(os.urandom(2 * 1024 * 1024 + 7))
    (tmp_path / "back").mkdir()
    script = (
        "set ftp:passive-mode on; set ftp:ssl-allow no; set net:max-retries 1; "
        f"mkdir sub; put {payload} -o sub/blob.bin; mv sub/blob.bin sub/moved.bin; "
        f"get sub/moved.bin -o {tmp_path / 'back' / 'moved.bin'}; cls -l sub; bye"
    )
    result = subprocess.run(
        ["lftp", "-u", f"{user},{PASSWORD}", "-p", str(backend.daemon.ftp_port), "-e", script, "127.0.0.1"],
        capture_output=True, timeout=90, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert result.returncode == 0, (result.stdout + result.stderr).decode(errors="replace")
    assert b"moved.bin" in result.stdout
    assert backend.files(user) == {"sub/moved.bin": payload.stat().st_size}
    assert backend.read(user, "sub/moved.bin") == payload.read_bytes()
    assert sha256(tmp_path / "back" / "moved.bin") == sha256(payload)
    # a download cut off after 1000000 bytes, resumed with REST by curl -C
    partial = tmp_path / "partial.bin"
    partial.write_bytes(payload.read_bytes()[:1000000])
    url = f"ftp://{user}:{PASSWORD}@127.0.0.1:{backend.daemon.ftp_port}/sub/moved.bin"
    resumed = subprocess.run(["curl", "-sS", "--ftp-pasv", "-C", "-", "-o", str(partial), url],
                             capture_output=True, timeout=60)  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert sha256(partial) == sha256(payload)
    deleted = subprocess.run(["curl", "-sS", "--ftp-pasv", "-Q", "DELE /sub/moved.bin", url.rsplit("/", 2)[0] + "/"],
                             capture_output=True, timeout=60)  # fmt: skip
    assert deleted.returncode == 0, deleted.stderr
    assert backend.files(user) == {}


def test_round_trip_over_http(backend):
    user = backend.user("web")
    api = signed_in(backend.daemon, user, PASSWORD)
    data = os.urandom(2 * 1024 * 1024 + 5)
    body = (
        b'--XyZ\r\nContent-Disposition: form-data; name="file"; filename="q3/report.bin"\r\n'
        b"Content-Type: application/octet-stream\r\n\r\n" + data + b"\r\n--XyZ--\r\n"
    )
    up = api.post(
        "files/upload/?path=/reports", raw=body, headers={"Content-Type": "multipart/form-data; boundary=XyZ"}
    )
    assert up.status == 201, up.body
    assert backend.read(user, "reports/q3/report.bin") == data
    listing = api.get("files/?path=/reports/q3").body
    assert [(e["name"], e["size"]) for e in listing["entries"]] == [("report.bin", len(data))]
    down = api.get("files/download/?path=/reports/q3/report.bin")
    assert down.status == 200 and down.raw == data
    part = api.get("files/download/?path=/reports/q3/report.bin", headers={"Range": "bytes=100000-199999"})
    assert part.status == 206 and part.raw == data[100000:200000]
    assert api.post("files/rename/", {"path": "/reports", "new_path": "/kept"}).status == 200
    assert backend.files(user) == {"kept/q3/report.bin": len(data)}
    assert api.get("files/?path=/kept/q3").body["entries"][0]["name"] == "report.bin"
    assert api.delete("files/?path=/kept").status == 204  # a folder with everything in it
    assert api.get("files/?path=/").body["entries"] == []
    assert backend.files(user) == {} and backend.folders(user) == set()


def test_an_upload_over_quota_is_refused_and_leaves_nothing(backend, tmp_path):
    user = backend.user("quota", quota_bytes=1_000_000, protocols=["sftp"])
    backend.seed(user, "already.bin", b"x" * 600_000)  # counted by the first walk of the home
    (tmp_path / "half.bin").write_bytes(os.urandom(500_000))
    result = sftp(backend.daemon, user, PASSWORD, "put half.bin half.bin", tmp_path)
    assert result.returncode != 0, result.stderr
    assert backend.files(user) == {"already.bin": 600_000}  # nothing kept, no temporary left
    assert backend.leftovers(user) == []
    result = sftp(backend.daemon, user, PASSWORD, "rm already.bin\nput half.bin half.bin", tmp_path)
    assert result.returncode == 0, result.stderr
    assert backend.files(user) == {"half.bin": 500_000}


def test_a_file_renamed_onto_itself_stays_counted_in_the_quota(backend, tmp_path):
    user = backend.user("quota-self", quota_bytes=1_000_000, protocols=["sftp"])
    backend.seed(user, "kept.bin", b"k" * 600_000)
    (tmp_path / "half.bin").write_bytes(os.urandom(500_000))
    result = sftp(backend.daemon, user, PASSWORD, "rename kept.bin kept.bin", tmp_path)  # posix-rename: overwrites
    assert result.returncode == 0, result.stderr
    result = sftp(backend.daemon, user, PASSWORD, "put half.bin half.bin", tmp_path)
    assert result.returncode != 0, result.stderr  # 600 KB + 500 KB is still over 1 MB
    assert backend.files(user) == {"kept.bin": 600_000}


def test_an_interrupted_upload_leaves_nothing_under_its_name(backend, tmp_path):
    user = backend.user("cut")
    (tmp_path / "big.bin").write_bytes(os.urandom(64 * 1024 * 1024))
    (tmp_path / "batch.txt").write_text("put big.bin big.bin\n")
    client = subprocess.Popen(
        ["sshpass", "-e", "sftp", *OPTIONS, *auth_options(None), "-l", "40000", "-P", str(backend.daemon.sftp_port),
         "-b", "batch.txt", f"{user}@127.0.0.1"],  # 5 MB/s: still uploading when it is killed
        env=dict(os.environ, SSHPASS=PASSWORD), cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        started = False
        while time.monotonic() < deadline and not started:
            started = backend.upload_started(user, "big.bin")
            time.sleep(0.05)
    finally:
        os.killpg(client.pid, signal.SIGKILL)
        client.wait()
    assert started, "the upload never reached the store"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and (backend.files(user) or backend.leftovers(user)):
        time.sleep(0.1)
    assert backend.files(user) == {}  # nothing under big.bin, and the temporary upload went too
    assert backend.leftovers(user) == []


def test_an_ftp_client_that_dies_mid_upload_leaves_nothing(backend):
    """Its exit closes the control connection, then the data one cleanly: the commit's
    last look (after the bytes are durable on the source, before the name appears) sees
    the client gone, so the 100,000 bytes that came are not the file, on any source."""
    import sys

    from ..frontends.test_ftp import DYING_CLIENT

    user = backend.user("dying")
    client = subprocess.run([sys.executable, "-c", DYING_CLIENT, str(backend.daemon.ftp_port), user, PASSWORD],
                            capture_output=True, timeout=60)  # fmt: skip
    assert client.returncode == 0, client.stderr.decode(errors="replace")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and (backend.files(user) or backend.leftovers(user)):
        time.sleep(0.1)
    assert backend.files(user) == {}  # nothing under half.bin, and the temporary upload went too
    assert backend.leftovers(user) == []
    assert not [row for row in backend.daemon.logs("upload") if row["username"] == user]


def test_a_path_escape_is_refused(backend, tmp_path):
    user = backend.user("jail")
    backend.seed("", "secret.txt", b"not yours")  # at the source's root, beside the homes
    for path in ("../secret.txt", "/../secret.txt", "../../../secret.txt"):
        result = sftp(backend.daemon, user, PASSWORD, f"get {path} got.txt", tmp_path)
        assert result.returncode != 0
        assert not (tmp_path / "got.txt").exists()
    (tmp_path / "x.txt").write_text("x")
    sftp(backend.daemon, user, PASSWORD, "put x.txt ../x.txt", tmp_path)  # lands in the home, if anywhere
    assert "x.txt" not in backend.files("") and backend.files("")["secret.txt"] == 9
    api = signed_in(backend.daemon, user, PASSWORD)
    assert api.get("files/?path=/../..").status == 403
    assert api.get("files/download/?path=/../secret.txt").status in (403, 404)


def test_the_writing_session_sees_its_upload_and_what_read_write_opens_do(backend):
    """Every source: the session writing a file stats it as it grows, another session
    does not see it until it is closed. Local sources also read back, resize and
    rename an open upload; remote ones (SFTP, S3) refuse those with a clear message,
    except emptying a file (truncate to 0)."""
    from paramiko import SFTPClient, Transport

    user = backend.user("rw")
    transports = [Transport(("127.0.0.1", backend.daemon.sftp_port)) for _ in range(2)]
    for transport in transports:
        transport.connect(username=user, password=PASSWORD)
    client, other = (SFTPClient.from_transport(t) for t in transports)
    try:
        with client.open("draft.txt", "w") as f:
            f.write(b"hello world")
            assert client.stat("draft.txt").st_size == 11
            assert "draft.txt" in client.listdir(".")
            assert "draft.txt" not in other.listdir(".")
        assert backend.read(user, "draft.txt") == b"hello world"
        if backend.kind == "local":
            with client.open("draft.txt", "r+") as f:
                assert f.read() == b"hello world"
                f.truncate(5)
            client.truncate("draft.txt", 4)
            assert backend.read(user, "draft.txt") == b"hell"
        else:
            with client.open("draft.txt", "r+") as f:
                with pytest.raises(OSError, match="remote source"):
                    f.read()
            with pytest.raises(OSError, match="only emptied"):
                client.truncate("draft.txt", 4)
            assert backend.read(user, "draft.txt") == b"hello world"
        client.truncate("draft.txt", 0)
        assert backend.read(user, "draft.txt") == b""
    finally:
        for transport in transports:
            transport.close()


def test_chmod_is_applied_where_the_source_keeps_modes_and_said_unsupported_where_not(backend, tmp_path):
    """A mode is applied on a local source (the owner keeps read and write; setuid, setgid,
    sticky and others' write never); a source that keeps no modes (remote SFTP, S3)
    answers "unsupported" and changes nothing; asking for the mode a file has is no change."""
    user = backend.user("modes")
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o750)
    os.utime(script, (1_600_000_000, 1_600_000_000))
    result = sftp(backend.daemon, user, PASSWORD, "put run.sh\nchmod 640 run.sh", tmp_path)
    assert result.returncode == 0, result.stderr  # 640: the mode the appliance gives every file
    result = sftp(backend.daemon, user, PASSWORD, "chmod 600 run.sh\nls -l run.sh", tmp_path)
    if backend.kind != "local":
        assert result.returncode != 0 and "unsupported" in result.stderr.lower(), result.stderr
        assert "-rw-r-----" in sftp(backend.daemon, user, PASSWORD, "ls -l run.sh", tmp_path).stdout
        if backend.kind == "sftp":
            assert (backend.path(user) / "run.sh").stat().st_mode & 0o777 == 0o640
        return
    assert result.returncode == 0 and "-rw-------" in result.stdout, (result.stdout, result.stderr)
    stored = backend.path(user) / "run.sh"
    assert stored.stat().st_mode & 0o7777 == 0o600
    for refused in ("4750", "666", "200", "1640"):
        result = sftp(backend.daemon, user, PASSWORD, f"chmod {refused} run.sh", tmp_path)
        assert result.returncode != 0 and "unsupported" in result.stderr.lower(), (refused, result.stderr)
        assert stored.stat().st_mode & 0o7777 == 0o600, refused
    # put -p: the mode and the times come with the upload (FSETSTAT on the open file)
    result = sftp(backend.daemon, user, PASSWORD, "put -p run.sh copy.sh\nmkdir tools\nchmod 700 tools", tmp_path)
    assert result.returncode == 0, result.stderr
    copy = (backend.path(user) / "copy.sh").stat()
    assert (copy.st_mode & 0o7777, int(copy.st_mtime)) == (0o750, 1_600_000_000)
    assert (backend.path(user) / "tools").stat().st_mode & 0o7777 == 0o700
    result = sftp(backend.daemon, user, PASSWORD, "chmod 600 tools", tmp_path)  # a folder keeps its search bit
    assert result.returncode != 0 and "unsupported" in result.stderr.lower(), result.stderr
