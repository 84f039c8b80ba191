"""Bans from outside, with real clients (ftplib, OpenSSH's sftp, the API client): one
user's wrong passwords behind a shared address ban only that user there; spraying
names bans the address unless it is in [security] trusted_networks; a share link's
wrong passwords earn a ban its organisation's admin sees and lifts; the admins a ban
concerns (and the operator) see and lift it, another organisation's admin neither
sees nor lifts it. Every lift is in the audit log.

The daemon's clock is real, so each ban is earned by ten failures sent at once: their
growing delays overlap instead of adding up."""

from __future__ import annotations

import ftplib
import os
import subprocess
import urllib.parse
from concurrent.futures import ThreadPoolExecutor

import pytest

from ..api_client import Api, signed_in
from ..helpers import ADMIN_PASSWORD, APPLIANCE, daemon_with, free_port, require, wait_for_port
from .sftp_client import sftp

TEN = 10  # failures that earn a ban (BAN_THRESHOLD)


def _ftp_login(daemon, username: str, password: str, source: str | None = None) -> str:
    """The server's answer to a sign-in: "ok", or the error reply's text."""
    try:
        with ftplib.FTP(source_address=(source, 0) if source else None) as ftp:
            ftp.connect("127.0.0.1", daemon.ftp_port, timeout=60)
            ftp.login(username, password)
            return "ok"
    except ftplib.all_errors as error:
        return str(error)


def _at_once(attempt, count: int = TEN) -> list:
    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(attempt, range(count)))


def _earn_ban(attempt, admin: Api) -> list:
    """Ten failures at once, then (on a machine so slow that their scores faded below
    the threshold while they ran) one more at a time until `admin` sees a ban, at most
    three: the answers, in order."""
    answers = _at_once(attempt)
    for n in range(TEN, TEN + 3):
        if admin.get("bans/").body["count"]:
            break
        answers.append(attempt(n))
    return answers


def _two_organisations(daemon) -> tuple[Api, Api, Api]:
    """Signed-in admins, before any ban on 127.0.0.1: the operator, a plain admin of the
    operator's organisation (Acme) and the admin of another organisation (Elsewhere)."""
    daemon.add_profile("acme-admin", "acme-password-1", is_admin=True)
    other = daemon.add_organisation("Elsewhere")
    daemon.add_profile("elsewhere-admin", "elsewhere-password-1", org_id=other, is_admin=True)
    return (
        signed_in(daemon, "admin", ADMIN_PASSWORD),
        signed_in(daemon, "acme-admin", "acme-password-1"),
        signed_in(daemon, "elsewhere-admin", "elsewhere-password-1"),
    )


def test_a_share_links_wrong_passwords_earn_a_ban_its_organisations_admin_sees_and_lifts(fresh_daemon):
    daemon = fresh_daemon
    _, acme_admin, elsewhere_admin = _two_organisations(daemon)
    daemon.add_profile("sam", "sam-password-1")
    daemon.home("sam").mkdir(parents=True, exist_ok=True)
    (daemon.home("sam") / "report.txt").write_bytes(b"the report")
    sam = signed_in(daemon, "sam", "sam-password-1")
    created = sam.post("shares/", {"path": "/report.txt", "password": "link-pass-1"})
    assert created.status == 201, created.body
    unlock = f"shared/{created.body['token']}/unlock/"

    answers = _earn_ban(lambda _: Api(daemon).post(unlock, {"password": "wrong-pass-1"}).body["detail"], acme_admin)
    assert answers[:TEN] == ["The password is not right."] * TEN, answers
    assert signed_in(daemon, "sam", "sam-password-1")  # the link only: the address may still sign in
    refused = Api(daemon).post(unlock, {"password": "link-pass-1"})  # even the right one
    assert refused.status == 401 and "Too many wrong passwords for this link" in refused.body["detail"], refused.body
    assert 240 <= int(refused.headers["retry-after"]) <= 300

    listing = acme_admin.get("bans/")
    assert listing.status == 200 and listing.body["count"] == 1, listing.body
    ban = listing.body["results"][0]
    assert ban["address"] == "127.0.0.1" and ban["kind"] == "share_link" and ban["until"]
    assert "the share link to /report.txt of sam" in ban["why"], ban
    # not the other organisation's to see or lift
    assert elsewhere_admin.get("bans/").body["count"] == 0
    assert elsewhere_admin.delete("bans/127.0.0.1/").status == 404
    assert Api(daemon).post(unlock, {"password": "link-pass-1"}).status == 401

    assert acme_admin.delete("bans/127.0.0.1/").status == 204
    assert acme_admin.get("bans/").body["count"] == 0
    opened = Api(daemon).post(unlock, {"password": "link-pass-1"})
    assert opened.status == 200 and opened.body["access"], opened.body
    [unban] = daemon.logs("unban")
    assert unban["org_id"] == daemon.default_org() and unban["username"] == "acme-admin"
    assert "lifted the ban on 127.0.0.1" in unban["message"] and "report.txt" in unban["message"]
    [banned] = daemon.logs("ban")
    assert banned["org_id"] == daemon.default_org() and "report.txt" in banned["message"]


