"""Remote SFTP sources end to end: a real OpenSSH sshd started here on 127.0.0.1
(its own config, host key and authorized key for the current user), a source
made through the admin API (with [sources] allow_loopback on), a profile on it,
and OpenSSH's sftp against the appliance. The round trips by FTP and HTTP and the
quota run over every backend in test_backends.py."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time

import pytest

from ..api_client import signed_in
from ..frontends.sftp_client import OPTIONS, auth_options, sftp, sha256
from ..helpers import ADMIN_PASSWORD, daemon_with, free_port
from .sources import SSHD, RemoteServer

pytestmark = pytest.mark.requires(SSHD)


@pytest.fixture(scope="module")
def gateway(daemon_factory):
    return daemon_factory(sources__allow_loopback=True)


def source_body(remote: RemoteServer, name: str, **config) -> dict:
    body = {
        "host": "127.0.0.1",
        "port": remote.port,
        "username": remote.user,
        "private_key": remote.client_key.read_text(),
        "path": str(remote.files),
    }
    body.update(config)
    return {"name": name, "type": "sftp", "config": body}


@pytest.fixture(scope="module")
def source(gateway, remote):
    admin = signed_in(gateway, "admin", ADMIN_PASSWORD)
    created = admin.post("sources/", source_body(remote, "Legacy host"))
    assert created.status == 201, created.body
    return created.body


def make_user(gateway, source: dict, username: str) -> None:
    admin = signed_in(gateway, "admin", ADMIN_PASSWORD)
    reply = admin.post(
        "profiles/",
        {"username": username, "email": f"{username}@example.com", "password": "remote-password-1",
         "source": source["id"], "protocols": ["sftp", "ftp", "web"],
         "permissions": ["list", "download", "upload", "overwrite", "delete", "rename", "mkdir"]},
    )  # fmt: skip
    assert reply.status == 201, reply.body


def test_the_source_is_created_checked_and_pinned_with_its_secrets_hidden(gateway, remote, source):
    assert source["type"] == "sftp" and source["status"] == "ok", source
    config = source["config"]
    assert config["host_key_fingerprint"] == remote.fingerprint()
    assert config["has_private_key"] and not config["has_password"]
    assert "private_key" not in config and "private_key_encrypted" not in config
    stored = gateway.query("SELECT config FROM sources WHERE id=?", source["id"])[0][0]
    assert "PRIVATE KEY" not in stored and "private_key_encrypted" in stored  # encrypted at rest
    admin = signed_in(gateway, "admin", ADMIN_PASSWORD)
    checked = admin.post(f"sources/{source['id']}/check/")
    assert checked.status == 200 and checked.body["status"] == "ok", checked.body


def test_round_trip_over_sftp(gateway, remote, source, tmp_path):
    make_user(gateway, source, "gw")
    payload = tmp_path / "payload.bin"
    payload.write_bytes(os.urandom(3 * 1024 * 1024 + 12345))
    result = sftp(
        gateway, "gw", "remote-password-1",
        "mkdir docs\nput payload.bin docs/payload.bin\nls -l docs\nrename docs/payload.bin docs/moved.bin\n"
        "get docs/moved.bin back.bin\nls docs",
        tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "payload.bin" in result.stdout and "moved.bin" in result.stdout
    on_remote = remote.files / "gw" / "docs" / "moved.bin"
    assert sha256(on_remote) == sha256(payload) == sha256(tmp_path / "back.bin")
    assert not (remote.files / "gw" / "docs" / "payload.bin").exists()
    # overwrite by rename, delete, rmdir
    (tmp_path / "small.txt").write_text("small")
    result = sftp(
        gateway, "gw", "remote-password-1",
        "put small.txt docs/small.txt\nrm docs/moved.bin\nrm docs/small.txt\nrmdir docs",
        tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert not (remote.files / "gw" / "docs").exists()
    actions = [row["action"] for row in gateway.logs() if row["username"] == "gw"]
    assert {"upload", "download", "mkdir", "rename", "delete"} <= set(actions), actions
    assert not [p for p in (remote.files / "gw").rglob("*") if p.name.startswith(".")]  # no temporary names left


def test_a_path_escape_is_refused(gateway, remote, source, tmp_path):
    make_user(gateway, source, "jailed")
    (remote.files / "secret.txt").write_text("not yours")
    result = sftp(gateway, "jailed", "remote-password-1", "get ../secret.txt got.txt", tmp_path)
    assert result.returncode != 0
    assert not (tmp_path / "got.txt").exists()
    result = sftp(gateway, "jailed", "remote-password-1", "get /../secret.txt got.txt", tmp_path)
    assert not (tmp_path / "got.txt").exists()


def start_big_upload(gateway, remote, source, username: str, tmp_path):
    """A 64 MiB `put` by OpenSSH's sftp, under way: (the client, the user's remote
    home, the upload's temporary file once it has grown)."""
    make_user(gateway, source, username)
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(64 * 1024 * 1024))
    batch = tmp_path / "batch.txt"
    batch.write_text("put big.bin big.bin\n")
    env = dict(os.environ, SSHPASS="remote-password-1")
    client = subprocess.Popen(
        ["sshpass", "-e", "sftp", *OPTIONS, *auth_options(None), "-P", str(gateway.sftp_port), "-b", str(batch),
         f"{username}@127.0.0.1"],
        env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    home = remote.files / username
    deadline = time.monotonic() + 30
    temps: list = []
    while time.monotonic() < deadline and not temps:  # wait until the upload's temporary file grows
        if home.is_dir():
            temps = [p for p in home.iterdir() if p.name.startswith(".~upload-") and p.stat().st_size > 0]
        time.sleep(0.05)
    if not temps:
        os.killpg(client.pid, signal.SIGKILL)
        client.wait()
    assert temps, "the upload never started on the remote server"
    return client, home, temps[0]


def test_an_interrupted_upload_leaves_nothing_under_its_name(gateway, remote, source, tmp_path):
    client, home, _ = start_big_upload(gateway, remote, source, "cutoff", tmp_path)
    os.killpg(client.pid, signal.SIGKILL)
    client.wait()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and any(home.iterdir()):
        time.sleep(0.1)
    assert not (home / "big.bin").exists()
    assert list(home.iterdir()) == []  # the temporary upload was removed too


def test_bad_credentials_and_missing_folders_are_refused_at_creation(gateway, remote, source, tmp_path):
    admin = signed_in(gateway, "admin", ADMIN_PASSWORD)
    other = tmp_path / "other_key"
    RemoteServer.keygen(other)
    reply = admin.post("sources/", source_body(remote, "Wrong key", private_key=other.read_text()))
    assert reply.status == 400, reply.body
    assert "refused to sign in" in reply.body["config"][0] and remote.user in reply.body["config"][0]
    reply = admin.post("sources/", source_body(remote, "No folder", path=str(remote.files / "missing")))
    assert reply.status == 400 and "does not exist" in reply.body["config"][0], reply.body
    reply = admin.post("sources/", source_body(remote, "Closed", port=free_port()))
    assert reply.status == 400 and "No SSH server answered" in reply.body["config"][0], reply.body
    reply = admin.post("sources/", source_body(remote, "Nowhere", host="no-such-host.invalid"))
    assert reply.status == 400 and "Cannot resolve" in reply.body["config"][0], reply.body
    reply = admin.post("sources/", source_body(remote, "Metadata", host="169.254.169.254"))
    assert reply.status == 400 and "metadata" in reply.body["config"][0], reply.body
    names = {s["name"] for s in admin.get("sources/").body["results"]}
    assert not names & {"Wrong key", "No folder", "Closed", "Nowhere", "Metadata"}


@pytest.mark.parametrize("field", ["host", "username", "password", "path"])
def test_control_characters_in_what_reaches_the_remote_are_refused(gateway, remote, field):
    admin = signed_in(gateway, "admin", ADMIN_PASSWORD)
    reply = admin.post("sources/", source_body(remote, f"Injected {field}", **{field: "files\r\nrm -rf /\x00"}))
    assert reply.status == 400, reply.body
    assert any(f"config.{field} holds a control character" in m for m in reply.body["config"]), reply.body


def test_a_changed_remote_host_key_is_refused_with_both_fingerprints(gateway, remote, source, tmp_path):
    make_user(gateway, source, "rekeyed")
    pinned = source["config"]["host_key_fingerprint"]
    remote.stop()
    remote.keygen(remote.host_key)
    remote.start()
    try:
        new = remote.fingerprint()
        assert new != pinned
        admin = signed_in(gateway, "admin", ADMIN_PASSWORD)
        checked = admin.post(f"sources/{source['id']}/check/").body
        assert checked["status"] == "error"
        assert pinned in checked["last_error"] and new in checked["last_error"], checked
        assert "has changed" in checked["last_error"]
        (tmp_path / "x.txt").write_text("x")
        result = sftp(gateway, "rekeyed", "remote-password-1", "put x.txt x.txt", tmp_path)
        assert result.returncode != 0
        assert "has changed" in result.stderr + result.stdout, (result.stdout, result.stderr)
        assert not (remote.files / "rekeyed" / "x.txt").exists()
    finally:
        # the admin confirms the new key: the source works again, on new connections
        admin = signed_in(gateway, "admin", ADMIN_PASSWORD)
        reply = admin.patch(f"sources/{source['id']}/", {"config": {"host_key_fingerprint": remote.fingerprint()}})
        assert reply.status == 200 and reply.body["status"] == "ok", reply.body
    result = sftp(gateway, "rekeyed", "remote-password-1", "put x.txt x.txt", tmp_path)
    assert result.returncode == 0, result.stderr
    assert (remote.files / "rekeyed" / "x.txt").read_text() == "x"


def test_the_pool_reconnects_after_the_remote_drops_its_connections(gateway, remote, source, tmp_path):
    make_user(gateway, source, "dropped")
    (tmp_path / "a.txt").write_text("before")
    assert sftp(gateway, "dropped", "remote-password-1", "put a.txt a.txt", tmp_path).returncode == 0
    remote.stop()  # every connection of the pool goes with it
    remote.start()
    (tmp_path / "b.txt").write_text("after")
    result = sftp(gateway, "dropped", "remote-password-1", "put b.txt b.txt\nget a.txt back.txt", tmp_path)
    assert result.returncode == 0, result.stderr
    assert (remote.files / "dropped" / "b.txt").read_text() == "after"
    assert (tmp_path / "back.txt").read_text() == "before"


def test_a_restart_sweeps_what_a_killed_daemon_left_on_the_remote(gateway, remote, source, tmp_path):
    client, home, temp = start_big_upload(gateway, remote, source, "crashed", tmp_path)
    deadline = time.monotonic() + 30
    temps = [temp]
    try:
        gateway.stop(kill=True)  # the daemon dies mid-upload: its temporary file stays on the remote
        assert temps[0].exists()
        # the remote's sftp-server may still write what it had queued: wait until it is done
        last, steady_since = None, time.monotonic()
        while time.monotonic() - steady_since < 1 and time.monotonic() < deadline + 30:
            seen = temps[0].stat()
            if (seen.st_size, seen.st_mtime_ns) != last:
                last, steady_since = (seen.st_size, seen.st_mtime_ns), time.monotonic()
            time.sleep(0.1)
        hours_ago = time.time() - 2 * 3600
        os.utime(temps[0], (hours_ago, hours_ago))  # as if the crash was two hours before this start
        sub = home / "deep" / "er"
        sub.mkdir(parents=True)
        old_nested = sub / ".~upload-0123456789abcdef"
        fresh = sub / ".~upload-fedcba9876543210"  # an upload that could still be running elsewhere
        partial = sub / ".~upload-tus-0123"  # a resumable upload's partial file outlives restarts
        normal = sub / "report.txt"
        for path in (old_nested, fresh, partial, normal):
            path.write_bytes(b"x" * 10)
        for path in (old_nested, partial, normal):
            os.utime(path, (hours_ago, hours_ago))
    finally:
        os.killpg(client.pid, signal.SIGKILL)
        client.wait()
        if gateway.process is None:
            gateway.start()  # the sweep runs now; the next tests want the daemon running, whatever happened
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and "unfinished uploads left in Legacy host" not in gateway.output():
        time.sleep(0.1)
    output = gateway.output()
    assert "removed 2 unfinished uploads left in Legacy host" in output, output[-3000:]
    assert not temps[0].exists() and not old_nested.exists()
    assert fresh.exists() and partial.exists() and normal.read_bytes() == b"x" * 10
    assert not (home / "big.bin").exists()


class Listener:
    """A port on 127.0.0.1 in one state: "closed" (bound, not listening: refused), "closing"
    (accepts and closes at once) or "http" (another service: answers a line, then closes)."""

    def __init__(self, state: str):
        self.state = state
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        if state != "closed":
            self.sock.listen(8)
            threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                if self.state == "http":
                    conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")

    def close(self) -> None:
        self.sock.close()


def test_a_source_check_tells_no_port_state_on_the_appliances_networks_and_is_counted(tmp_path_factory, remote):
    """Closed, closing and another service answer one message (a check is no port scanner
    of the appliance's networks); an SSH server is still told as one (its sign-in refused);
    the organisation's checks that reach no server are counted, then refused for a while."""
    daemon = daemon_with(tmp_path_factory, sources__allow_loopback=True)
    listeners = [Listener(state) for state in ("closed", "closing", "http")]
    try:
        admin = signed_in(daemon, "admin", ADMIN_PASSWORD)
        answers = set()
        for listener in listeners:
            reply = admin.post("sources/", source_body(remote, f"Probe {listener.state}", port=listener.port))
            assert reply.status == 400, (listener.state, reply.body)
            answers.add(reply.body["config"][0].replace(str(listener.port), "PORT"))
        assert len(answers) == 1 and "No SSH server answered" in answers.pop()
        reply = admin.post("sources/", source_body(remote, "Wrong user", username="nobody-here"))
        assert reply.status == 400 and "refused to sign in" in reply.body["config"][0], reply.body
        for n in range(len(listeners), 20):  # 20 an hour reach no server
            reply = admin.post("sources/", source_body(remote, f"Probe {n}", port=listeners[0].port))
            assert reply.status == 400, (n, reply.body)
        reply = admin.post("sources/", source_body(remote, "One more", port=listeners[1].port))
        assert reply.status == 429 and "Too many checks of remote sources" in reply.body["detail"], reply.body
        assert int(reply.headers["retry-after"]) > 0
    finally:
        for listener in listeners:
            listener.close()
        daemon.stop()
