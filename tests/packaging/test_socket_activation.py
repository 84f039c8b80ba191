"""Socket activation as the installed units do it: the SFTP port is bound by the
service manager (here systemd-socket-activate, which sets LISTEN_FDS, LISTEN_PID and
LISTEN_FDNAMES exactly as systemd does for FileDescriptorName=sftp), the daemon takes
it over through the `systemd:` endpoint, and OpenSSH's sftp uploads and lists over it."""

from __future__ import annotations

import os
import subprocess

import pytest

from ..helpers import ADMIN_PASSWORD, APPLIANCE, free_port, make_daemon, wait_for_port

pytestmark = pytest.mark.requires("systemd-socket-activate")
SSH_OPTIONS = ["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "BatchMode=no",
               "-o", "PubkeyAuthentication=no"]  # fmt: skip


@pytest.mark.parametrize("endpoint", ["systemd:domain=INET:name=sftp", "systemd:domain=INET:index=0"])
def test_sftp_on_a_socket_passed_by_the_service_manager(tmp_path, endpoint):
    daemon = make_daemon(tmp_path, start=False)
    port = free_port()
    log = open(tmp_path / "daemon.log", "wb")
    manager = subprocess.Popen(
        ["systemd-socket-activate", "--listen", f"127.0.0.1:{port}", "--fdname=sftp", "--"]
        + APPLIANCE
        + ["serve", "--data-dir", str(daemon.data_dir), "--sftp", endpoint]
        + [
            "--http",
            f"tcp:{daemon.http_port}:interface=127.0.0.1",
            "--ftp",
            f"tcp:{daemon.ftp_port}:interface=127.0.0.1",
            "--ops",
            f"tcp:{daemon.ops_port}:interface=127.0.0.1",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=daemon.env,
        cwd=tmp_path,
    )
    try:
        # The port is the manager's from the start; the daemon is started by the first connection.
        wait_for_port(port, manager)
        (tmp_path / "hello.txt").write_text("over an inherited socket\n")
        batch = tmp_path / "batch"
        batch.write_text(f"put {tmp_path / 'hello.txt'} /hello.txt\nls -l /\n")
        result = subprocess.run(
            ["sshpass", "-e", "sftp", *SSH_OPTIONS, "-P", str(port), "-b", str(batch), "admin@127.0.0.1"],
            env=dict(os.environ, SSHPASS=ADMIN_PASSWORD),
            capture_output=True,
            text=True,
            timeout=90,
        )
        output = (tmp_path / "daemon.log").read_text(errors="replace")
        assert result.returncode == 0, result.stderr + "\n--- daemon:\n" + output
        assert "hello.txt" in result.stdout
        assert (daemon.home("admin") / "hello.txt").read_text() == "over an inherited socket\n"
        # The same process serves the other listeners it bound itself.
        wait_for_port(daemon.http_port, manager)
    finally:
        manager.terminate()
        try:
            manager.wait(15)
        except subprocess.TimeoutExpired:
            manager.kill()
            manager.wait()
        log.close()
    assert "Traceback" not in (tmp_path / "daemon.log").read_text(errors="replace")
