"""Passive-port theft from the client's own address (issue #40 item 2), driven from
outside against a live daemon: another client at the same address connects to a
session's passive port before the session does.

- FTPS (PROT P): a data connection must resume the control connection's TLS session
  ([ftp] require_tls_session_reuse, on by default); each control connection has a
  TLS context of its own, so no other client has a session to resume. A thief, with
  no session or with its own, is dropped as its handshake ends and gets nothing; the
  port then still takes the client's own connection, and a transfer that finds only
  a refusal answers 522 naming the setting. lftp and curl resume, in TLS 1.2 and 1.3.
- Plain FTP: one connection per PASV/EPSV, from the client's address only; two from
  that address before a transfer took the first are both dropped (the transfer
  answers 425), so a thief who came first is not used. What remains (nothing tells
  a thief from the client when the thief alone connects) is documented; FTPS closes it.

Each step waits for the server's answer to the one before (a thief's connection is
read until the server drops it before the client goes on): no timing is assumed.
"""

from __future__ import annotations

import socket
import ssl
import subprocess

import pytest

from ..helpers import daemon_with
from .ftp_raw import RawFTP, read_all, tls_client, tls_received

PASSWORD = "user-password-1"
SECRET = b"the client's own file\n" * 20_000  # 440 KB
BIG = bytes(range(256)) * (64 << 10)  # 16 MiB: more than loopback's socket buffers hold
VERSIONS = {"tls1.2": ssl.TLSVersion.TLSv1_2, "tls1.3": ssl.TLSVersion.TLSv1_3}
NOT_RESUMED = "did not resume the control connection's TLS session"
SETTING = "[ftp] require_tls_session_reuse = false"
LFTP_FTPS = (
    "set ftp:ssl-force true; set ftp:ssl-protect-data true; set ssl:verify-certificate no; "
    "set net:max-retries 2; set net:reconnect-interval-base 1; set xfer:clobber on; set ftp:passive-mode on; "
)
# GnuTLS's priority for lftp's connections: exactly one TLS version
LFTP_PRIORITY = {"tls1.2": "NORMAL:-VERS-ALL:+VERS-TLS1.2", "tls1.3": "NORMAL:-VERS-ALL:+VERS-TLS1.3"}


@pytest.fixture(scope="module")
def users(daemon) -> tuple[str, str]:
    """The client ("owner", whose home holds secret.bin) and the thief, at one address."""
    for name in ("owner", "thief"):
        daemon.add_profile(name, PASSWORD)
        daemon.home(name).mkdir(parents=True, exist_ok=True)
    (daemon.home("owner") / "secret.bin").write_bytes(SECRET)
    (daemon.home("owner") / "big.bin").write_bytes(BIG)
    return "owner", "thief"


def ftps(daemon, user: str, version: ssl.TLSVersion | None = None) -> RawFTP:
    """A signed-in FTPS control connection with PROT P, capped at `version`."""
    ftp = RawFTP(daemon.ftp_port)
    ftp.start_tls(tls_client(version))
    ftp.login(user, PASSWORD)
    assert ftp.cmd("PBSZ 0")[0] == 200
    assert ftp.cmd("PROT P")[0] == 200
    return ftp


def thief_takes(thief: RawFTP, port: int, session: str) -> bytes:
    """The thief connects to `port` and reads until the server drops it: with no TLS
    session to offer (a fresh full handshake), or offering its own control connection's."""
    offered = thief.sock.session if session == "its own" else None
    return tls_received(thief.data(port), thief.tls, session=offered)


# -- FTPS --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("session", ["none", "its own"])
@pytest.mark.parametrize("version", list(VERSIONS))
def test_a_thief_at_the_clients_address_gets_nothing_and_the_client_gets_its_file(daemon, users, version, session):
    owner, thief_name = users
    with ftps(daemon, owner, VERSIONS[version]) as client, ftps(daemon, thief_name, VERSIONS[version]) as thief:
        port = client.epsv()
        # the thief connects first, after the PASV and before the client's connection and RETR
        assert thief_takes(thief, port, session) == b""
        # refused before any transfer used it: the port still waits for the client's own connection
        data = client.tls_data(port)
        assert data.session_reused
        assert client.cmd("RETR secret.bin")[0] == 150
        assert read_all(data) == SECRET
        assert client.reply()[0] == 226
        assert thief.cmd("NOOP")[0] == 200  # the thief's own session goes on
    output = daemon.output()
    assert f"refused an FTP data connection from 127.0.0.1: its TLS handshake {NOT_RESUMED}" in output
    assert "Traceback" not in output


