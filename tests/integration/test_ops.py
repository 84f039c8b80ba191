"""Operations endpoints of the live daemon: health, readiness, metrics."""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.error
import urllib.request

from ..helpers import ADMIN_PASSWORD


def get(daemon, path: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{daemon.http_port}{path}", timeout=10) as reply:
            return reply.status, reply.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def test_health_and_readiness(fresh_daemon):
    assert get(fresh_daemon, "/healthz") == (200, b'{"status": "ok"}')
    status, body = get(fresh_daemon, "/readyz")
    assert status == 200 and json.loads(body)["status"] == "ok"
    # a source whose folder disappears makes the appliance not ready, and says which
    shutil.rmtree(fresh_daemon.source_root())
    status, body = get(fresh_daemon, "/readyz")
    report = json.loads(body)
    assert status == 503 and report["status"] == "failing"
    assert any("Default" in name and problem == "folder missing" for name, problem in report["checks"].items())


def test_metrics_count_what_happens(fresh_daemon):
    # a failed FTP sign-in and a successful one with an upload, through a real client
    subprocess.run(["curl", "-sS", f"ftp://admin:wrong@127.0.0.1:{fresh_daemon.ftp_port}/"], capture_output=True)
    payload = fresh_daemon.data_dir.parent / "payload.bin"
    payload.write_bytes(b"m" * 12345)
    upload = subprocess.run(
        ["curl", "-sS", "-T", str(payload), f"ftp://admin:{ADMIN_PASSWORD}@127.0.0.1:{fresh_daemon.ftp_port}/m.bin"],
        capture_output=True,
        text=True,
    )
    assert upload.returncode == 0, upload.stderr
    status, body = get(fresh_daemon, "/metrics")
    text = body.decode()
    assert status == 200
    assert 'appliance_login_failures_total{protocol="ftp"} 1.0' in text
    assert 'appliance_transfers_total{direction="upload",protocol="ftp"} 1.0' in text
    assert 'appliance_transfer_bytes_total{direction="upload",protocol="ftp"} 12345.0' in text
    assert 'appliance_sessions{protocol="sftp"} 0.0' in text
