"""Killing the daemon (SIGKILL) in the middle of uploads over SFTP, FTP and HTTP
loses nothing that was finished, leaves no partial file under a real name,
and the database stays intact; the leftovers are swept at the next start."""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess

from ..api_client import signed_in
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
