"""What the kernel tells of a TCP connection (appliance/frontends/tcp_state.py), on real
loopback connections: FTP commits an upload only while `peer_has_closed` is False for
its control connection, so it must see a peer's FIN or reset before the reactor does."""

from __future__ import annotations

import socket
import struct

import pytest

from appliance.frontends.tcp_state import least_round_trip, peer_has_closed

from ..helpers import loopback_connection, wait_for


@pytest.fixture
def connection():
    """(the server's side, the client's side) of a loopback TCP connection."""
    server, client = loopback_connection()
    yield server, client
    server.close()
    client.close()


def test_an_open_connection_is_open_both_ways(connection):
    server, client = connection
    assert not peer_has_closed(server)
    assert not peer_has_closed(client)
    client.sendall(b"NOOP\r\n")  # unread data changes nothing
    assert not peer_has_closed(server)


def test_a_peer_that_closed_is_seen_before_its_end_of_stream_is_read(connection):
    server, client = connection
    client.sendall(b"STOR x\r\n")
    client.close()  # the FIN follows the unread command
    wait_for(lambda: peer_has_closed(server), timeout=10)  # the kernel may take a softirq's turn
    assert server.recv(100) == b"STOR x\r\n"  # nothing of it was read to know


def test_a_peer_that_reset_is_seen(connection):
    server, client = connection
    client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    client.close()  # a reset, as when a dying client had unread data
    wait_for(lambda: peer_has_closed(server), timeout=10)


def test_our_own_half_close_is_not_the_peer_closing(connection):
    server, _client = connection
    server.shutdown(socket.SHUT_WR)  # we closed our side: the peer is still there
    assert not peer_has_closed(server)


def test_a_closed_socket_counts_as_gone():
    sock = socket.socket()
    sock.close()
    assert peer_has_closed(sock)


def test_no_socket_or_not_tcp_cannot_tell_and_is_taken_as_open():
    assert not peer_has_closed(None)  # a transport without a socket: only the reactor can tell
    left, right = socket.socketpair()
    with left, right:
        assert not peer_has_closed(left)
        assert least_round_trip(left) is None


def test_the_least_round_trip_of_a_loopback_connection_is_small(connection):
    server, client = connection
    client.sendall(b"x")
    server.recv(1)
    server.sendall(b"y")
    client.recv(1)
    rtt = least_round_trip(server)
    assert rtt is not None and 0 <= rtt < 1