@pytest.mark.parametrize("version", list(VERSIONS))
def test_a_transfer_whose_connection_did_not_resume_answers_522_naming_the_setting(daemon, users, version):
    owner, thief_name = users
    home = daemon.home(owner)
    with ftps(daemon, owner, VERSIONS[version]) as client, ftps(daemon, thief_name, VERSIONS[version]) as thief:
        # The data connection comes after the 150 (as ftplib's), without resuming: the
        # transfer waiting for it has it, and ends with the refusal.
        port = client.epsv()
        assert client.cmd("RETR secret.bin")[0] == 150
        assert tls_received(client.data(port), tls_client(VERSIONS[version]), session=None) == b""
        code, text = client.reply()
        assert code == 522 and NOT_RESUMED in text and SETTING in text, text
        # The same for an upload: nothing is saved, no temporary file is left.
        port = client.epsv()
        assert client.cmd("STOR planted.bin")[0] == 150
        assert tls_received(client.data(port), tls_client(VERSIONS[version]), session=None) == b""
        code, text = client.reply()
        assert code == 522 and NOT_RESUMED in text, text
        assert not (home / "planted.bin").exists() and not list(home.glob(".~upload-*"))
        # A thief refused before the client's RETR, whose own connection has not come:
        # the RETR answers with the refusal at once (150 then 522) and sends nothing.
        port = client.epsv()
        assert thief_takes(thief, port, "its own") == b""
        assert client.cmd("RETR secret.bin")[0] == 150
        code, text = client.reply()
        assert code == 522 and NOT_RESUMED in text, text
        # the session goes on: its next data connection resumes and works
        data = client.tls_data(client.epsv())
        assert client.cmd("NLST")[0] == 150
        assert b"secret.bin" in read_all(data)
        assert client.reply()[0] == 226
    assert "Traceback" not in daemon.output()  # a connection refused while a transfer had it


def lftp(daemon, user: str, commands: str, version: str) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [
            "lftp",
            "-u",
            f"{user},{PASSWORD}",
            "-p",
            str(daemon.ftp_port),
            "-e",
            f'{LFTP_FTPS}set ssl:priority "{LFTP_PRIORITY[version]}"; {commands}; bye',
            "127.0.0.1",
        ],
        capture_output=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, (result.stdout + result.stderr).decode(errors="replace")
    return result


def curl(*args: str) -> str:
    """curl -v (over FTPS, passive); its log (stderr)."""
    result = subprocess.run(
        ["curl", "-v", "-sS", "-k", "--ssl-reqd", "--ftp-pasv", "--max-time", "60", *args],
        capture_output=True,
        timeout=90,
    )
    log = result.stderr.decode(errors="replace")
    assert result.returncode == 0, log
    return log


