"""FTP at the protocol level, over a raw socket: refusals real clients never
provoke (bounce, foreign passive peers, over-long lines, failed sign-ins),
replies, listings and aborts. Against a live daemon."""

from __future__ import annotations

import calendar
import os
import select
import socket
import sqlite3
import time

import pytest

from appliance.core.audit import ROWS_BEHIND
from appliance.core.auth import ATTEMPTS_PER_CONNECTION
from appliance.core.files import Entry
from appliance.errors import (
    AlreadyExists,
    AuthenticationFailed,
    Invalid,
    NotEmpty,
    NotFound,
    PermissionDenied,
    QuotaExceeded,
    Unavailable,
)
from appliance.frontends.ftp.errors import INTERNAL_ERROR, ftp_reply
from appliance.frontends.ftp.listing import MLST_FACTS, SIX_MONTHS, Facts, LsLines, mdtm, mlst_facts, time_val
from appliance.frontends.ftp.protocol import ls_line, quote_path

from ..helpers import ADMIN_PASSWORD, wait_for
from .ftp_raw import RawFTP, read_all

PASSWORD = "user-password-1"


@pytest.fixture(scope="module")
def user(daemon) -> str:
    """A profile with every permission and its home holding a file and a folder."""
    daemon.add_profile("rawuser")
    home = daemon.home("rawuser")
    home.mkdir(parents=True, exist_ok=True)
    (home / "hello.txt").write_bytes(b"hello world\n")
    (home / "docs").mkdir(exist_ok=True)
    (home / "docs" / "a.txt").write_bytes(b"a")
    return "rawuser"


@pytest.fixture
def ftp(daemon, user):
    with RawFTP(daemon.ftp_port) as client:
        client.login(user, PASSWORD)
        yield client


def temp_files(folder) -> list[str]:
    return [p.name for p in folder.rglob(".~upload-*")]


def wait_until(condition, timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


# -- the one error mapping ------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (NotFound("No such file or folder: /x"), 550),
        (PermissionDenied("You may not delete files (/x)."), 550),
        (QuotaExceeded("Your storage quota of 1.0 KB is used up"), 552),
        (AlreadyExists("/x already exists."), 550),
        (Invalid("Names starting with '.~upload-' are reserved"), 553),
        (NotEmpty("The folder /x is not empty."), 550),
        (Unavailable("The storage is full"), 451),
        (AuthenticationFailed("Organisation payment missing"), 530),
    ],
)
def test_core_errors_map_to_ftp_codes_with_their_message(error, code):
    assert ftp_reply(error) == (code, error.message)


def test_unexpected_errors_become_451_internal_error():
    assert ftp_reply(RuntimeError("boom")) == (451, INTERNAL_ERROR)


def test_list_lines_look_like_ls_and_quotes_are_doubled():
    line = ls_line("café.csv", "file", 1234, 0o100640, 1_700_000_000, 1_700_000_000 + 60)
    assert line.startswith(b"-rw-r-----")
    assert b" 1234 Nov 14 22:13 " in line
    assert line.endswith("café.csv".encode())
    old = ls_line("d", "dir", 0, 0o040750, 1_500_000_000, 1_700_000_000)
    assert old.startswith(b"drwxr-x---") and b" 2017 d" in old
    assert quote_path('/a "b"') == '"/a ""b"""'


