"""Operations endpoints of the live daemon: health, readiness, metrics."""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.error
import urllib.request

from appliance.config import load

from ..helpers import ADMIN_PASSWORD


def get(daemon, path: str, public: bool = False) -> tuple[int, bytes]:
    """GET from the ops listener, or with `public` from the public HTTP listener."""
    port = daemon.http_port if public else daemon.ops_port
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as reply:
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
    # the public listener says only that: no organisation, no source
    assert get(fresh_daemon, "/readyz", public=True) == (503, b'{"status": "failing"}')


def test_the_public_listener_tells_anyone_only_whether_it_is_alive_and_ready(fresh_daemon):
    fresh_daemon.add_organisation("Secret Tenant")
    assert get(fresh_daemon, "/healthz", public=True) == (200, b'{"status": "ok"}')
    assert get(fresh_daemon, "/readyz", public=True) == (200, b'{"status": "ok"}')
    status, body = get(fresh_daemon, "/metrics", public=True)
    assert status == 404 and b"appliance_" not in body
    status, body = get(fresh_daemon, "/readyz")  # the ops listener names them
    assert status == 200 and b"Default" in body and b"organisation 2" in body
    assert get(fresh_daemon, "/metrics")[0] == 200
    assert get(fresh_daemon, "/no/such/thing")[0] == 404


def test_the_ops_listener_is_loopback_only_by_default():
    settings = load(environ={})
    assert settings.listen.ops == ["tcp:9180:interface=127.0.0.1"]


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


def test_the_daemon_freezes_its_start_up_heap_out_of_full_collections(fresh_daemon):
    # a full garbage collection otherwise goes over every object of the start-up heap
    # (~80,000), holding the GIL for tens of milliseconds: cli.freeze_start_up_heap
    status, body = get(fresh_daemon, "/metrics")
    assert status == 200
    frozen = [line for line in body.decode().splitlines() if line.startswith("appliance_gc_frozen_objects ")]
    assert len(frozen) == 1 and float(frozen[0].split()[1]) > 10_000, frozen
