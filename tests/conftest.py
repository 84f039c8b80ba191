"""Shared fixtures: a live daemon per module (fast) or per test (isolated)."""

from __future__ import annotations

import os

import pytest

from .helpers import Daemon, daemon_with, make_daemon, require
from .smtpserver import SmtpServer

# The ops listener's default port (9180) would be shared by every daemon a test starts,
# here and in other test runs on this machine: none unless a test asks (make_daemon does).
os.environ.setdefault("APPLIANCE_LISTEN_OPS", "")


def pytest_runtest_setup(item):
    """`@pytest.mark.requires("curl", "lftp")`: the programs a test drives; one missing
    skips the test here and fails it in CI (helpers.require)."""
    for mark in item.iter_markers("requires"):
        require(*mark.args)


@pytest.fixture(scope="module")
def daemon_factory(tmp_path_factory):
    """Starts daemons for a test module: `daemon_factory(https=True, smtp__port=port)` takes
    helpers.daemon_with's arguments; each daemon is stopped when the module's tests are done."""
    started: list[Daemon] = []

    def start(**settings) -> Daemon:
        started.append(daemon_with(tmp_path_factory, **settings))
        return started[-1]

    yield start
    for d in started:
        d.stop()


@pytest.fixture(scope="module")
def daemon(request, daemon_factory) -> Daemon:
    """One running daemon for a test module; tests make their own profiles. Its settings are
    the module's `daemon_with` marker's: `pytestmark = pytest.mark.daemon_with(https=True)`."""
    marker = request.node.get_closest_marker("daemon_with")
    return daemon_factory(**(marker.kwargs if marker else {}))


@pytest.fixture
def fresh_daemon(tmp_path) -> Daemon:
    """A daemon of this test's own (for tests that restart or kill it)."""
    d = make_daemon(tmp_path)
    yield d
    d.stop()


@pytest.fixture(scope="module")
def smtp() -> SmtpServer:
    """A real SMTP listener for a test module: what the daemon mails arrives in `smtp.messages`."""
    server = SmtpServer()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def mail_daemon(daemon_factory, smtp) -> Daemon:
    """The module's daemon mailing through `smtp`, from portal@acme.example."""
    return daemon_factory(smtp__host="127.0.0.1", smtp__port=smtp.port, smtp__sender="portal@acme.example")