def test_batch_formats_make_the_lines_one_entry_at_a_time_would():
    """LsLines and Facts.lines (a listing a batch at a time, with what lines share made
    once) give each line as ls_line and Facts give it alone, byte for byte."""
    now = 1_700_000_000.5
    entries = [
        Entry("café.csv", "file", 1234, now - 60.5, 0.0, 0o100640),
        Entry("same-second", "file", 1, now - 60.2, 0.0, 0o100640),
        Entry("old", "dir", 0, 1_500_000_000.0, 0.0, 0o040750),
        Entry("edge-recent", "file", 5, now - SIX_MONTHS + 0.3, 0.0, 0o100600),  # one second,
        Entry("edge-old", "file", 5, now - SIX_MONTHS - 0.3, 0.0, 0o100600),  # two dates
        Entry("before-1970", "file", 7, -1.5, 0.0, 0o100644),
        Entry("before-1970-too", "file", 7, -1.0, 0.0, 0o100644),
        Entry("future", "file", 5, now + SIX_MONTHS + 10, 0.0, 0o100600),
        Entry("link", "link", 0, now, 0.0, 0o120777),
        Entry("fifo", "other", 0, now, 0.0, 0o010644),
        Entry("bad\udce9name", "file", 7, now, 0.0, 0o100644),
        Entry("cr\rname", "file", 7, now, 0.0, 0o100644),
    ]
    listable = [e for e in entries if "\r" not in e.name]
    expected = b"".join(ls_line(e.name, e.kind, e.size, e.mode, e.mtime, now) + b"\r\n" for e in listable)
    assert LsLines(now)(entries) == expected
    assert LsLines(now)(entries[:4]) + LsLines(now)(entries[4:]) == expected
    lines = LsLines(now)
    assert lines(entries[:4]) + lines(entries[4:]) == expected  # what the first batch made serves the next
    assert lines(entries) == expected
    perms = frozenset({"list", "download", "delete"})
    for chosen in (MLST_FACTS, ("type", "perm"), ("size",), ("modify", "size"), ()):  # OPTS MLST's choices
        facts = Facts(perms, chosen)
        expected = b"".join(
            f"{mlst_facts(e.kind, e.size, e.mtime, perms, chosen)} {e.name}\r\n".encode("utf-8", "surrogateescape")
            for e in listable
        )
        assert facts.lines(entries) == expected, chosen
        assert facts.lines(entries) == expected, chosen  # again, with what it made the first time


# -- greeting, features, simple commands ---------------------------------------------------


def test_greeting_features_and_simple_commands(daemon, ftp):
    assert ftp.greeting[0] == 220
    assert "Twisted" not in ftp.greeting[1]
    code, text = ftp.cmd("FEAT")
    assert code == 211
    features = {line.strip() for line in text.splitlines()[1:-1]}
    for feature in ("UTF8", "SIZE", "MDTM", "REST STREAM", "EPSV", "PASV"):
        assert feature in features
    assert any(f.startswith("MLST ") for f in features)
    assert {"AUTH TLS", "PBSZ", "PROT"} <= features  # explicit FTPS (test_ftps.py)
    assert ftp.cmd("OPTS UTF8 ON")[0] == 200
    assert ftp.cmd("SYST")[0] == 215
    assert ftp.cmd("NOOP")[0] == 200
    assert ftp.cmd("TYPE A")[0] == 200
    assert ftp.cmd("TYPE I")[0] == 200
    assert ftp.cmd("SITE CHMOD 777 hello.txt")[0] == 502
    assert ftp.cmd("AUTH TLS")[0] == 503  # TLS must start before signing in
    assert ftp.cmd("FROB")[0] == 502
    assert ftp.cmd("PWD") == (257, '"/" is the current folder.')
    assert ftp.cmd("QUIT")[0] == 221
    assert ftp.closed()


def test_commands_before_sign_in_are_refused_and_anonymous_is_not_a_login(daemon):
    with RawFTP(daemon.ftp_port) as ftp:
        assert ftp.cmd("PWD")[0] == 530
        assert ftp.cmd("LIST")[0] == 530
        assert ftp.cmd("PASS x")[0] == 503
        assert ftp.cmd("USER anonymous")[0] == 331
        code, text = ftp.cmd("PASS guest@example.com")
        assert code == 530 and "Invalid username or password" in text
        assert ftp.cmd("PWD")[0] == 530


