"""Connection limits: per address, and signing-in connections in flight."""

from __future__ import annotations

import pytest

from appliance.core.connections import ConnectionLimits, ConnectionSettings
from appliance.errors import PermissionDenied


def test_signing_in_connections_are_bounded_per_address_and_in_total():
    limits = ConnectionLimits(ConnectionSettings(per_address=100, unauthenticated=5, unauthenticated_per_address=3))
    tickets = [limits.open("10.0.0.1", "sftp") for _ in range(3)]
    with pytest.raises(PermissionDenied, match="signing in at once"):
        limits.open("10.0.0.1", "sftp")
    tickets += [limits.open("10.0.0.2", "ftp") for _ in range(2)]
    with pytest.raises(PermissionDenied, match="signing in right now"):
        limits.open("10.0.0.3", "sftp")
    tickets[0].authenticated()  # a signed-in connection frees its place
    limits.open("10.0.0.3", "sftp")
    assert limits.sessions == {"sftp": 1}
    tickets[1].close()
    tickets[1].close()  # closing twice counts once
    assert limits.pending == 4


def test_connections_per_address_include_signed_in_ones():
    limits = ConnectionLimits(ConnectionSettings(per_address=2, unauthenticated=10, unauthenticated_per_address=10))
    first = limits.open("10.0.0.1", "sftp")
    first.authenticated()
    limits.open("10.0.0.1", "ftp")
    with pytest.raises(PermissionDenied, match="Too many connections from 10.0.0.1"):
        limits.open("10.0.0.1", "sftp")
    first.close()
    assert limits.sessions == {"sftp": 0}
    limits.open("10.0.0.1", "sftp")
    assert limits.connections_from("10.0.0.1") == 2
