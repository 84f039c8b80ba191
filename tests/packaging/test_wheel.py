"""The wheel (`make dist`) carries the built console: installed into a fresh venv,
its `appliance` command sets up a data dir and serves index.html and a hashed asset.

The fresh venv gets the wheel and only the dependencies it declares (from PyPI or
pip's cache, at the versions constraints.txt pins), so an import the wheel does not
declare fails here.
The wheel is built by conftest.py (or given by APPLIANCE_WHEEL)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import urllib.request
import zipfile
from pathlib import Path

import pytest

from ..helpers import ADMIN_PASSWORD, ROOT, free_port, wait_for_port

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    """A fresh venv with the wheel and the dependencies it declares, at the pinned versions."""
    root = tmp_path_factory.mktemp("venv") / "v"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=60)
    pip = [sys.executable, "-m", "pip", "--python", str(root / "bin" / "python")]
    install = subprocess.run(
        [*pip, "install", "--quiet", "--constraint", str(ROOT / "constraints.txt"), str(wheel)],
        capture_output=True,
        text=True,
        timeout=100,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    check = subprocess.run([*pip, "check"], capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr
    return root


def test_the_wheel_holds_the_console(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert "appliance/static/index.html" in names
    assert any(re.fullmatch(r"appliance/static/[\w-]+\.[0-9a-f]{8}\.js", name) for name in names), names
    assert "appliance/cli.py" in names
    # the C module (setup.py): built for this Python, the wheel tagged for it
    assert any(re.fullmatch(r"appliance/storage/local/_fast\.cpython-\d+-[\w-]+\.so", name) for name in names), names
    assert re.fullmatch(r"appliance-[\w.]+-cp3\d+-cp3\d+-linux_\w+\.whl", wheel.name), wheel.name
    assert "appliance/storage/local/_fast.c" not in names
    assert not any(name.startswith(("tests/", "ui/", "bench/")) for name in names)


def test_the_installed_wheel_serves_the_console(venv, tmp_path):
    appliance = venv / "bin" / "appliance"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("APPLIANCE_", "PYTHON"))}
    env["APPLIANCE_SECURITY_BCRYPT_ROUNDS"] = "4"
    # The code run is the wheel's copy, not this checkout's; its C module loads.
    probe = (
        "import appliance; from appliance.storage.local import tree; print(appliance.__file__); print(tree.lstat_files)"
    )
    where, native = subprocess.run(
        [str(venv / "bin" / "python"), "-c", probe],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        cwd=tmp_path,
    ).stdout.splitlines()
    assert where.startswith(str(venv)), where
    assert native == "<built-in function lstat_files>", native

    data = tmp_path / "data"
    subprocess.run(
        [str(appliance), "setup", "--data-dir", str(data), "--org", "Acme", "--username", "admin"]
        + ["--email", "admin@example.com", "--password-stdin"],
        input=ADMIN_PASSWORD + "\n",
        text=True,
        check=True,
        capture_output=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    http, sftp, ftp, ops = free_port(), free_port(), free_port(), free_port()
    log = open(tmp_path / "daemon.log", "wb")
    process = subprocess.Popen(
        [str(appliance), "serve", "--data-dir", str(data), "--http", f"tcp:{http}:interface=127.0.0.1"]
        + ["--sftp", f"tcp:{sftp}:interface=127.0.0.1", "--ftp", f"tcp:{ftp}:interface=127.0.0.1"]
        + ["--ops", f"tcp:{ops}:interface=127.0.0.1"],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        cwd=tmp_path,
    )
    try:
        try:
            wait_for_port(http, process)
        except Exception:
            pytest.fail("the installed daemon did not start:\n" + (tmp_path / "daemon.log").read_text())
        with urllib.request.urlopen(f"http://127.0.0.1:{http}/", timeout=10) as response:
            assert response.status == 200
            index = response.read().decode()
        assert "<html" in index.lower()
        assets = re.findall(r'(?:src|href)="?/?([\w-]+\.[0-9a-f]{8}\.(?:js|css))', index)
        assert assets, index
        with urllib.request.urlopen(f"http://127.0.0.1:{http}/{assets[0]}", timeout=10) as response:
            assert response.status == 200
            body = response.read()
        assert body == (Path(where).parent / "static" / assets[0]).read_bytes()
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
