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


def test_a_full_sign_in_pool_hangs_up_the_busiest_address_rather_than_refuse_a_newcomer():
    limits = ConnectionLimits(ConnectionSettings(per_address=100, unauthenticated=5, unauthenticated_per_address=3))
    dropped = []

    def opened(address):
        ticket = limits.open(address, "sftp", drop=lambda: dropped.append(ticket))
        return ticket

    flood = [opened("10.0.0.1") for _ in range(3)]
    other = [opened("10.0.0.2") for _ in range(2)]
    user = opened("10.0.0.9")  # the pool is full: the busiest address's oldest goes
    assert dropped == [flood[0]] and limits.pending == 5 and limits.evictions == 1
    flood[0].close()  # its connection ends: counted once
    assert limits.pending == 5 and limits.connections_from("10.0.0.1") == 2
    opened("10.0.0.8")  # 10.0.0.1 and .2 hold two each: the oldest of the first found
    assert dropped == [flood[0], flood[1]]
    user.authenticated()
    assert limits.sessions == {"sftp": 1} and limits.pending == 4
    # an evicted connection that signs in while it is being hung up is not counted
    flood[1].authenticated()
    flood[1].close()
    assert limits.sessions == {"sftp": 1} and limits.pending == 4
    assert other[0].evicted is False


def test_connections_without_a_way_to_hang_up_are_never_evicted():
    limits = ConnectionLimits(ConnectionSettings(per_address=100, unauthenticated=2, unauthenticated_per_address=2))
    limits.open("10.0.0.1", "ftp")
    limits.open("10.0.0.1", "ftp")
    with pytest.raises(PermissionDenied, match="signing in right now"):
        limits.open("10.0.0.2", "ftp", drop=lambda: None)
    # nor one of an address no busier than the newcomer's own
    limits = ConnectionLimits(ConnectionSettings(per_address=100, unauthenticated=2, unauthenticated_per_address=2))
    mine = limits.open("10.0.0.2", "ftp", drop=lambda: None)
    limits.open("10.0.0.1", "ftp", drop=lambda: None)
    with pytest.raises(PermissionDenied, match="signing in right now"):
        limits.open("10.0.0.2", "ftp", drop=lambda: None)
    assert mine.evicted is False
