"""FTP settings other than the defaults (a daemon of its own with short idle and
transfer timeouts and a masquerade address), and refusals as connections open
(banned addresses, connection limits)."""

from __future__ import annotations

import os
import socket
import time

import pytest
from twisted.internet.address import IPv4Address
from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport

from appliance import config
from appliance.core.connections import ConnectionLimits, ConnectionSettings
from appliance.errors import ConfigError, PermissionDenied
from appliance.frontends.ftp.protocol import FTPFactory

from ..helpers import daemon_with
from .ftp_raw import RawFTP, read_all

PASSWORD = "user-password-1"


@pytest.fixture(scope="module")
def impatient(tmp_path_factory):
    """A daemon whose FTP idle and transfer timeouts are 2 seconds, behind 'NAT'."""
    daemon = daemon_with(
        tmp_path_factory, ftp__idle_timeout=2, ftp__transfer_timeout=2, ftp__masquerade_address="203.0.113.5"
    )
    daemon.add_profile("sleepy", PASSWORD)
    yield daemon
    daemon.stop()


def test_an_idle_control_connection_is_closed(impatient):
    with RawFTP(impatient.ftp_port, timeout=30) as ftp:
        ftp.login("sleepy", PASSWORD)
        code, text = ftp.reply()  # nothing sent: the next thing is the server's goodbye
        assert code == 421 and "closing the connection" in text
        assert ftp.closed()


def test_a_stalled_upload_times_out_and_leaves_nothing(impatient):
    with RawFTP(impatient.ftp_port, timeout=30) as ftp:
        ftp.login("sleepy", PASSWORD)
        home = impatient.home("sleepy")
        port = ftp.epsv()
        conn = ftp.data(port)
        assert ftp.cmd("STOR stalled.bin")[0] == 150
        conn.sendall(b"some bytes, then nothing")
        code, text = ftp.reply()
        assert code == 426 and "timed out" in text
        conn.close()
        deadline = time.monotonic() + 10
        while list(home.glob(".~upload-*")) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not list(home.glob(".~upload-*"))
        assert not (home / "stalled.bin").exists()
        # The control connection is still usable (its idle timer restarted).
        assert ftp.cmd("NOOP")[0] == 200


def test_a_stalled_download_times_out_and_the_next_one_is_whole(impatient):
    """A client that stops reading a plain download (sent by sendfile from the
    reactor) gets 426 after the transfer timeout, and the session goes on."""
    home = impatient.home("sleepy")
    home.mkdir(parents=True, exist_ok=True)
    data = os.urandom(32 << 20)
    (home / "big.bin").write_bytes(data)
    with RawFTP(impatient.ftp_port, timeout=30) as ftp:
        ftp.login("sleepy", PASSWORD)
        conn = ftp.data(ftp.epsv())
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        assert ftp.cmd("RETR big.bin")[0] == 150
        assert conn.recv(4096)  # under way; then nothing more is read
        code, text = ftp.reply()
        assert code == 426 and "timed out" in text
        conn.close()
        assert ftp.cmd("NOOP")[0] == 200
        conn = ftp.data(ftp.epsv())
        assert ftp.cmd("RETR big.bin")[0] == 150
        assert read_all(conn) == data
        assert ftp.reply()[0] == 226


def test_pasv_announces_the_masquerade_address_but_listens_on_the_control_address(impatient):
    home = impatient.home("sleepy")
    home.mkdir(parents=True, exist_ok=True)
    (home / "hello.txt").write_bytes(b"hello")
    with RawFTP(impatient.ftp_port) as ftp:
        ftp.login("sleepy", PASSWORD)
        host, port = ftp.pasv()
        assert host == "203.0.113.5"
        assert impatient.passive[0] <= port <= impatient.passive[1]
        conn = ftp.data(port)  # the port is on the address we connected to
        assert ftp.cmd("RETR hello.txt")[0] == 150
        assert read_all(conn) == b"hello"
        assert ftp.reply()[0] == 226


def test_a_masquerade_address_must_be_ipv4():
    """Refused when the settings are read, so serve and check both say so."""
    with pytest.raises(ConfigError, match="masquerade_address: 'files.example.com' is not an IPv4 address"):
        config.load(None, {"APPLIANCE_FTP_MASQUERADE_ADDRESS": "files.example.com"})
    assert config.load(None, {"APPLIANCE_FTP_MASQUERADE_ADDRESS": "203.0.113.9"}).ftp.masquerade_address


def test_the_daemon_logged_no_unhandled_errors(impatient):
    output = impatient.output()
    assert "Unhandled error" not in output
    assert "Traceback" not in output


class StandInAdmission:
    """Stands in for core.signin's admission (a ban, then the core's own connection
    limits) without a database, for the FTP protocol driven over StringTransport."""

    def __init__(self, limits: ConnectionLimits | None = None, refusals: dict[str, str] | None = None):
        self.limits = limits or ConnectionLimits()
        self.refusals = refusals or {}

    def admit(self, address: str, protocol: str, *, drop=None, end=None):
        if address in self.refusals:
            raise PermissionDenied(self.refusals[address])
        return self.limits.open(address, protocol, drop=drop, end=end)


