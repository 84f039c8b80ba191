"""Bans over HTTP: wrong passwords over FTP (ftplib, a real client) ban the address;
the organisation's admin sees the ban and lifts it; another organisation's admin
can neither see nor lift it. Every lift is in the audit log."""

from __future__ import annotations

import ftplib
from concurrent.futures import ThreadPoolExecutor

from ..api_client import Api, signed_in
from ..helpers import ADMIN_PASSWORD


def _ftp_login(daemon, username: str, password: str) -> str:
    """The server's answer to a sign-in: "ok", or the error reply's text."""
    try:
        with ftplib.FTP() as ftp:
            ftp.connect("127.0.0.1", daemon.ftp_port, timeout=60)
            ftp.login(username, password)
            return "ok"
    except ftplib.all_errors as error:
        return str(error)


def test_failed_ftp_sign_ins_ban_the_address_and_its_organisations_admin_lifts_it(fresh_daemon):
    daemon = fresh_daemon
    daemon.add_profile("victim", "victim-password-1")
    other = daemon.add_organisation("Elsewhere")
    daemon.add_profile("elsewhere-admin", "elsewhere-password-1", org_id=other, is_admin=True)
    daemon.add_profile("plain", "plain-password-1")
    # signed in before the ban: the ban is on 127.0.0.1, where the tests run
    admin = signed_in(daemon, "admin", ADMIN_PASSWORD)
    outsider = signed_in(daemon, "elsewhere-admin", "elsewhere-password-1")
    plain = signed_in(daemon, "plain", "plain-password-1")
    assert admin.get("bans/").body["count"] == 0

    with ThreadPoolExecutor(10) as pool:  # in parallel, so the growing delays overlap
        answers = list(pool.map(lambda _: _ftp_login(daemon, "victim", "wrong-password"), range(10)))
    assert all(a.startswith(("530", "421")) for a in answers), answers
    refused = _ftp_login(daemon, "victim", "victim-password-1")
    assert refused.startswith("421") and "Too many failed sign-ins" in refused, refused

    listing = admin.get("bans/")
    assert listing.status == 200, listing.body
    assert listing.body["count"] == 1
    ban = listing.body["results"][0]
    assert ban["address"] == "127.0.0.1" and ban["usernames"] == ["victim"] and ban["offences"] == 1
    assert ban["until"]

    # another organisation's admin: sees nothing, lifts nothing; a non-admin is refused
    assert outsider.get("bans/").body == {"count": 0, "next": None, "previous": None, "results": []}
    assert outsider.delete("bans/127.0.0.1/").status == 404
    assert plain.get("bans/").status == 403
    assert plain.delete("bans/127.0.0.1/").status == 403
    assert _ftp_login(daemon, "victim", "victim-password-1").startswith("421")
    # the web sign-in says the same, and a script is told when to come back
    web = Api(daemon).login("victim", "victim-password-1")
    assert web.status == 401 and "Too many failed sign-ins" in web.body["detail"], web.body
    assert 240 <= int(web.headers["retry-after"]) <= 300  # the first ban lasts five minutes

    assert admin.delete("bans/127.0.0.1/").status == 204
    assert _ftp_login(daemon, "victim", "victim-password-1") == "ok"
    assert admin.get("bans/").body["count"] == 0
    assert admin.delete("bans/127.0.0.1/").status == 404  # already lifted
    unbans = daemon.logs("unban")
    assert len(unbans) == 1
    assert unbans[0]["org_id"] == daemon.default_org() and unbans[0]["username"] == "admin"
    assert unbans[0]["remote_address"] == "127.0.0.1" and "lifted the ban" in unbans[0]["message"]
    assert len(daemon.logs("ban")) == 1
