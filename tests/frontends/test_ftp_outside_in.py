"""FTP as users' real clients drive it, for behaviour found by trying the product
from outside: Python's ftplib, curl and lftp against a live daemon."""

from __future__ import annotations

import contextlib
import ftplib
import io
import os
import socket
import subprocess
import time

import pytest
from OpenSSL import SSL

from ..api_client import signed_in
from ..helpers import ADMIN_PASSWORD, wait_for
from .ftp_raw import RawFTP, read_all

PASSWORD = "user-password-1"


@pytest.fixture(scope="module")
def user(daemon) -> str:
    daemon.add_profile("outsider")
    home = daemon.home("outsider")
    home.mkdir(parents=True, exist_ok=True)
    return "outsider"


@pytest.fixture
def client(daemon, user):
    f = ftplib.FTP(timeout=20)
    f.connect("127.0.0.1", daemon.ftp_port)
    f.login(user, PASSWORD)
    yield f
    f.close()


def aborted(client: ftplib.FTP) -> bool:
    """ABOR by ftplib: the transfer's 426, then ABOR's own 226 (which abort() leaves unread)."""
    reply = client.abort()
    if reply.startswith("426"):
        reply = client.getresp()
    return reply.startswith("226")


def test_ftplib_abort_stops_a_download(daemon, user, client):
    """ftplib's abort() sends the whole "ABOR\\r\\n" as urgent data, so its last byte is
    the urgent one; the server must still read the line (it hung until the stall
    timeout, then answered 426 "No data moved for 300 seconds")."""
    (daemon.home(user) / "large.bin").write_bytes(os.urandom(32 << 20))
    conn = client.transfercmd("RETR large.bin")
    conn.recv(4096)  # under way; we read no more, so it stalls
    assert aborted(client)
    conn.close()
    assert client.sendcmd("NOOP").startswith("200")


def test_ftplib_abort_stops_an_upload_and_leaves_nothing(daemon, user, client):
    home = daemon.home(user)
    conn = client.transfercmd("STOR aborted.bin")
    conn.sendall(os.urandom(1 << 20))
    assert aborted(client)
    conn.close()
    assert client.sendcmd("NOOP").startswith("200")
    assert not (home / "aborted.bin").exists()


def test_an_ftps_upload_closed_without_reading_anything_is_saved(daemon, user):
    """lftp (and FileZilla) never read an upload's data connection: under TLS 1.3 the
    session tickets OpenSSL sends after the handshake stayed unread, so closing made the
    client's kernel reset the connection and drop the upload's unsent end (426, "The
    data connection broke before the upload finished."; lftp retried, in active mode
    often). The tickets now wait until the server sends something itself."""
    home = daemon.home(user)
    payload = os.urandom(8 << 20)
    with RawFTP(daemon.ftp_port) as ftp:
        control = ftp.start_pyopenssl_tls()
        ftp.login(user, PASSWORD)
        assert ftp.cmd("PBSZ 0")[0] == 200 and ftp.cmd("PROT P")[0] == 200
        sock = ftp.data(ftp.epsv())
        sock.settimeout(None)
        data = SSL.Connection(control.get_context(), sock)
        data.set_session(control.get_session())  # as lftp, the control connection's session
        data.set_connect_state()
        data.do_handshake()
        assert data.get_protocol_version_name() == "TLSv1.3"
        assert ftp.cmd("STOR unread.bin")[0] == 150
        time.sleep(0.1)  # what the server sends after the handshake has arrived
        data.sendall(payload)
        data.shutdown()  # close_notify, as lftp does, reading nothing
        sock.close()
        code, text = ftp.reply()
        assert code == 226, text
    assert (home / "unread.bin").read_bytes() == payload


def test_ftps_downloads_and_listings_still_resume_and_end_cleanly_under_tls13(daemon, user):
    """The held-back tickets go out before a download's first bytes: the client reads them."""
    home = daemon.home(user)
    (home / "down.bin").write_bytes(b"0123456789" * 100_000)
    with RawFTP(daemon.ftp_port) as ftp:
        ftp.start_tls()
        ftp.login(user, PASSWORD)
        assert ftp.cmd("PBSZ 0")[0] == 200 and ftp.cmd("PROT P")[0] == 200
        for _ in range(2):
            data = ftp.tls_data(ftp.epsv())
            assert data.version() == "TLSv1.3" and data.session_reused
            assert ftp.cmd("RETR down.bin")[0] == 150
            assert read_all(data) == b"0123456789" * 100_000
            assert ftp.reply()[0] == 226
        data = ftp.tls_data(ftp.epsv())
        assert ftp.cmd("NLST")[0] == 150
        assert b"down.bin" in read_all(data).split(b"\r\n")
        assert ftp.reply()[0] == 226
        (home / "empty.txt").write_bytes(b"")
        data = ftp.tls_data(ftp.epsv())
        assert ftp.cmd("RETR empty.txt")[0] == 150
        assert read_all(data) == b""
        assert ftp.reply()[0] == 226