def test_size_mdtm_mlst_and_cwd(daemon, user, ftp):
    home = daemon.home(user)
    stamp = calendar.timegm((2021, 3, 4, 5, 6, 7))
    os.utime(home / "hello.txt", (stamp, stamp))
    assert ftp.cmd("SIZE hello.txt") == (213, "12")
    assert ftp.cmd("MDTM hello.txt") == (213, "20210304050607")
    assert ftp.cmd("SIZE docs")[0] == 550
    assert ftp.cmd("SIZE missing.txt")[0] == 550
    code, text = ftp.cmd("MLST hello.txt")
    assert code == 250
    facts = text.splitlines()[1].strip()
    assert facts.startswith("type=file;size=12;modify=20210304050607;perm=")
    assert facts.endswith(" /hello.txt")
    assert ftp.cmd("CWD docs")[0] == 250
    assert ftp.cmd("PWD")[1].startswith('"/docs"')
    assert ftp.cmd("SIZE a.txt") == (213, "1")
    assert ftp.cmd("CDUP")[0] == 250
    assert ftp.cmd("PWD")[1].startswith('"/"')
    assert ftp.cmd("CWD hello.txt")[0] >= 500


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("20210304050607", calendar.timegm((2021, 3, 4, 5, 6, 7))),
        ("19700101000000", 0.0),
        ("20240229235959", calendar.timegm((2024, 2, 29, 23, 59, 59))),
        ("20210304050607.5", calendar.timegm((2021, 3, 4, 5, 6, 7)) + 0.5),
        ("20210304050607.125", calendar.timegm((2021, 3, 4, 5, 6, 7)) + 0.125),
    ],
)
def test_time_val_reads_rfc3659_times_in_utc(text, seconds):
    assert time_val(text) == seconds
    assert mdtm(time_val(text)) == text[:14]


@pytest.mark.parametrize(
    "text",
    ["", "2021030405060", "202103040506078", "20211304050607", "20230229050607", "20210304240607",
     "20210304056007", "2021-3-4050607", " 2021030405060", "２０２１０３０４０５０６０７", "20210304050607.",
     "20210304050607.x", "20210304050607.1234567890", "20210304050607 "],
)  # fmt: skip
def test_time_val_refuses_what_is_not_a_time(text):
    with pytest.raises(ValueError):
        time_val(text)


def test_mfmt_sets_the_modification_time(daemon, user, ftp):
    home = daemon.home(user)
    (home / "stamped.txt").write_bytes(b"x")
    assert ftp.cmd("MFMT 20200102030405 stamped.txt") == (213, "Modify=20200102030405; /stamped.txt")
    assert (home / "stamped.txt").stat().st_mtime == calendar.timegm((2020, 1, 2, 3, 4, 5))
    assert ftp.cmd("MDTM stamped.txt") == (213, "20200102030405")
    assert ftp.cmd("MFMT 20200102030405.25 stamped.txt")[0] == 213
    assert (home / "stamped.txt").stat().st_mtime == calendar.timegm((2020, 1, 2, 3, 4, 5)) + 0.25
    code, text = ftp.cmd("MFMT 20201302030405 stamped.txt")
    assert (code, text) == (501, "MFMT needs a time as YYYYMMDDHHMMSS (UTC) and a path.")
    assert ftp.cmd("MFMT 20200102030405 missing.txt")[0] == 550
    (home / "stamped.txt").unlink()


def test_mlsd_and_nlst_without_argument(daemon, user, ftp):
    port = ftp.epsv()
    conn = ftp.data(port)
    assert ftp.cmd("MLSD")[0] == 150
    listing = read_all(conn).decode()
    assert ftp.reply()[0] == 226
    lines = dict(line.split(" ", 1)[::-1] for line in listing.splitlines())
    assert lines["docs"].startswith("type=dir;")
    assert lines["hello.txt"].startswith("type=file;size=12;")
    assert "perm=" in lines["hello.txt"] and "r" in lines["hello.txt"].split("perm=")[1]

    port = ftp.epsv()
    conn = ftp.data(port)
    assert ftp.cmd("NLST")[0] == 150
    names = read_all(conn).decode().split("\r\n")
    assert ftp.reply()[0] == 226
    assert "hello.txt" in names and "docs" in names

    port = ftp.epsv()
    conn = ftp.data(port)
    assert ftp.cmd("NLST docs")[0] == 150
    assert read_all(conn) == b"a.txt\r\n"
    assert ftp.reply()[0] == 226


