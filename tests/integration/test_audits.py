"""Outside auditors against the live daemon: ssh-audit on the SFTP listener and
sslyze on HTTPS (and on FTPS, through its STARTTLS). They run from their own venv
(`make tools`: sslyze pins an older cryptography than the product's)."""

from __future__ import annotations

import json
import subprocess

import pytest

from ..helpers import ROOT

TOOLS = ROOT / ".venv-tools" / "bin"
# The only protocol versions and key exchange a modern client needs.
WEAK_PROTOCOLS = ("ssl_2_0", "ssl_3_0", "tls_1_0", "tls_1_1")
GOOD_CURVES = {"X25519", "secp256r1", "secp384r1"}
SCANS = ("--sslv2", "--sslv3", "--tlsv1", "--tlsv1_1", "--tlsv1_2", "--tlsv1_3", "--compression", "--openssl_ccs",
         "--fallback", "--heartbleed", "--robot", "--reneg", "--elliptic_curves")  # fmt: skip


@pytest.fixture(scope="module")
def audited(daemon_factory):
    if not (TOOLS / "sslyze").exists():
        pytest.fail("the auditors are missing: run `make tools` (make test does)")
    return daemon_factory(https=True)


def test_ssh_audit_finds_no_failure(audited):
    run = subprocess.run(
        [TOOLS / "ssh-audit", "--json", "--timeout", "10", "-p", str(audited.sftp_port), "127.0.0.1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    report = json.loads(run.stdout)
    failures = {
        f"{kind}: {entry['algorithm']}": entry["notes"]["fail"]
        for kind in ("kex", "key", "enc", "mac")
        for entry in report[kind]
        if entry.get("notes", {}).get("fail")
    }
    assert failures == {}
    assert report["cves"] == []
    assert report["compression"] == ["none"]
    # what is offered at all: only modern algorithms (ssh-audit's warnings are about
    # curve25519 lacking a post-quantum hybrid for old clients and about encrypt-and-MAC)
    offered = {entry["algorithm"] for kind in ("kex", "key", "enc", "mac") for entry in report[kind]}
    assert "mlkem768x25519-sha256" in offered
    # strict key exchange (Terrapin, CVE-2023-48795) is offered, and AES-GCM is the only cipher
    assert "kex-strict-s-v00@openssh.com" in {entry["algorithm"] for entry in report["kex"]}
    assert {entry["algorithm"] for entry in report["enc"]} == {"aes128-gcm@openssh.com", "aes256-gcm@openssh.com"}
    assert not [a for a in offered if any(weak in a for weak in ("sha1", "md5", "cbc", "3des", "nistp", "dss"))]
    # ssh-audit's exit status is 3 when it found a failure (2: warnings only)
    assert run.returncode in (0, 1, 2), run.stdout


def sslyze(target: str, *options: str, tmp_path) -> dict:
    out = tmp_path / "sslyze.json"
    run = subprocess.run(
        [TOOLS / "sslyze", *SCANS, *options, f"--json_out={out}", target], capture_output=True, text=True, timeout=300
    )
    report = json.loads(out.read_text())
    [server] = report["server_scan_results"]
    assert server["connectivity_status"] == "COMPLETED", run.stdout + run.stderr
    return server["scan_result"]


def assert_modern_tls(result: dict) -> None:
    """No old protocol, only forward-secret AEAD suites, no weak group, no known attack."""
    for version in WEAK_PROTOCOLS:
        assert result[f"{version}_cipher_suites"]["result"]["accepted_cipher_suites"] == [], version
    accepted = [
        suite["cipher_suite"]["name"]
        for version in ("tls_1_2", "tls_1_3")
        for suite in result[f"{version}_cipher_suites"]["result"]["accepted_cipher_suites"]
    ]
    assert accepted, "no TLS 1.2/1.3 suite accepted"
    for name in accepted:
        assert name.startswith("TLS_ECDHE_") or not name.startswith("TLS_RSA_"), name  # forward secrecy
        assert "GCM" in name or "CHACHA20_POLY1305" in name, name  # AEAD only
    assert result["tls_1_3_cipher_suites"]["result"]["accepted_cipher_suites"], "TLS 1.3 is offered"
    curves = {c["name"] for c in result["elliptic_curves"]["result"]["supported_curves"]}
    assert curves and curves <= GOOD_CURVES, curves
    assert result["tls_compression"]["result"]["supports_compression"] is False
    assert result["heartbleed"]["result"]["is_vulnerable_to_heartbleed"] is False
    assert result["openssl_ccs_injection"]["result"]["is_vulnerable_to_ccs_injection"] is False
    assert result["robot"]["result"]["robot_result"].startswith("NOT_VULNERABLE")
    assert result["session_renegotiation"]["result"]["is_vulnerable_to_client_renegotiation_dos"] is False
    assert result["tls_fallback_scsv"]["result"]["supports_fallback_scsv"] is True


def test_sslyze_https(audited, tmp_path):
    result = sslyze(f"127.0.0.1:{audited.https_port}", "--http_headers", tmp_path=tmp_path)
    assert_modern_tls(result)
    headers = result["http_headers"]["result"]
    assert headers["strict_transport_security_header"]["max_age"] >= 31536000


def test_sslyze_ftps(audited, tmp_path):
    result = sslyze(f"127.0.0.1:{audited.ftp_port}", "--starttls", "ftp", tmp_path=tmp_path)
    assert_modern_tls(result)