def test_rest_applies_only_to_the_transfer_right_after_it(daemon, user, client):
    """A REST left over (the client listed the folder instead, or its RETR came before
    any PASV and was refused) must not cut a later download short."""
    client.storbinary("STOR digits.txt", io.BytesIO(b"0123456789"))
    assert client.sendcmd("REST 5").startswith("350")
    client.nlst()
    out = io.BytesIO()
    client.retrbinary("RETR digits.txt", out.write)
    assert out.getvalue() == b"0123456789"

    assert client.sendcmd("REST 5").startswith("350")
    with pytest.raises(ftplib.error_temp, match="^425"):
        client.sendcmd("RETR digits.txt")  # no PASV first
    out = io.BytesIO()
    client.retrbinary("RETR digits.txt", out.write)
    assert out.getvalue() == b"0123456789"

    # PASV, TYPE and the like between REST and RETR keep it (clients send them in any order)
    assert client.sendcmd("REST 5").startswith("350")
    client.voidcmd("TYPE I")
    conn = client.transfercmd("RETR digits.txt")
    assert read_all(conn) == b"56789"
    client.voidresp()


def test_a_deactivated_profiles_open_session_can_no_longer_upload(daemon):
    """An admin who deactivates a leaver through the API cuts their open session off at
    once, with the reason (it kept the rights it signed in with)."""
    profile_id = daemon.add_profile("leaver")
    daemon.home("leaver").mkdir(parents=True, exist_ok=True)
    f = ftplib.FTP(timeout=20)
    f.connect("127.0.0.1", daemon.ftp_port)
    f.login("leaver", PASSWORD)
    try:
        # as an admin does it: through the API
        assert (
            signed_in(daemon, "admin", ADMIN_PASSWORD).patch(f"profiles/{profile_id}/", {"active": False}).status == 200
        )
        with pytest.raises(
            ftplib.error_temp, match="^421 This account is disabled. Ask your administrator to enable it."
        ):
            f.getresp()  # sent before the server hung up, unasked
        with pytest.raises(ftplib.all_errors):
            f.storbinary("STOR after.txt", io.BytesIO(b"still here"))
    finally:
        f.close()
    assert not (daemon.home("leaver") / "after.txt").exists()


def test_a_deleted_profiles_upload_in_flight_is_aborted_and_not_saved(daemon):
    """Deleting a profile ends its open session mid-upload: 421 with the reason, and
    neither the file nor its temporary copy is left behind."""
    profile_id = daemon.add_profile("midway")
    home = daemon.home("midway")
    home.mkdir(parents=True, exist_ok=True)
    with RawFTP(daemon.ftp_port) as ftp:
        ftp.login("midway", PASSWORD)
        conn = ftp.data(ftp.epsv())
        assert ftp.cmd("STOR partial.bin")[0] == 150
        conn.sendall(os.urandom(1 << 20))
        deadline = time.monotonic() + 10
        while not any(home.iterdir()) and time.monotonic() < deadline:
            time.sleep(0.02)  # the temporary file is there: the upload is under way
        assert signed_in(daemon, "admin", ADMIN_PASSWORD).delete(f"profiles/{profile_id}/").status == 204
        replies = []
        with contextlib.suppress(EOFError, OSError):
            while True:
                replies.append(ftp.reply())
        conn.close()
    assert (421, "Your account was deleted by an administrator.") in replies, replies
    # the aborted upload's temporary file is removed on a worker thread, which may end
    # after the client has read the 421 (listings never show it meanwhile)
    wait_for(lambda: list(home.iterdir()) == [], timeout=20)


def test_a_withdrawn_upload_permission_refuses_the_next_upload_on_an_open_session(daemon):
    """Permissions an admin changes hold from the open session's next command; the
    session itself goes on."""
    profile_id = daemon.add_profile("narrowed")
    home = daemon.home("narrowed")
    home.mkdir(parents=True, exist_ok=True)
    (home / "kept.txt").write_bytes(b"still readable")
    f = ftplib.FTP(timeout=20)
    f.connect("127.0.0.1", daemon.ftp_port)
    f.login("narrowed", PASSWORD)
    try:
        f.storbinary("STOR before.txt", io.BytesIO(b"allowed"))
        admin = signed_in(daemon, "admin", ADMIN_PASSWORD)
        assert admin.patch(f"profiles/{profile_id}/", {"permissions": ["list", "download"]}).status == 200
        with pytest.raises(ftplib.error_perm, match="^550 You may not upload files"):
            f.storbinary("STOR after.txt", io.BytesIO(b"refused"))
        out = io.BytesIO()
        f.retrbinary("RETR kept.txt", out.write)
        assert out.getvalue() == b"still readable"
    finally:
        f.close()
    assert (home / "before.txt").read_bytes() == b"allowed"
    assert not (home / "after.txt").exists()