def test_cwd_up_from_home_and_paths_outside_are_refused(daemon, user, ftp):
    code, text = ftp.cmd("CWD ..")
    assert code == 550 and "outside your home" in text
    assert ftp.cmd("PWD")[1].startswith('"/"')
    for path in ("../../etc/passwd", "/etc/passwd", "/../../../etc/passwd", "docs/../../x"):
        ftp.epsv()
        code, _ = ftp.cmd(f"RETR {path}")
        assert code == 550, path
    assert ftp.cmd("SIZE /etc/passwd")[0] == 550


def test_port_and_eprt_only_to_the_clients_own_address_and_unprivileged_ports(daemon, ftp):
    code, text = ftp.cmd("PORT 127,0,0,2,200,10")
    assert code == 504 and "your own address" in text
    code, text = ftp.cmd("PORT 10,1,2,3,200,10")
    assert code == 504
    code, text = ftp.cmd("PORT 127,0,0,1,0,80")
    assert code == 504 and "below 1024" in text
    assert ftp.cmd("EPRT |1|10.0.0.1|5000|")[0] == 504
    assert ftp.cmd("EPRT |1|127.0.0.1|21|")[0] == 504
    assert ftp.cmd("PORT 1,2,3")[0] == 501
    assert ftp.cmd("EPRT garbage")[0] == 501

    # To our own address and a high port it works (active mode).
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]
        assert ftp.cmd(f"PORT 127,0,0,1,{port >> 8},{port & 255}")[0] == 200
        assert ftp.cmd("RETR hello.txt")[0] == 150
        conn, _ = listener.accept()
        conn.settimeout(20)
        assert read_all(conn) == b"hello world\n"
        assert ftp.reply()[0] == 226


def test_passive_ports_come_from_the_range_on_the_control_address(daemon, ftp):
    low, high = daemon.passive
    host, port = ftp.pasv()
    assert host == "127.0.0.1"
    assert low <= port <= high
    # Bound to the control connection's address only, not to every interface.
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.2", port), timeout=5).close()
    assert low <= ftp.epsv() <= high


def test_passive_connection_from_another_address_is_refused(daemon, user, ftp):
    _, port = ftp.pasv()
    stranger = ftp.data(port, source="127.0.0.2")
    stranger.settimeout(10)
    try:
        assert stranger.recv(100) == b""
    except ConnectionResetError:
        pass
    stranger.close()
    # The client's own data connection is still accepted afterwards.
    conn = ftp.data(port)
    assert ftp.cmd("RETR hello.txt")[0] == 150
    assert read_all(conn) == b"hello world\n"
    assert ftp.reply()[0] == 226
    assert "refused an FTP data connection from 127.0.0.2" in daemon.output()


def refused(port: int) -> bool:
    """A connection to `port` gets nothing: refused, or closed (or reset) at once."""
    try:
        conn = socket.create_connection(("127.0.0.1", port), timeout=10)
    except ConnectionRefusedError:
        return True
    try:
        return conn.recv(100) == b""
    except ConnectionResetError:
        return True
    finally:
        conn.close()


def test_the_passive_port_is_announced_again_and_closed_when_unused(daemon, user):
    """A session's next PASV or EPSV right after a transfer announces the same port
    (not a new listening socket per file); between set-ups the port takes no
    connection, and it closes once the session has not used it for a while, or ends."""
    with RawFTP(daemon.ftp_port) as ftp:
        ftp.login(user, PASSWORD)
        _, port = ftp.pasv()
        for _ in range(3):
            conn = ftp.data(port)
            assert ftp.cmd("RETR hello.txt")[0] == 150
            assert read_all(conn) == b"hello world\n"
            assert ftp.reply()[0] == 226
            assert refused(port)  # no set-up waits for a connection
            assert ftp.epsv() == port
        conn = ftp.data(port)
        assert ftp.cmd("RETR hello.txt")[0] == 150
        assert read_all(conn) == b"hello world\n"
        assert ftp.reply()[0] == 226
        assert wait_until(lambda: refused(port) and not listening(port))  # unused: closed
        assert ftp.cmd("NOOP")[0] == 200
        _, port = ftp.pasv()
    assert wait_until(lambda: not listening(port))  # the session ended: closed


def listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=10).close()
    except ConnectionRefusedError:
        return False
    return True


def test_an_over_long_command_line_is_answered_500_and_dropped(daemon, ftp):
    ftp.send(b"NOOP " + b"x" * 20000)
    code, text = ftp.reply()
    assert code == 500 and "too long" in text
    assert ftp.closed()


def test_a_command_without_its_argument_or_with_one_too_many_is_refused_501(daemon, ftp):
    assert ftp.cmd("SIZE") == (501, "SIZE needs an argument.")
    assert ftp.cmd("DELE")[0] == 501
    assert ftp.cmd("PWD extra") == (501, "PWD: wrong number of arguments.")
    assert ftp.cmd("CDUP now")[0] == 501
    assert ftp.cmd("SIZE hello.txt") == (213, "12")  # the session goes on
    assert ftp.cmd("LIST")[0] == 425  # an optional argument may be left out (no data connection yet)


def test_invalid_utf8_is_refused(daemon, ftp):
    assert ftp.cmd(b"SIZE caf\xe9")[0] == 501
    assert ftp.cmd("NOOP")[0] == 200


def test_failed_sign_ins_are_bounded_per_connection(daemon):
    daemon.add_profile("guesser", "right-password-1")
    # From an address of its own, so the core's throttle does not slow other tests.
    with RawFTP(daemon.ftp_port, source="127.0.0.3", timeout=60) as ftp:
        for attempt in range(ATTEMPTS_PER_CONNECTION):
            assert ftp.cmd("USER guesser")[0] == 331
            code, _ = ftp.cmd(f"PASS wrong-{attempt}")
            assert code == 530
        code, text = ftp.reply()
        assert code == 421 and "Too many failed sign-ins" in text
        assert ftp.closed()
    assert len([row for row in daemon.logs("login_failed") if row["username"] == "guesser"]) == ATTEMPTS_PER_CONNECTION


def test_abor_stops_an_upload_and_leaves_nothing(daemon, user, ftp):
    home = daemon.home(user)
    port = ftp.epsv()
    conn = ftp.data(port)
    assert ftp.cmd("STOR aborted.bin")[0] == 150
    conn.sendall(os.urandom(3 << 20))
    assert wait_until(lambda: temp_files(home))
    ftp.send("ABOR")
    assert ftp.reply()[0] == 426
    assert ftp.reply()[0] == 226
    conn.close()
    assert wait_until(lambda: not temp_files(home))
    assert not (home / "aborted.bin").exists()
    assert ftp.cmd("NOOP")[0] == 200


def test_abor_after_a_telnet_synch_stops_a_download(daemon, user, ftp):
    home = daemon.home(user)
    (home / "large.bin").write_bytes(os.urandom(32 << 20))
    port = ftp.epsv()
    conn = ftp.data(port)
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    assert ftp.cmd("RETR large.bin")[0] == 150
    conn.recv(4096)  # the transfer is under way; we read no more, so it stalls
    ftp.sock.sendall(b"\xff\xf4\xff")  # IAC IP, then IAC DM whose DM went as urgent data
    ftp.sock.send(b"\xf2", socket.MSG_OOB)
    ftp.send("ABOR")
    code, text = ftp.reply()
    assert code == 426 and "aborted" in text
    assert ftp.reply()[0] == 226
    conn.close()
    assert ftp.cmd("NOOP")[0] == 200


