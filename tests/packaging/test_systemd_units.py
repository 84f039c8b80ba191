"""The systemd units: valid for systemd-analyze, hardened, and socket-activated."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from ..helpers import ROOT

UNITS = [
    "appliance.service",
    "appliance-sftp.socket",
    "appliance-ftp.socket",
    "appliance-http.socket",
    "appliance-https.socket",
]
pytestmark = pytest.mark.requires("systemd-analyze")


@pytest.fixture
def units(tmp_path) -> Path:
    """The units with the install path pointed at this checkout's venv (which exists here)."""
    appliance = Path(sys.executable).with_name("appliance")
    for name in UNITS:
        text = (ROOT / "systemd" / name).read_text().replace("/opt/appliance/venv/bin/appliance", str(appliance))
        (tmp_path / name).write_text(text)
    return tmp_path


def test_units_verify(units):
    result = subprocess.run(
        ["systemd-analyze", "verify", *UNITS], cwd=units, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""


def test_the_service_is_hardened(units):
    result = subprocess.run(
        ["systemd-analyze", "security", "--offline=yes", str(units / "appliance.service")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    exposure = float(re.search(r"Overall exposure level for appliance.service: ([\d.]+)", result.stdout).group(1))
    assert exposure <= 2.0, result.stdout
    service = (units / "appliance.service").read_text()
    for setting in (
        "Type=notify",
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
        "PrivateTmp=yes",
        "ProtectHome=yes",
        "CapabilityBoundingSet=\n",
        "Restart=on-failure",
        "User=appliance",
    ):
        assert setting in service


def test_each_socket_names_its_descriptor(units):
    for name, ports in (("sftp", ["22"]), ("ftp", ["21"]), ("http", ["80"]), ("https", ["443"])):
        text = (units / f"appliance-{name}.socket").read_text()
        assert f"FileDescriptorName={name}" in text
        assert re.findall(r"ListenStream=(\d+)", text) == ports