@pytest.mark.requires("curl", "lftp")
@pytest.mark.parametrize("version", list(VERSIONS))
def test_lftp_and_curl_resume_the_session_so_their_transfers_pass_the_check(daemon, users, tmp_path, version):
    owner, _ = users
    home = daemon.home(owner)
    # The check is on: a data connection that does not resume is refused.
    with ftps(daemon, owner, VERSIONS[version]) as client:
        port = client.epsv()
        assert client.cmd("NLST")[0] == 150
        assert tls_received(client.data(port), tls_client(VERSIONS[version]), session=None) == b""
        assert client.reply()[0] == 522
    refusals = daemon.output().count(NOT_RESUMED)
    upload = tmp_path / "up.bin"
    upload.write_bytes(SECRET[::-1])

    # lftp (GnuTLS): listing, downloads and uploads, each on a data connection of its own
    lftp(
        daemon,
        owner,
        f"cls -1; get secret.bin -o {tmp_path}/lftp.bin; put {upload} -o lftp-{version}.bin; "
        f"put {upload} -o lftp-again-{version}.bin; get secret.bin -o {tmp_path}/lftp-again.bin",
        version,
    )
    assert (tmp_path / "lftp.bin").read_bytes() == SECRET == (tmp_path / "lftp-again.bin").read_bytes()
    assert (home / f"lftp-{version}.bin").read_bytes() == SECRET[::-1]
    assert (home / f"lftp-again-{version}.bin").read_bytes() == SECRET[::-1]

    # curl (OpenSSL): two downloads on one control connection, then an upload
    url = f"ftp://{owner}:{PASSWORD}@127.0.0.1:{daemon.ftp_port}"
    cap = ["--tls-max", "1.2"] if version == "tls1.2" else ["--tlsv1.3"]
    log = curl(*cap, "-o", str(tmp_path / "c1"), f"{url}/secret.bin", "-o", str(tmp_path / "c2"), f"{url}/secret.bin")
    assert (tmp_path / "c1").read_bytes() == SECRET == (tmp_path / "c2").read_bytes()
    name = {"tls1.2": "TLSv1.2", "tls1.3": "TLSv1.3"}[version]
    # one full handshake (the control connection's: the only certificate sent), and each
    # data connection resumed: curl says so, and the server sent no certificate again
    assert log.count(f"SSL connection using {name}") == 3, log
    assert log.count("Certificate (11)") == 1, log
    assert log.count("SSL re-using session ID") == 2, log
    log = curl(*cap, "-T", str(upload), f"{url}/curl-{version}.bin")
    assert (home / f"curl-{version}.bin").read_bytes() == SECRET[::-1]
    assert log.count("Certificate (11)") == 1 and "SSL re-using session ID" in log, log

    # none of their data connections was refused
    assert daemon.output().count(NOT_RESUMED) == refusals


def test_with_the_setting_relaxed_a_client_that_does_not_resume_is_accepted(tmp_path):
    relaxed = daemon_with(tmp_path, ftp__require_tls_session_reuse=False)
    try:
        relaxed.add_profile("old-client", PASSWORD)
        home = relaxed.home("old-client")
        home.mkdir(parents=True, exist_ok=True)
        (home / "file.bin").write_bytes(SECRET)
        with ftps(relaxed, "old-client") as client:
            data = client.tls_data(client.epsv(), session=None)
            assert not data.session_reused  # a full handshake of its own
            assert client.cmd("RETR file.bin")[0] == 150
            assert read_all(data) == SECRET
            assert client.reply()[0] == 226
        assert NOT_RESUMED not in relaxed.output()
    finally:
        relaxed.stop()


# -- plain FTP -----------------------------------------------------------------------------------------


def dropped(conn: socket.socket) -> bool:
    """Whether the server closes (or resets) `conn` having sent nothing on it."""
    try:
        return read_all(conn) == b""
    except ConnectionResetError:
        conn.close()
        return True


def refused(port: int) -> bool:
    """Whether a connection to `port` is refused, or dropped having received nothing."""
    try:
        conn = socket.create_connection(("127.0.0.1", port), timeout=20)
    except ConnectionRefusedError:
        return True
    return dropped(conn)


def test_plain_ftp_takes_one_connection_per_pasv_and_uses_none_when_two_come(daemon, users):
    owner, _ = users
    with RawFTP(daemon.ftp_port) as client:
        client.login(owner, PASSWORD)
        # A thief at the client's address connects first, then the client: nothing tells
        # them apart, so neither is used; the transfer says why.
        _, port = client.pasv()
        thief = client.data(port)
        own = client.data(port)
        assert dropped(thief)  # dropped when the second came, having received nothing
        assert dropped(own)
        assert client.cmd("RETR secret.bin")[0] == 150
        code, text = client.reply()
        assert code == 425 and "Two data connections came from your address" in text, text
        # Once the transfer has the client's connection (its 150 says so), a second one
        # is refused and the transfer goes on: a late thief cannot take its place, and
        # gets nothing. (The file is bigger than the sockets' buffers, and unread yet:
        # the transfer is still running.)
        _, port = client.pasv()
        own = client.data(port)
        assert client.cmd("RETR big.bin")[0] == 150
        assert refused(port)
        assert read_all(own) == BIG
        assert client.reply()[0] == 226
    assert "refused two FTP data connections from 127.0.0.1 for one passive set-up" in daemon.output()
