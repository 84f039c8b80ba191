"""The packages under test, built once per session from this checkout."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ..helpers import ROOT, missing

# The Debian release the .deb is for, as debootstrap makes it (minbase, with the package's
# dependencies): test_chroot.py installs into it, test_as_shipped.py boots it
SUITE = "bookworm"
INCLUDE = "python3.11,systemd,ca-certificates"
# setpriv execs (runuser forks, and LISTEN_PID would no longer be the daemon's)
AS_APPLIANCE = ["setpriv", "--reuid=appliance", "--regid=appliance", "--init-groups", "--"]
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


def base_tarball() -> Path:
    """The base system, made once with debootstrap (a minute or two, from Debian's mirror)
    and kept as a tarball in APPLIANCE_CHROOT_CACHE (default ~/.cache/appliance-tests);
    later runs unpack it (seconds). One that cannot be made fails in CI (helpers.missing)."""
    cache = Path(os.environ.get("APPLIANCE_CHROOT_CACHE", Path.home() / ".cache" / "appliance-tests"))
    tarball = cache / f"{SUITE}-minbase-{INCLUDE.replace(',', '-')}.tar"
    if tarball.is_file():
        return tarball
    cache.mkdir(parents=True, exist_ok=True)
    work = cache / "debootstrap.tmp"
    shutil.rmtree(work, ignore_errors=True)
    result = subprocess.run(
        ["debootstrap", "--variant=minbase", f"--include={INCLUDE}", SUITE, str(work), "http://deb.debian.org/debian"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    if result.returncode != 0:
        shutil.rmtree(work, ignore_errors=True)
        missing(f"debootstrap could not make a {SUITE} base system: {result.stdout[-500:]}{result.stderr[-500:]}")
    subprocess.run(["tar", "-C", str(work), "-cf", f"{tarball}.tmp", "."], check=True, timeout=300)
    os.replace(f"{tarball}.tmp", tarball)
    shutil.rmtree(work, ignore_errors=True)
    return tarball


def installed_root(deb: Path, root: Path):
    """A fresh base system in `root` with `deb` installed by dpkg: a function that runs a
    command in it (chroot), with `.root` the folder."""
    root.mkdir(exist_ok=True)
    subprocess.run(["tar", "-C", str(root), "-xf", str(base_tarball())], check=True, timeout=300)
    shutil.copy(deb, root / "tmp" / deb.name)

    def run(*command: str, check: bool = True, **kwargs) -> subprocess.CompletedProcess:
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8", "HOME": "/root"}
        result = subprocess.run(["chroot", str(root), *command], capture_output=True, text=True, env=env, **kwargs)
        if check:
            assert result.returncode == 0, f"{command}: {result.stdout[-2000:]}{result.stderr[-2000:]}"
        return result

    run.root = root
    run("dpkg", "--install", f"/tmp/{deb.name}", timeout=300)
    return run
