"""Browser tests: Debian's Chromium driven by Playwright (never a downloaded browser),
against a real daemon serving the built console."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ..helpers import ROOT, Daemon, daemon_with, make_daemon

CHROMIUM = "/usr/bin/chromium"
ARTEFACTS = ROOT / "test-artifacts" / "screenshots"
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: `make test` installs Debian's chromium")
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": FLAGS, "headless": True}


@pytest.fixture(scope="session")
def console_built() -> Path:
    index = ROOT / "appliance" / "static" / "index.html"
    if not index.exists():
        pytest.fail("the console is not built: run `make build`")
    return index


@pytest.fixture
def console(tmp_path, console_built) -> Daemon:
    """A daemon of this test's own serving the built console."""
    daemon = make_daemon(tmp_path)
    daemon.url = f"http://127.0.0.1:{daemon.http_port}"
    yield daemon
    daemon.stop()


@pytest.fixture
def loopback_console(tmp_path, console_built) -> Daemon:
    """A daemon of this test's own that may reach sources on 127.0.0.1 (the test's sshd, moto)."""
    daemon = daemon_with(tmp_path, sources__allow_loopback=True)
    daemon.url = f"http://127.0.0.1:{daemon.http_port}"
    yield daemon
    daemon.stop()


@pytest.fixture
def uninitialised_console(tmp_path, console_built) -> Daemon:
    """A daemon on an empty data dir: the console shows the first-run setup."""
    daemon = make_daemon(tmp_path, start=False)
    daemon.data_dir = tmp_path / "empty"
    daemon.start()
    daemon.url = f"http://127.0.0.1:{daemon.http_port}"
    yield daemon
    daemon.stop()


def screenshot(page, name: str) -> Path:
    """Save a screenshot of a main screen under test-artifacts/screenshots/."""
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTEFACTS / f"{name}.png"
    page.evaluate("window.scrollTo(0, 0)")  # sticky header and menu where a person sees them
    page.screenshot(path=str(path), full_page=True)
    return path


WIDE = {"width": 1280, "height": 800}
NARROW = {"width": 800, "height": 900}  # below the 1023 px drawer breakpoint


def screenshots(page, name: str) -> None:
    """The screen at 1280 px and at 800 px (side menu as a closed drawer), then back to wide."""
    page.set_viewport_size(WIDE)
    page.wait_for_timeout(250)  # the chart redraws 150 ms after a resize
    screenshot(page, f"{name}-1280")
    page.set_viewport_size(NARROW)
    page.wait_for_timeout(250)
    screenshot(page, f"{name}-800")
    page.set_viewport_size(WIDE)
