"""Killing the daemon (SIGKILL) in the middle of uploads over SFTP, FTP and HTTP
loses nothing that was finished, leaves no partial file under a real name,
and the database stays intact; the leftovers are swept at the next start.
And during a stream of small uploads: every file a client saw acknowledged is
there, whole, with its audit row, after a SIGKILL at any point of the stream."""

from __future__ import annotations

import ftplib
import hashlib
import io
import os
import signal
import socket
import sqlite3
import subprocess
import threading
from pathlib import Path

import pytest

from ..api_client import MULTIPART, multipart, signed_in
from ..frontends.sftp_client import OPTIONS, auth_options
from ..helpers import ADMIN_PASSWORD, upload_temp_files, wait_for


def test_sigkill_during_uploads_leaves_no_partial_file_and_an_intact_database(fresh_daemon, tmp_path):
    daemon = fresh_daemon
    root = daemon.source_root()
    big = tmp_path / "big.bin"
    with open(big, "wb") as f:
        f.truncate(300 * 1024 * 1024)  # sparse: cheap to make, slow enough to send
    (tmp_path / "done.txt").write_text("finished before the crash")
    env = dict(os.environ, SSHPASS=ADMIN_PASSWORD)
    ssh_options = ["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "BatchMode=no",
                   "-o", "PubkeyAuthentication=no"]  # fmt: skip
    finished = subprocess.run(
        ["sshpass", "-e", "scp", *ssh_options, "-P", str(daemon.sftp_port), str(tmp_path / "done.txt"),
         "admin@127.0.0.1:/done.txt"], env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert finished.returncode == 0, finished.stderr
    clients = [
        subprocess.Popen(
            ["sshpass", "-e", "scp", *ssh_options, "-P", str(daemon.sftp_port), str(big), "admin@127.0.0.1:/sftp.bin"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        ),
        subprocess.Popen(
            ["curl", "-sS", "--limit-rate", "20M", "-T", str(big),
             f"ftp://admin:{ADMIN_PASSWORD}@127.0.0.1:{daemon.ftp_port}/ftp.bin"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        ),
    ]  # fmt: skip
    # an HTTP upload whose body arrives slowly (the daemon holds it while it is incomplete)
    api = signed_in(daemon, "admin", ADMIN_PASSWORD)
    web = socket.create_connection(("127.0.0.1", daemon.http_port))
    web.sendall(
        b"POST /api/portal/files/upload/?path=/ HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
        + api.token.encode()
        + b"\r\nContent-Type: multipart/form-data; boundary=B\r\nContent-Length: 100000000\r\n\r\n"
        + b'--B\r\nContent-Disposition: form-data; name="file"; filename="web.bin"\r\n\r\n'
        + b"x" * 1_000_000
    )
    try:
        wait_for(lambda: len(upload_temp_files(root)) >= 2)  # SFTP and FTP uploads under way
        daemon.process.send_signal(signal.SIGKILL)
        daemon.process.wait(10)
    finally:
        for client in clients:
            client.kill()
            client.wait()
        web.close()
    # after the crash: nothing partial under a real name, the finished file intact
    assert not (root / "sftp.bin").exists() and not (root / "ftp.bin").exists() and not (root / "web.bin").exists()
    assert (root / "done.txt").read_text() == "finished before the crash"
    assert upload_temp_files(root)  # the crash left them...
    conn = sqlite3.connect(daemon.data_dir / "appliance.db")
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    daemon.process = None
    daemon.start()
    wait_for(lambda: not upload_temp_files(root), timeout=10)  # ...and the next start sweeps them
    conn = sqlite3.connect(daemon.data_dir / "appliance.db")
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    uploads = conn.execute("SELECT path FROM logs WHERE action = 'upload'").fetchall()
    assert uploads == [("/done.txt",)]  # no audit row for an upload that never finished
    assert (root / "done.txt").read_text() == "finished before the crash"


# -- a SIGKILL during a stream of small uploads ----------------------------------------------------

STREAM_FILES = 300  # per client: more than any of them sends before the kill
STREAM_SIZE = 4096


class Acknowledged:
    """The files each client saw acknowledged (SFTP: its close answered OK, FTP: 226,
    HTTP: 201), and the moment to kill: the `nth` acknowledgement seen by `client`."""

    def __init__(self, client: str, nth: int):
        self.files: dict[str, list[str]] = {"sftp": [], "ftp": [], "web": []}
        self.client, self.nth = client, nth
        self.reached = threading.Event()
        self.failures: dict[str, str] = {}  # how each client's stream ended early (the kill, expected)
        self._lock = threading.Lock()

    def add(self, client: str, name: str) -> None:
        with self._lock:
            self.files[client].append(name)
            if client == self.client and len(self.files[client]) >= self.nth:
                self.reached.set()

    def stopped(self, client: str, why: str) -> None:
        self.failures[client] = why
        if client == self.client:
            self.reached.set()  # it will acknowledge no more: do not wait for it


def small_files(folder: Path, client: str) -> dict[str, bytes]:
    """STREAM_FILES distinct files of STREAM_SIZE bytes, written to `folder` too."""
    folder.mkdir()
    files = {f"{client}-{i:04d}.bin": os.urandom(STREAM_SIZE) for i in range(STREAM_FILES)}
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return files


def openssh_sftp_stream(daemon, folder: Path, names: list[str], acks: Acknowledged) -> None:
    """One OpenSSH `sftp -b` session putting every file. The batch stops at the first
    command that fails, and sftp echoes each command before running it (stdout
    line-buffered), so the echo of the next command means the put before it ended OK.
    (Not paramiko: SFTPFile.close swallows EOFError and IOError, so put() returns even when
    the connection died before the close was answered: no proof of an acknowledgement.)"""
    batch = folder.parent / "sftp.batch"
    batch.write_text("".join(f"put {folder / name} /{name}\n" for name in names) + "pwd\n")
    argv = ["sshpass", "-e", "sftp", *OPTIONS, *auth_options(None), "-P", str(daemon.sftp_port),
            "-b", str(batch), "admin@127.0.0.1"]  # fmt: skip
    env = dict(os.environ, SSHPASS=ADMIN_PASSWORD)
    process = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1,
                               start_new_session=True)  # fmt: skip
    try:
        pending = None  # the put running now
        for line in process.stdout:
            if not line.startswith("sftp> "):
                continue
            if pending is not None:
                acks.add("sftp", pending)
            command = line.split()
            pending = Path(command[2]).name if command[1] == "put" else None
        process.wait(60)
        acks.stopped("sftp", f"sftp exited with {process.returncode}: {process.stderr.read()[-300:]}")
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        process.stdout.close()
        process.stderr.close()


def ftp_stream(daemon, files: dict[str, bytes], acks: Acknowledged) -> None:
    """ftplib STOR of every file on one control connection; storbinary returns on the 226."""
    try:
        with ftplib.FTP() as ftp:
            ftp.connect("127.0.0.1", daemon.ftp_port, timeout=30)
            ftp.login("admin", ADMIN_PASSWORD)
            for name, data in files.items():
                ftp.storbinary(f"STOR {name}", io.BytesIO(data))
                acks.add("ftp", name)
        acks.stopped("ftp", "sent every file")
    except (OSError, EOFError, ftplib.Error) as e:
        acks.stopped("ftp", repr(e))


def web_stream(daemon, files: dict[str, bytes], acks: Acknowledged) -> None:
    """One HTTP upload (POST files/upload/) per file; acknowledged by its 201."""
    try:
        api = signed_in(daemon, "admin", ADMIN_PASSWORD)
        for name, data in files.items():
            reply = api.post("files/upload/?path=/", raw=multipart(name, data), headers=MULTIPART)
            if reply.status != 201:
                acks.stopped("web", f"{reply.status} {reply.body}")
                return
            acks.add("web", name)
        acks.stopped("web", "sent every file")
    except OSError as e:  # urllib's URLError, a reset connection
        acks.stopped("web", repr(e))


def audited_uploads(daemon) -> dict[str, list[dict]]:
    """Every upload row of the audit log, read through the API: path -> rows."""
    admin = signed_in(daemon, "admin", ADMIN_PASSWORD)
    rows, page = [], 1
    while True:
        reply = admin.get(f"logs/?action=upload&page_size=200&page={page}")
        assert reply.status == 200, reply.body
        rows += reply.body["results"]
        if len(rows) >= reply.body["count"] or not reply.body["results"]:
            break
        page += 1
    by_path: dict[str, list[dict]] = {}
    for row in rows:
        by_path.setdefault(row["path"], []).append(row)
    return by_path


def database_intact(daemon) -> bool:
    conn = sqlite3.connect(daemon.data_dir / "appliance.db")
    try:
        return conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()


@pytest.mark.parametrize(
    "client, nth",
    [("sftp", 1), ("ftp", 15), ("web", 60)],
    ids=["after-the-first-sftp-file", "after-15-ftp-files", "after-60-web-files"],
)
def test_sigkill_during_a_stream_of_small_uploads_loses_no_acknowledged_file_or_audit_row(
    fresh_daemon, tmp_path, client, nth
):
    """OpenSSH sftp, ftplib and the HTTP API each upload a stream of 4 KiB files at the
    same time; the daemon is killed right after `client`'s `nth` acknowledgement. Every
    file any client saw acknowledged must come back whole with its audit row."""
    daemon = fresh_daemon
    root = daemon.source_root()
    sent = {name: small_files(tmp_path / name, name) for name in ("sftp", "ftp", "web")}
    acks = Acknowledged(client, nth)
    streams = [
        threading.Thread(target=openssh_sftp_stream, args=(daemon, tmp_path / "sftp", list(sent["sftp"]), acks)),
        threading.Thread(target=ftp_stream, args=(daemon, sent["ftp"], acks)),
        threading.Thread(target=web_stream, args=(daemon, sent["web"], acks)),
    ]
    for stream in streams:
        stream.start()
    try:
        assert acks.reached.wait(120), "the stream did not get going"
        daemon.process.send_signal(signal.SIGKILL)  # right away: the other streams are mid-file
        daemon.process.wait(10)
    finally:
        for stream in streams:
            stream.join(60)
    assert len(acks.files[client]) >= nth, f"{client} stopped before its {nth}th file: {acks.failures[client]}"
    acknowledged = {name: sent[c][name] for c, names in acks.files.items() for name in names}
    # nothing under a real name but whole files (the unacknowledged may or may not be there)
    everything = {n: d for files in sent.values() for n, d in files.items()}
    visible = {p.name: p.read_bytes() for p in root.iterdir() if p.is_file() and not p.name.startswith(".~upload-")}
    half = sorted(n for n, data in visible.items() if everything.get(n) != data)
    assert not half, f"partial or foreign files under real names: {half}"
    lost = {c: sorted(set(names) - set(visible)) for c, names in acks.files.items()}
    assert not any(lost.values()), f"acknowledged, then missing after the SIGKILL: {lost}"
    assert database_intact(daemon)

    daemon.process = None
    daemon.start()  # the same data dir
    wait_for(lambda: not upload_temp_files(root), timeout=10)  # the leftovers swept
    assert database_intact(daemon)
    audited = audited_uploads(daemon)
    unaudited = {c: sorted(n for n in names if f"/{n}" not in audited) for c, names in acks.files.items()}
    assert not any(unaudited.values()), f"acknowledged, on disk, but no audit row: {unaudited}"
    for name, data in acknowledged.items():
        assert hashlib.sha256((root / name).read_bytes()).digest() == hashlib.sha256(data).digest(), name
        rows = audited[f"/{name}"]
        assert len(rows) == 1 and rows[0]["bytes"] == len(data), (name, rows)
        assert rows[0]["protocol"] == name.split("-")[0], (name, rows)
    for path in audited:  # and no audit row names an upload that is not there whole
        name = path.lstrip("/")
        assert (root / name).is_file() and (root / name).read_bytes() == everything[name], f"{path} not whole"