def test_one_users_wrong_passwords_behind_a_shared_address_stop_only_that_user_there(fresh_daemon, tmp_path):
    daemon = fresh_daemon
    operator, acme_admin, elsewhere_admin = _two_organisations(daemon)
    daemon.add_profile("victim", "victim-password-1")
    daemon.add_profile("colleague", "colleague-password-1")
    daemon.home("colleague").mkdir(parents=True, exist_ok=True)
    plain = signed_in(daemon, "colleague", "colleague-password-1")

    answers = _earn_ban(lambda _: _ftp_login(daemon, "victim", "wrong-password"), operator)
    assert all(a.startswith("530 Invalid username or password") for a in answers[:TEN]), answers

    # everyone else behind 127.0.0.1 signs in, on every protocol; the victim does from elsewhere
    assert Api(daemon).login("admin", ADMIN_PASSWORD).status == 200
    assert Api(daemon).login("acme-admin", "acme-password-1").status == 200
    assert _ftp_login(daemon, "colleague", "colleague-password-1") == "ok"
    done = sftp(daemon, "colleague", "colleague-password-1", "pwd", tmp_path)
    assert done.returncode == 0, done.stderr
    assert _ftp_login(daemon, "victim", "victim-password-1", source="127.0.0.2") == "ok"
    # the victim, from 127.0.0.1, is refused even with the right password
    refused = _ftp_login(daemon, "victim", "victim-password-1")
    assert refused.startswith("530 Too many failed sign-ins for this account from 127.0.0.1"), refused
    web = Api(daemon).login("victim", "victim-password-1")
    assert web.status == 401 and "Too many failed sign-ins" in web.body["detail"], web.body
    assert 240 <= int(web.headers["retry-after"]) <= 300  # a script is told when to come back
    assert web.body["code"] == "banned" and web.body["retry_after"] == int(web.headers["retry-after"])  # the console

    ban = acme_admin.get("bans/").body["results"]
    assert [(b["address"], b["kind"], b["usernames"]) for b in ban] == [("127.0.0.1", "username", ["victim"])]
    assert "victim" in ban[0]["why"] and ban[0]["offences"] == 1
    assert operator.get("bans/").body["count"] == 1
    assert elsewhere_admin.get("bans/").body["count"] == 0
    assert plain.get("bans/").status == 403 and plain.delete("bans/127.0.0.1/").status == 403
    assert acme_admin.delete("bans/127.0.0.1/").status == 204
    assert _ftp_login(daemon, "victim", "victim-password-1") == "ok"
    assert acme_admin.delete("bans/127.0.0.1/").status == 404  # already lifted


def test_spraying_unknown_usernames_bans_the_address_and_the_operator_sees_and_lifts_it(fresh_daemon):
    daemon = fresh_daemon
    operator, acme_admin, _ = _two_organisations(daemon)
    answers = _earn_ban(lambda n: Api(daemon).login(f"nobody-{n}", "guess-guess-1").body["detail"], operator)
    assert answers[:TEN] == ["Invalid username or password, or the account must sign in over HTTPS."] * TEN, answers
    refused = Api(daemon).login("acme-admin", "acme-password-1")
    assert refused.status == 401 and "Too many failed sign-ins from 127.0.0.1" in refused.body["detail"]
    assert refused.body["code"] == "banned" and 240 <= refused.body["retry_after"] <= 300, refused.body
    assert _ftp_login(daemon, "acme-admin", "acme-password-1").startswith("421 Too many failed sign-ins")

    # names of no account concern no organisation: the operator's alone
    assert acme_admin.get("bans/").body["count"] == 0
    assert acme_admin.delete("bans/127.0.0.1/").status == 404
    [ban] = operator.get("bans/").body["results"]
    assert ban["address"] == "127.0.0.1" and ban["kind"] == "address", ban
    assert "'nobody-0'" in ban["why"] and "every sign-in" in ban["why"], ban
    assert operator.delete("bans/127.0.0.1/").status == 204
    assert Api(daemon).login("acme-admin", "acme-password-1").status == 200