def test_a_banned_address_is_refused_before_any_sign_in():
    clock = Clock()
    refusals = {"192.0.2.7": "Too many failed sign-ins from 192.0.2.7: try again in 5 minutes."}
    factory = FTPFactory(
        None,
        clock,
        passive_ports=range(30000, 30010),
        idle_timeout=60,
        transfer_timeout=60,
        masquerade=None,
        admission=StandInAdmission(refusals=refusals),
    )
    for address, expected in (("192.0.2.7", b"421 Too many failed sign-ins"), ("192.0.2.8", b"220 ")):
        protocol = factory.buildProtocol(IPv4Address("TCP", address, 40000))
        transport = StringTransport(peerAddress=IPv4Address("TCP", address, 40000))
        protocol.makeConnection(transport)
        assert transport.value().startswith(expected)
        assert transport.disconnecting == (expected.startswith(b"421"))
        protocol.connectionLost(None)
    assert not clock.getDelayedCalls()


def test_connection_limits_of_the_core_apply():
    limits = ConnectionLimits(ConnectionSettings(per_address=1, unauthenticated=10, unauthenticated_per_address=10))
    factory = FTPFactory(
        None,
        Clock(),
        passive_ports=range(30000, 30010),
        idle_timeout=60,
        transfer_timeout=60,
        masquerade=None,
        admission=StandInAdmission(limits),
    )
    peer = IPv4Address("TCP", "192.0.2.9", 40000)
    first, second = factory.buildProtocol(peer), factory.buildProtocol(peer)
    first_transport, second_transport = StringTransport(peerAddress=peer), StringTransport(peerAddress=peer)
    first.makeConnection(first_transport)
    second.makeConnection(second_transport)
    assert first_transport.value().startswith(b"220 ")
    assert second_transport.value().startswith(b"421 Too many connections from 192.0.2.9")
    assert limits.connections_from("192.0.2.9") == 1
    first.connectionLost(None)
    second.connectionLost(None)
    assert limits.connections_from("192.0.2.9") == 0


def test_a_full_sign_in_pool_hangs_up_the_busiest_address_for_a_newcomer():
    limits = ConnectionLimits(ConnectionSettings(per_address=10, unauthenticated=2, unauthenticated_per_address=2))
    factory = FTPFactory(
        None,
        Clock(),
        passive_ports=range(30000, 30010),
        idle_timeout=60,
        transfer_timeout=60,
        masquerade=None,
        admission=StandInAdmission(limits),
    )
    sessions = []
    for address in ("192.0.2.10", "192.0.2.10", "192.0.2.11"):
        peer = IPv4Address("TCP", address, 40000)
        protocol, transport = factory.buildProtocol(peer), StringTransport(peerAddress=peer)
        protocol.makeConnection(transport)
        sessions.append((protocol, transport))
    (oldest, oldest_transport), (_, kept), (_, newcomer) = sessions
    assert newcomer.value().startswith(b"220 ")
    assert b"421 Too many connections are signing in from your address" in oldest_transport.value()
    assert oldest_transport.disconnecting and not kept.disconnecting
    assert limits.pending == 2 and limits.evictions == 1
    for protocol, _ in sessions:
        protocol.connectionLost(None)
    assert limits.pending == 0 and limits.connections_from("192.0.2.10") == 0


@pytest.fixture(scope="module")
def hasty(daemon_factory):
    """A daemon whose FTP sign-in grace is 1 second (the idle timeout stays 600 s)."""
    return daemon_factory(ftp__login_grace_time=1)


def test_a_connection_that_never_signs_in_is_closed_after_the_grace(hasty):
    """Commands restart the idle timer, not the sign-in grace: USER again and again
    (or nothing at all) ends in 421 once the grace is over."""
    with RawFTP(hasty.ftp_port, timeout=60) as ftp:
        assert ftp.greeting[0] == 220
        assert ftp.cmd("USER nobody")[0] == 331
        code, text = ftp.reply()  # nothing more sent: the next thing is the server's goodbye
        assert code == 421 and "Not signed in within 1 seconds" in text, text
        assert ftp.closed()


class UnusedShell:
    def logout(self) -> None:
        pass


class SignedInPortal:
    """A portal that lets anyone in, with a shell that is never used."""

    def login(self, credentials, mind, *interfaces):
        from twisted.internet import defer

        return defer.succeed((interfaces[0], UnusedShell(), lambda: None))


def test_the_sign_in_grace_runs_on_the_injected_clock_and_ends_with_the_sign_in():
    clock = Clock()
    factory = FTPFactory(
        SignedInPortal(),
        clock,
        passive_ports=range(30000, 30010),
        idle_timeout=600,
        transfer_timeout=60,
        masquerade=None,
        login_grace=30,
    )
    peer = IPv4Address("TCP", "192.0.2.20", 40000)
    sessions = []
    for _ in range(2):
        protocol, transport = factory.buildProtocol(peer), StringTransport(peerAddress=peer)
        protocol.makeConnection(transport)
        sessions.append((protocol, transport))
    (waiting, waiting_transport), (signed, signed_transport) = sessions
    signed.dataReceived(b"USER alice\r\nPASS secret\r\n")
    assert b"230 " in signed_transport.value()
    clock.advance(29)
    waiting.dataReceived(b"NOOP\r\n")  # a command restarts the idle timer, not the grace
    assert b"421" not in waiting_transport.value()
    clock.advance(1)
    assert b"421 Not signed in within 30 seconds" in waiting_transport.value()
    assert waiting_transport.disconnecting
    assert b"421" not in signed_transport.value() and not signed_transport.disconnecting
    for protocol, _ in sessions:
        protocol.connectionLost(None)
    assert not clock.getDelayedCalls()
