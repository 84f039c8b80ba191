"""A client the tests drive that is missing: skipped on a developer's machine, a failure
in CI (`CI=true bash .ci/run`), where a skip would hide that it was never exercised."""

from __future__ import annotations

import pytest

from .helpers import require, require_module


def test_a_missing_client_fails_in_ci(monkeypatch):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="no-such-client is not installed"):
        require("sh", "no-such-client")
    with pytest.raises(pytest.fail.Exception, match="no_such_module"):
        require_module("no_such_module")


def test_a_missing_client_is_skipped_elsewhere(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="/no/such/dovecot is not installed"):
        require("/no/such/dovecot")
    with pytest.raises(pytest.skip.Exception, match="no_such_module"):
        require_module("no_such_module")


def test_what_is_there_passes(monkeypatch):
    monkeypatch.setenv("CI", "true")
    require("sh", "/bin/sh")
    assert require_module("json").dumps([]) == "[]"
