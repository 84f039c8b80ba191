"""Sending at once on a Twisted TCP connection (appliance/frontends/tcp_send.py), on real
loopback sockets under Twisted's own TCP transport: the bytes leave in order, whole, and
through Twisted's buffer whenever they must (something already waits, the socket is
full, the connection is closing, TLS). The reactor is a stand-in that records what the
transport asks of it (`RecordingFdSet`): these tests turn its crank by hand."""

from __future__ import annotations

import select
import socket
import threading
import time

import pytest
from twisted.internet import tcp
from twisted.internet.protocol import Protocol
from twisted.internet.testing import StringTransport
from twisted.protocols.policies import ProtocolWrapper, WrappingFactory

from appliance.frontends.tcp_send import send_now

from ..helpers import loopback_connection, recv_exactly


class RecordingFdSet:
    """Stands in for the reactor's file-descriptor set: records who wants to write."""

    def __init__(self):
        self.writers = set()
        self.readers = set()

    def addReader(self, reader):
        self.readers.add(reader)

    def removeReader(self, reader):
        self.readers.discard(reader)

    def addWriter(self, writer):
        self.writers.add(writer)

    def removeWriter(self, writer):
        self.writers.discard(writer)


@pytest.fixture
def pair():
    """(Twisted's server-side transport on a real socket, the stand-in reactor, the client socket)."""
    sock, client = loopback_connection()
    peer = sock.getpeername()
    sock.setblocking(False)
    fdset = RecordingFdSet()
    transport = tcp.Server(sock, Protocol(), peer, None, 1, fdset)
    transport.setTcpNoDelay(True)  # as the front ends' connections are
    transport.protocol.makeConnection(transport)
    yield transport, fdset, client
    sock.close()
    client.close()


def received(client: socket.socket, size: int) -> bytes:
    client.settimeout(10)
    return recv_exactly(client, size)


def drain(transport, fdset) -> None:
    """What the reactor does while the transport wants to write: doWrite when the socket
    can take more, until it has nothing left."""
    deadline = time.monotonic() + 30
    while transport in fdset.writers:
        assert time.monotonic() < deadline, "the transport never finished writing"
        select.select([], [transport.socket], [], 1)
        transport.doWrite()


def test_an_idle_connection_sends_at_once_without_asking_the_reactor(pair):
    transport, fdset, client = pair
    send_now(transport, [b"226 Transfer complete.", b"\r\n"])
    assert received(client, 24) == b"226 Transfer complete.\r\n"
    assert transport not in fdset.writers  # no epoll_ctl, no turn of the reactor


def test_memoryviews_are_sent_as_their_bytes(pair):
    transport, _fdset, client = pair
    send_now(transport, [memoryview(b"xxSTATUSxx")[2:8], b"!"])
    assert received(client, 7) == b"STATUS!"


def test_bytes_already_waiting_in_twisteds_buffer_go_first(pair):
    transport, fdset, client = pair
    transport.write(b"first ")  # buffered: Twisted sends it on the reactor's next turn
    send_now(transport, [b"second"])
    client.setblocking(False)
    with pytest.raises(BlockingIOError):
        client.recv(100)  # nothing overtook what was waiting
    drain(transport, fdset)
    assert received(client, 12) == b"first second"


def test_what_a_full_socket_does_not_take_waits_in_the_buffer_in_order(pair):
    transport, fdset, client = pair
    pieces = [bytes([n]) * 65536 for n in range(128)]  # 8 MiB: more than loopback's buffers hold
    send_now(transport, pieces)
    assert transport in fdset.writers  # the rest waits for the reactor
    send_now(transport, [b"tail"])  # and so does anything after it
    whole = b"".join(pieces) + b"tail"
    got = []
    reader = threading.Thread(target=lambda: got.append(received(client, len(whole))))
    reader.start()
    drain(transport, fdset)
    reader.join(30)
    assert got and got[0] == whole


def test_a_closing_connection_sends_through_twisted(pair):
    transport, fdset, client = pair
    transport.loseConnection()
    send_now(transport, [b"late"])
    assert transport in fdset.writers  # Twisted writes what it is let write, then closes
    client.setblocking(False)
    with pytest.raises(BlockingIOError):
        client.recv(100)


def test_a_connection_under_tls_sends_through_twisted(pair, monkeypatch):
    transport, fdset, client = pair
    monkeypatch.setattr(transport, "TLS", True)  # what startTLS sets: bytes must be encrypted
    calls = []
    monkeypatch.setattr(transport, "writeSequence", calls.append)
    send_now(transport, [b"secret"])
    assert calls == [[b"secret"]]
    client.setblocking(False)
    with pytest.raises(BlockingIOError):
        client.recv(100)


def test_through_a_connection_limiting_wrapper(pair):
    transport, fdset, client = pair
    wrapper = ProtocolWrapper(WrappingFactory(None), Protocol())
    wrapper.makeConnection(transport)
    send_now(wrapper, [b"213 ok\r\n"])
    assert received(client, 8) == b"213 ok\r\n"
    assert transport not in fdset.writers


def test_any_other_transport_gets_its_own_write():
    transport = StringTransport()
    send_now(transport, [b"a", b"b"])
    assert transport.value() == b"ab"