class HeldDatabase:
    """The database's write lock held by the test (readers go on: WAL), so that the
    daemon's audit rows must wait for it."""

    def __init__(self, daemon):
        self._conn = sqlite3.connect(daemon.data_dir / "appliance.db", timeout=30, isolation_level=None)

    def __enter__(self):
        self._conn.execute("BEGIN IMMEDIATE")
        return self

    def __exit__(self, *exc):
        self._conn.execute("ROLLBACK")
        self._conn.close()


def no_answer(ftp, seconds: float = 0.5) -> bool:
    readable, _, _ = select.select([ftp.sock], [], [], seconds)
    return not readable


def download(ftp, name: str, data: bytes) -> None:
    conn = ftp.data(ftp.epsv())
    assert ftp.cmd(f"RETR {name}")[0] == 150
    assert read_all(conn) == data
    code, text = ftp.reply()
    assert code == 226 and f"{len(data)} bytes" in text


@pytest.mark.parametrize("then", ["DELE audited.bin", "MKD made", "STOR other.bin", "QUIT"])
def test_a_download_is_answered_before_its_audit_row_and_later_rows_and_the_goodbye_wait_for_it(
    daemon, user, ftp, then
):
    """226 goes out once the client has every byte; the audit row is written after it.
    Meanwhile the client may set up its next transfer (EPSV, TYPE, REST), ask what
    changes nothing (SIZE, MDTM, a listing: lftp's `mget` asks SIZE and MDTM before each
    RETR) and download again; a change or an upload is answered only once its own row
    is in the log, after the downloads' rows, and QUIT once the downloads' rows are."""
    home = daemon.home(user)
    data = os.urandom(3 << 20)
    (home / "audited.bin").write_bytes(data)
    before = len(daemon.logs("download"))
    with HeldDatabase(daemon):
        download(ftp, "audited.bin", data)
        assert ftp.cmd("TYPE I")[0] == 200
        assert ftp.cmd("SIZE audited.bin") == (213, str(len(data)))
        assert ftp.cmd("MDTM audited.bin")[0] == 213
        assert ftp.cmd("CWD /")[0] == 250
        listing = ftp.data(ftp.epsv())
        assert ftp.cmd("NLST")[0] == 150
        assert "audited.bin" in read_all(listing).decode()
        assert ftp.reply()[0] == 226
        next_conn = ftp.data(ftp.epsv())
        assert ftp.cmd("REST 0")[0] == 350
        assert ftp.cmd("RETR audited.bin")[0] == 150  # a download goes ahead of the row
        assert read_all(next_conn) == data
        assert ftp.reply()[0] == 226
        assert ftp.cmd("NOOP")[0] == 200
        if then.startswith("STOR"):
            upload_conn = ftp.data(ftp.epsv())
            assert ftp.cmd(then)[0] == 150
            upload_conn.sendall(b"uploaded after the rows")
            upload_conn.close()
        else:
            ftp.send(then)
        assert no_answer(ftp)  # no answer while the audit rows cannot be written
        assert len(daemon.logs("download")) == before
    code, _ = ftp.reply()
    assert code == {"DELE": 250, "MKD": 257, "STOR": 226, "QUIT": 221}[then.split()[0]]
    rows = daemon.logs("download")[before:]
    assert [(r["path"], r["bytes"]) for r in rows] == [("/audited.bin", len(data))] * 2
    later = {"DELE": "delete", "MKD": "mkdir", "STOR": "upload"}.get(then.split()[0])
    if later:
        assert daemon.logs(later)[-1]["id"] > rows[-1]["id"]


