"""Shared fixtures: a live daemon per module (fast) or per test (isolated)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .helpers import Daemon, daemon_with, make_daemon, require
from .smtpserver import SmtpServer

# The ops listener's default port (9180) would be shared by every daemon a test starts,
# here and in other test runs on this machine: none unless a test asks (make_daemon does).
os.environ.setdefault("APPLIANCE_LISTEN_OPS", "")


# The tiers (CONTRIBUTING.md), each test's by where it lives, so that none goes unmarked.
# unit: the core in the test process (core/, store/, the modules at the top of tests/), run
# by `make test-fast`; clients: a real daemon or server driven by real clients; heavy: the long
# ones (the packages, soak, floods, fuzzing, schemathesis, the client matrix); e2e: Chromium.
# `make test` runs them all.
TESTS = Path(__file__).parent
TIERS = (
    ("e2e", ("e2e/",)),
    (
        "heavy",
        (
            "packaging/",
            "integration/test_soak.py",
            "integration/test_hostile.py",  # floods of handshakes and requests, path escapes
            "integration/test_mail_limits.py",  # mail floods
            "frontends/test_sftp_flow.py",  # clients that flood requests
            "frontends/test_fuzz.py",
            "frontends/test_schemathesis.py",
            "integration/test_client_matrix.py",
            "integration/test_paramiko_suite.py",
        ),
    ),
    ("clients", ("frontends/", "integration/", "core/test_mailboxes.py", "core/test_mail_outside_in.py")),
)


def pytest_collection_modifyitems(items):
    for item in items:
        where = item.path.relative_to(TESTS).as_posix()
        tier = next((name for name, paths in TIERS if where.startswith(paths)), "unit")
        item.add_marker(tier)


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