def test_an_organisation_the_operator_marks_unpaid_has_its_open_sessions_ended(daemon):
    """The operator's PATCH god/organisations/{id}/ {"status": "payment_missing"} ends
    its members' open sessions with the reason sign-in would give."""
    admin = signed_in(daemon, "admin", ADMIN_PASSWORD)
    created = admin.post("god/organisations/", {"name": "Unpaid Ltd", "subdomain": "unpaid",
                                                "admin": {"username": "unpaidboss", "email": "u@example.com",
                                                          "password": "unpaid-pass-12"}})  # fmt: skip
    assert created.status == 201, created.body
    f = ftplib.FTP(timeout=20)
    f.connect("127.0.0.1", daemon.ftp_port)
    f.login("unpaidboss", "unpaid-pass-12")
    try:
        assert f.sendcmd("NOOP").startswith("200")
        changed = admin.patch(f"god/organisations/{created.body['id']}/", {"status": "payment_missing"})
        assert changed.status == 200, changed.body
        with pytest.raises(ftplib.error_temp, match="^421 Organisation payment missing"):
            f.getresp()
    finally:
        f.close()


def test_nlst_of_a_pattern_in_a_folder_gives_paths_a_client_can_fetch(daemon, user, client):
    """`mget sub/*.txt` (and ftplib scripts) RETR what NLST returns: bare names made it
    fetch from the wrong folder (or fail with 550)."""
    home = daemon.home(user)
    (home / "globbed").mkdir(exist_ok=True)
    (home / "globbed" / "a.txt").write_bytes(b"in the folder")
    (home / "globbed" / "b.bin").write_bytes(b"not matched")
    (home / "a.txt").write_bytes(b"at the top")
    assert client.nlst("globbed/*.txt") == ["globbed/a.txt"]
    out = io.BytesIO()
    client.retrbinary("RETR " + client.nlst("globbed/*.txt")[0], out.write)
    assert out.getvalue() == b"in the folder"
    assert client.nlst("/globbed/*.txt") == ["/globbed/a.txt"]
    # unchanged: a folder's names, and a pattern in the working folder
    assert client.nlst("globbed") == ["a.txt", "b.bin"]
    client.cwd("globbed")
    assert client.nlst("*.txt") == ["a.txt"]


def test_stat_during_a_transfer_is_answered_at_once(daemon, user):
    """RFC 959: STAT sent during a transfer reports on it (it waited for the transfer's end)."""
    (daemon.home(user) / "slow.bin").write_bytes(os.urandom(32 << 20))
    with RawFTP(daemon.ftp_port) as ftp:
        ftp.login(user, PASSWORD)
        conn = ftp.data(ftp.epsv())
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        assert ftp.cmd("RETR slow.bin")[0] == 150
        conn.recv(4096)  # under way; we read no more, so it stalls
        code, text = ftp.cmd("STAT")
        assert code == 211 and "a RETR is running" in text, text
        ftp.send("ABOR")
        assert ftp.reply()[0] == 426
        assert ftp.reply()[0] == 226
        conn.close()
        code, text = ftp.cmd("STAT")
        assert code == 211 and "no transfer running" in text, text


