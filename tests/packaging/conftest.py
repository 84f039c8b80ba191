"""The packages under test, built once per session from this checkout."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ..helpers import ROOT

SOURCES = ["appliance", "setup.cfg", "setup.py", "pyproject.toml", "README.md", "MANIFEST.in"]


@pytest.fixture(scope="session")
def wheel(tmp_path_factory) -> Path:
    given = os.environ.get("APPLIANCE_WHEEL")
    if given:
        return Path(given)
    if not (ROOT / "appliance" / "static" / "index.html").is_file():
        pytest.fail("the UI is not built: run `make ui` first")
    # Build from a copy so the shared working tree gets no build/ or egg-info churn.
    source = tmp_path_factory.mktemp("source")
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.so"))
        elif path.exists():
            shutil.copy2(path, source / name)
    out = tmp_path_factory.mktemp("dist")
    env = dict(os.environ, PIP_CONSTRAINT=str(ROOT / "constraints.txt"))
    result = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(out), str(source)],
        capture_output=True,
        text=True,
        env=env,
        timeout=100,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (built,) = out.glob("appliance-*.whl")  # cp311-cp311-linux_<arch>: it holds a C module
    return built


@pytest.fixture(scope="session")
def deb(wheel, tmp_path_factory) -> Path:
    """`make deb`'s package, built from the wheel; APPLIANCE_DEB names an already built one."""
    given = os.environ.get("APPLIANCE_DEB")
    if given:
        return Path(given)
    out = tmp_path_factory.mktemp("deb")
    result = subprocess.run(
        [str(ROOT / "packaging" / "deb" / "build.sh"), str(wheel), str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (built,) = out.glob("appliance_*_*.deb")
    return built
