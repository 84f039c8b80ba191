"""HTTPS with the appliance's TLS: the generated certificate, modern TLS only,
and a configured certificate used as it is."""

from __future__ import annotations

import subprocess

import pytest

from appliance.core.tls import self_signed

from ..helpers import daemon_with


@pytest.fixture
def https_daemon(tmp_path):
    daemon = daemon_with(tmp_path, https=True)
    yield daemon
    daemon.stop()


def curl(port: int, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["curl", "-sS", "--max-time", "10", *extra, f"https://localhost:{port}/api/portal/initialized/"],
        capture_output=True,
        text=True,
    )


def test_https_serves_with_the_generated_certificate(https_daemon):
    cert = https_daemon.data_dir / "tls" / "cert.pem"
    assert oct((https_daemon.data_dir / "tls" / "key.pem").stat().st_mode & 0o777) == "0o600"
    trusted = curl(https_daemon.https_port, "--cacert", str(cert))
    assert trusted.returncode == 0, trusted.stderr
    assert trusted.stdout == '{"initialized": true}'
    # without trusting it, a client refuses the self-signed certificate
    assert curl(https_daemon.https_port).returncode == 60


def test_old_tls_and_weak_ciphers_are_refused(https_daemon):
    port = https_daemon.https_port
    assert curl(port, "-k", "--tlsv1.1", "--tls-max", "1.1").returncode != 0
    assert curl(port, "-k", "--tlsv1.2", "--tls-max", "1.2").returncode == 0
    assert curl(port, "-k", "--tlsv1.3").returncode == 0
    cbc = subprocess.run(
        ["openssl", "s_client", "-connect", f"127.0.0.1:{port}", "-tls1_2", "-cipher", "ECDHE-ECDSA-AES128-SHA"],
        input="",
        capture_output=True,
        text=True,
        timeout=10,
    )
    assert "Cipher is (NONE)" in cbc.stdout or cbc.returncode != 0


def test_a_configured_certificate_is_used_as_is(tmp_path):
    certificate, key = self_signed("files.example.com")
    (tmp_path / "mine.pem").write_bytes(certificate)
    (tmp_path / "mine.key").write_bytes(key)
    daemon = daemon_with(
        tmp_path, https=True, tls__certificate=tmp_path / "mine.pem", tls__private_key=tmp_path / "mine.key"
    )
    port = daemon.https_port
    try:
        shown = subprocess.run(
            ["openssl", "s_client", "-connect", f"127.0.0.1:{port}", "-servername", "files.example.com"],
            input="",
            capture_output=True,
            text=True,
            timeout=10,
        )
        assert "CN = files.example.com" in shown.stdout
        ok = subprocess.run(
            [
                "curl",
                "-sS",
                "--cacert",
                str(tmp_path / "mine.pem"),
                "--resolve",
                f"files.example.com:{port}:127.0.0.1",
                f"https://files.example.com:{port}/api/portal/initialized/",
            ],
            capture_output=True,
            text=True,
        )
        assert ok.stdout == '{"initialized": true}', ok.stderr
    finally:
        daemon.stop()


def test_plain_http_redirects_to_https_but_health_checks_answer(https_daemon):
    http, https = https_daemon.http_port, https_daemon.https_port

    def head(path: str, *extra: str) -> dict:
        run = subprocess.run(
            ["curl", "-sS", "--max-time", "10", "-o", "/dev/null", "-D", "-", *extra, f"http://127.0.0.1:{http}{path}"],
            capture_output=True,
            text=True,
        )
        lines = run.stdout.splitlines()
        headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if ":" in line)}
        return {"status": int(lines[0].split()[1]), **headers}

    got = head("/api/portal/initialized/?x=1")
    assert got["status"] == 308  # keeps the method and body: a POST of a password is never replayed in clear
    assert got["location"] == f"https://127.0.0.1:{https}/api/portal/initialized/?x=1"
    assert head("/api/portal/token/", "-X", "POST", "-d", "{}")["status"] == 308
    assert head("/fileviewer")["location"] == f"https://127.0.0.1:{https}/fileviewer"
    # a forged Host header cannot send the browser elsewhere, nor can a scheme-relative path
    assert head("/", "-H", "Host: evil.example/x?")["location"] == f"https://127.0.0.1:{https}/"
    # nor a well-formed one: the redirect always names [server] public_hostname
    assert head("/api/portal/initialized/", "-H", "Host: evil.example")["location"] == (
        f"https://127.0.0.1:{https}/api/portal/initialized/"
    )
    assert head("/metrics")["status"] == 404  # on the ops listener only
    assert head("//evil.example/")["location"] == f"https://127.0.0.1:{https}/"
    assert head("/healthz")["status"] == 200
    # a client that follows it arrives
    cert = https_daemon.data_dir / "tls" / "cert.pem"
    followed = subprocess.run(
        ["curl", "-sS", "-L", "--cacert", str(cert), f"http://localhost:{http}/api/portal/initialized/"],
        capture_output=True,
        text=True,
    )
    assert followed.stdout == '{"initialized": true}', followed.stderr