def test_downloads_go_ahead_of_at_most_rows_behind_audit_rows(daemon, user, ftp):
    """A client that downloads while the database is held up piles up no more than
    ROWS_BEHIND rows: the download after them waits until they are written."""
    home = daemon.home(user)
    data = os.urandom(1000)
    (home / "many.bin").write_bytes(data)
    before = len(daemon.logs("download"))
    with HeldDatabase(daemon):
        for _ in range(ROWS_BEHIND):
            download(ftp, "many.bin", data)
        conn = ftp.data(ftp.epsv())
        ftp.send("RETR many.bin")
        assert no_answer(ftp)
        assert len(daemon.logs("download")) == before
    assert ftp.reply()[0] == 150
    assert read_all(conn) == data
    assert ftp.reply()[0] == 226
    assert ftp.cmd("MKD after-the-rows")[0] == 257  # a change's row: after every download's, the last one's too
    assert len(daemon.logs("download")) == before + ROWS_BEHIND + 1


def test_download_rows_of_a_client_gone_without_quit_are_written(daemon, user):
    """A client that drops its connection without QUIT while its downloads' rows wait
    (the database held up) ends its session all the same: the rows are written."""
    home = daemon.home(user)
    data = os.urandom(2000)
    (home / "dropped.bin").write_bytes(data)
    before = len(daemon.logs("download"))
    ftp = RawFTP(daemon.ftp_port)
    ftp.login(user, PASSWORD)
    with HeldDatabase(daemon):
        download(ftp, "dropped.bin", data)
        download(ftp, "dropped.bin", data)
        ftp.close()  # no QUIT
        assert len(daemon.logs("download")) == before
    wait_for(lambda: len(daemon.logs("download")) == before + 2)
    assert [(r["path"], r["bytes"]) for r in daemon.logs("download")[before:]] == [("/dropped.bin", len(data))] * 2


def test_download_rows_still_waiting_at_a_sigterm_are_written_before_the_daemon_exits(fresh_daemon):
    """Rows answered before they are written (downloads') may wait to be written with
    others (core/audit.py LINGER): a stop writes them all before the database closes.
    The first row is held up by the test's lock on the database, the second waits
    behind it; the daemon gets SIGTERM, then the lock goes."""
    fresh_daemon.add_profile("leaver")
    home = fresh_daemon.home("leaver")
    home.mkdir(parents=True, exist_ok=True)
    data = os.urandom(1000)
    (home / "last.bin").write_bytes(data)
    with RawFTP(fresh_daemon.ftp_port) as ftp:
        ftp.login("leaver", PASSWORD)
        with HeldDatabase(fresh_daemon):
            download(ftp, "last.bin", data)
            time.sleep(0.2)  # its row on its way to the database, held up by the lock
            download(ftp, "last.bin", data)  # this one's row waits behind it
            fresh_daemon.process.terminate()
            time.sleep(0.5)
        assert fresh_daemon.process.wait(30) == 0
    rows = [r for r in fresh_daemon.logs("download") if r["username"] == "leaver"]
    assert [(r["path"], r["bytes"]) for r in rows] == [("/last.bin", len(data))] * 2


def test_rest_beyond_the_end_is_refused(daemon, user, ftp):
    ftp.epsv()
    assert ftp.cmd("REST 1000")[0] == 350
    code, text = ftp.cmd("RETR hello.txt")
    assert code == 554 and "12 bytes" in text
    assert ftp.cmd("REST -1")[0] == 501


def test_rename_sequence(daemon, user, ftp):
    home = daemon.home(user)
    (home / "old.txt").write_bytes(b"x")
    assert ftp.cmd("RNTO new.txt")[0] == 503
    assert ftp.cmd("RNFR missing.txt")[0] == 550
    assert ftp.cmd("RNFR old.txt")[0] == 350
    assert ftp.cmd("RNTO new.txt")[0] == 250
    assert (home / "new.txt").read_bytes() == b"x" and not (home / "old.txt").exists()


def test_admin_sees_the_whole_source(daemon):
    with RawFTP(daemon.ftp_port) as ftp:
        ftp.login("admin", ADMIN_PASSWORD)
        assert ftp.cmd("CWD /rawuser")[0] == 250
        assert ftp.cmd("SIZE hello.txt") == (213, "12")


def test_the_daemon_logged_no_unhandled_errors(daemon):
    output = daemon.output()
    assert "Unhandled error" not in output
    assert "Traceback" not in output