def bans_cli(daemon, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*APPLIANCE, "bans", *args, "--data-dir", str(daemon.data_dir)], capture_output=True, text=True, timeout=60
    )


def test_an_operator_banned_from_their_own_address_lifts_the_ban_on_the_host(fresh_daemon, tmp_path):
    """The way back when the operator's own address is banned and no session is open:
    `appliance bans list` and `appliance bans lift ADDRESS` on the host (the running
    daemon's control socket), which the ban's message names."""
    daemon = fresh_daemon
    operator = signed_in(daemon, "admin", ADMIN_PASSWORD)
    _earn_ban(lambda n: Api(daemon).login(f"nobody-{n}", "guess-guess-1").body["detail"], operator)
    refused = Api(daemon).login("admin", ADMIN_PASSWORD)
    assert refused.status == 401 and "appliance bans lift ADDRESS" in refused.body["detail"], refused.body
    listed = bans_cli(daemon, "list")
    assert listed.returncode == 0 and listed.stdout.startswith("127.0.0.1\t"), (listed.stdout, listed.stderr)
    assert "every sign-in from this address is refused" in listed.stdout
    lifted = bans_cli(daemon, "lift", "127.0.0.1")
    assert lifted.returncode == 0 and lifted.stdout.strip() == "Lifted 1 ban on 127.0.0.1.", lifted
    assert Api(daemon).login("admin", ADMIN_PASSWORD).status == 200
    assert bans_cli(daemon, "list").stdout.strip() == "No ban is in force."
    assert bans_cli(daemon, "lift", "127.0.0.1").stdout.strip() == "No ban on 127.0.0.1 was in force."
    rows = daemon.query("SELECT message FROM logs WHERE action = 'unban'")
    assert [r["message"] for r in rows] == ["The ban on 127.0.0.1 was lifted on the host (appliance bans lift)"], rows
    assert (daemon.data_dir / "control.sock").stat().st_mode & 0o777 == 0o600
    bad = bans_cli(daemon, "lift", "not-an-address")
    assert bad.returncode == 1 and "not an IP address" in bad.stderr and "Traceback" not in bad.stderr, bad.stderr
    # no daemon on a data dir: said plainly
    elsewhere = subprocess.run([*APPLIANCE, "bans", "list", "--data-dir", str(tmp_path / "idle")],
                               capture_output=True, text=True, timeout=60)  # fmt: skip
    assert elsewhere.returncode == 1 and "the appliance is not running" in elsewhere.stderr, elsewhere.stderr


def test_trusted_networks_are_not_banned_for_spraying(tmp_path):
    daemon = daemon_with(tmp_path, security__trusted_networks="192.0.2.0/24, 127.0.0.0/8")
    try:
        operator = signed_in(daemon, "admin", ADMIN_PASSWORD)
        for n in range(3 * TEN):  # one after another: a trusted address is not slowed for new names
            assert Api(daemon).login(f"nobody-{n}", "guess-guess-1").status == 401
        assert _ftp_login(daemon, "nobody-x", "guess-guess-1").startswith("530 Invalid")
        assert Api(daemon).login("admin", ADMIN_PASSWORD).status == 200
        assert operator.get("bans/").body["count"] == 0
        assert len(daemon.logs("login_failed")) == 3 * TEN + 1 and daemon.logs("ban") == []
    finally:
        daemon.stop()


