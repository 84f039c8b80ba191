"""Shared fixtures: a live daemon per module (fast) or per test (isolated)."""

from __future__ import annotations

import os

import pytest

from .helpers import Daemon, make_daemon

# The ops listener's default port (9180) would be shared by every daemon a test starts,
# here and in other test runs on this machine: none unless a test asks (make_daemon does).
os.environ.setdefault("APPLIANCE_LISTEN_OPS", "")


@pytest.fixture(scope="module")
def daemon(tmp_path_factory) -> Daemon:
    """One running daemon for a test module; tests make their own profiles."""
    d = make_daemon(tmp_path_factory.mktemp("daemon"))
    yield d
    d.stop()


@pytest.fixture
def fresh_daemon(tmp_path) -> Daemon:
    """A daemon of this test's own (for tests that restart or kill it)."""
    d = make_daemon(tmp_path)
    yield d
    d.stop()