@pytest.mark.requires("lftp")
def test_list_dash_d_shows_the_folder_itself(daemon, user):
    """lftp's `ls -d shown` sends LIST -d shown: the folder's own line, as ls -d gives
    (it listed what was inside)."""
    home = daemon.home(user)
    (home / "shown").mkdir(exist_ok=True)
    (home / "shown" / "inside.txt").write_bytes(b"x")
    script = "set ftp:ssl-allow no; set net:max-retries 1; ls -d shown; echo ---; ls shown; bye"
    result = subprocess.run(
        ["lftp", "-u", f"{user},{PASSWORD}", "-p", str(daemon.ftp_port), "-e", script, "127.0.0.1"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stderr
    itself, inside = result.stdout.split("---\n")
    assert itself.startswith("d") and itself.split()[-1] == "shown" and "inside.txt" not in itself, itself
    assert inside.split()[-1] == "inside.txt", inside


def test_a_download_the_client_stops_is_logged_with_how_much_went_out(daemon, user):
    """The audit row of a download cut short says how much of the file left, not that
    the file was downloaded."""
    (daemon.home(user) / "cut-short.bin").write_bytes(os.urandom(32 << 20))
    with RawFTP(daemon.ftp_port) as ftp:
        ftp.login(user, PASSWORD)
        conn = ftp.data(ftp.epsv())
        assert ftp.cmd("RETR cut-short.bin")[0] == 150
        assert len(conn.recv(65536)) > 0
        conn.close()  # the client gives up after the first bytes
        assert ftp.reply()[0] == 426
    deadline = time.monotonic() + 10
    while not (rows := [r for r in daemon.logs("download") if r["path"] == "/cut-short.bin"]):
        assert time.monotonic() < deadline, "no audit row"
        time.sleep(0.05)
    [row] = rows
    assert 0 < row["bytes"] < 32 << 20
    assert row["message"].endswith(" of 33.6 MB) over FTP"), row["message"]


def test_ftplib_mlsd_mdtm_size_rest_retr_and_appe(daemon, user, client):
    """What Python scripts use: APPE onto a file, SIZE, MDTM, MLSD facts, REST before RETR."""
    name = "résumé #1 100%.bin"
    data = os.urandom(300_000)
    client.storbinary(f"STOR {name}", io.BytesIO(data[:100_000]))
    client.storbinary(f"APPE {name}", io.BytesIO(data[100_000:]))
    on_disk = daemon.home(user) / name
    assert on_disk.read_bytes() == data
    assert client.size(name) == len(data)
    stamp = time.strftime("%Y%m%d%H%M%S", time.gmtime(on_disk.stat().st_mtime))
    assert client.voidcmd(f"MDTM {name}") == f"213 {stamp}"
    facts = dict(client.mlsd("/", facts=["type", "size", "modify"]))
    assert facts[name] == {"type": "file", "size": str(len(data)), "modify": stamp}
    chunks = []
    client.retrbinary(f"RETR {name}", chunks.append, rest=123_457)
    assert b"".join(chunks) == data[123_457:]


def test_feat_help_and_the_commands_answered_agree(daemon, user):
    """Every feature FEAT announces is a command answered, every command HELP lists is
    answered (not 502), and what is refused as not implemented is in neither: STOU
    (store under a unique name) is not offered, and says so."""
    with RawFTP(daemon.ftp_port) as ftp:
        ftp.login(user, PASSWORD)
        code, text = ftp.cmd("FEAT")
        assert code == 211
        features = [line.strip() for line in text.splitlines()[1:-1]]
        code, text = ftp.cmd("HELP")
        assert code == 214
        listed = set(text.splitlines()[1].split())
        named = {f.split()[0] for f in features if f not in ("TVFS", "UTF8")}  # TVFS: path syntax; UTF8: OPTS
        named |= {"MLSD"} if "MLST" in named else set()
        assert named <= listed, named - listed
        assert {"XCWD", "XCUP", "XPWD", "XMKD", "XRMD"} <= listed  # RFC 1123's aliases, answered
        # without an argument; PASV and EPSV last, so that LIST and the like wait for no data connection
        for command in [*sorted(listed - {"QUIT", "PASV", "EPSV"}), "PASV", "EPSV"]:
            code, text = ftp.cmd(command)
            assert code not in (500, 502), f"{command} is in HELP but answered {code} {text}"
        for command in ("STOU", "STOU name.txt", "SMNT /", "ACCT x", "REIN", "LPRT 1", "LPSV", "SITE CHMOD 600 x"):
            code, text = ftp.cmd(command)
            assert code == 502 and ("not implemented" in text or "not supported" in text), (command, code, text)
            assert command.split()[0] not in listed | named
        assert ftp.cmd("OPTS UTF8 ON")[0] == 200
        assert ftp.cmd("QUIT")[0] == 221


def test_listings_of_a_folder_bigger_than_a_batch_are_whole_and_in_order(daemon, user, client):
    """LIST, MLSD and NLST of a big folder are sent a batch of entries at a time while
    the next batch is read: every entry comes, once, in name order, with its size."""
    folder = daemon.home(user) / "many"
    folder.mkdir(exist_ok=True)
    names = [f"f{i:05d}-{'é' if i % 7 else 'e'}.txt" for i in range(2_345)]
    for i, name in enumerate(names):
        (folder / name).write_bytes(b"x" * (i % 50))
    (folder / "sub").mkdir(exist_ok=True)
    expected = sorted([*names, "sub"])
    sizes = {name: i % 50 for i, name in enumerate(names)}
    client.cwd("/many")
    lines: list[str] = []
    client.retrlines("LIST", lines.append)
    assert [line.split(None, 8)[-1] for line in lines] == expected
    assert all(int(line.split()[4]) == sizes[line.split(None, 8)[-1]] for line in lines if line[0] == "-")
    assert [line[0] for line in lines].count("d") == 1
    mlsd = list(client.mlsd())
    assert [name for name, _ in mlsd] == expected
    assert all(int(facts["size"]) == sizes[name] for name, facts in mlsd if facts["type"] == "file")
    assert client.nlst() == expected
    assert client.nlst("f0000*") == [name for name in expected if name.startswith("f0000")]