def test_another_organisations_admin_neither_sees_nor_lifts_a_ban_on_names_it_does_not_own(fresh_daemon):
    daemon = fresh_daemon
    operator, acme_admin, elsewhere_admin = _two_organisations(daemon)
    for n in range(TEN // 2):
        daemon.add_profile(f"acme-{n}", "acme-user-password-1")
    # a spray of Acme's usernames and some that exist nowhere: the address is banned
    names = [f"acme-{n}" for n in range(TEN // 2)] + [f"nobody-{n}" for n in range(TEN // 2)]
    names += [f"nobody-{n}" for n in range(TEN // 2, TEN // 2 + 3)]  # if the first ten are not enough
    answers = _earn_ban(lambda n: _ftp_login(daemon, names[n], "guess-guess-1"), acme_admin)
    assert all(a.startswith("530 Invalid") for a in answers[:TEN]), answers
    assert _ftp_login(daemon, "elsewhere-admin", "elsewhere-password-1").startswith("421 Too many failed sign-ins")

    assert elsewhere_admin.get("bans/").body == {"count": 0, "next": None, "previous": None, "results": []}
    assert elsewhere_admin.delete("bans/127.0.0.1/").status == 404
    assert _ftp_login(daemon, "elsewhere-admin", "elsewhere-password-1").startswith("421")  # still banned
    [ban] = acme_admin.get("bans/").body["results"]
    assert ban["kind"] == "address" and sorted(ban["usernames"]) == names[: TEN // 2]
    assert "acme-0" in ban["why"] and f"{len(answers) - TEN // 2} other names" in ban["why"], ban
    assert "nobody" not in ban["why"], ban
    [everything] = operator.get("bans/").body["results"]
    assert "'nobody-0'" in everything["why"]
    # the ban's audit row is Acme's, and names only Acme's users
    [row] = daemon.logs("ban")
    assert row["org_id"] == daemon.default_org() and "nobody" not in row["message"]
    assert acme_admin.delete("bans/127.0.0.1/").status == 204
    assert _ftp_login(daemon, "elsewhere-admin", "elsewhere-password-1") == "ok"


NET = "2001:db8:40:1::"  # documentation addresses, put on the loopback interface for the test
OTHER_NET = "2001:db8:40:2::"


@pytest.fixture
def ipv6_clients():
    """Addresses of two /64s on the loopback interface (as root), taken off afterwards."""
    if os.geteuid() != 0:
        pytest.skip("adding addresses to the loopback interface needs root")
    require("ip")
    added = [f"{NET}{n:x}" for n in range(1, 13)] + [f"{NET}ff", f"{OTHER_NET}1"]
    try:
        for address in added:
            subprocess.run(["ip", "-6", "addr", "add", f"{address}/128", "dev", "lo"], check=True, capture_output=True)
        yield added
    finally:
        for address in added:
            subprocess.run(["ip", "-6", "addr", "del", f"{address}/128", "dev", "lo"], capture_output=True)


def test_ipv6_clients_are_counted_and_banned_per_64(tmp_path, ipv6_clients):
    """Issue 40, item 4: a host given a /64 sprays names from a fresh address each time;
    the failures add up per /64, the whole /64 is banned, another /64 is not, and the
    ban is listed as the network and lifted by it or by any address in it."""
    daemon = daemon_with(tmp_path, start=False)
    daemon.extra_args += ["--ftp", f"tcp6:{(port := free_port())}:interface=\\:\\:"]
    daemon.start()
    try:
        wait_for_port(port, host="::1")
        operator = signed_in(daemon, "admin", ADMIN_PASSWORD)
        daemon.add_profile("v6user", "v6user-password-1")

        def login(username, password, source):
            try:
                with ftplib.FTP() as ftp:
                    ftp.connect("::1", port, timeout=60, source_address=(source, 0))
                    ftp.login(username, password)
                    return "ok"
            except ftplib.all_errors as error:
                return str(error)

        answers = _earn_ban(lambda n: login(f"nobody-{n}", "guess-guess-1", f"{NET}{n % 12 + 1:x}"), operator)
        assert all(a.startswith("530") for a in answers[:TEN]), answers
        # a fresh address of the same /64, even with the right password: refused
        assert login("v6user", "v6user-password-1", f"{NET}ff").startswith("421 Too many failed sign-ins")
        # another /64, and IPv4, are not held back
        assert login("v6user", "v6user-password-1", f"{OTHER_NET}1") == "ok"
        assert _ftp_login(daemon, "v6user", "v6user-password-1") == "ok"
        [ban] = operator.get("bans/").body["results"]
        assert ban["address"] == f"{NET}/64" and ban["kind"] == "address", ban
        # lifted by the network as the console sends it (encoded), or by an address in it
        assert operator.delete(f"bans/{urllib.parse.quote(ban['address'], safe='')}/").status == 204
        assert login("v6user", "v6user-password-1", f"{NET}ff") == "ok"
        [unban] = daemon.logs("unban")
        assert f"lifted the ban on {NET}/64" in unban["message"]
    finally:
        daemon.stop()
