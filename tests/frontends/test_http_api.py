"""The portal API over HTTP against the live daemon: sessions, first run,
dashboard, organisation, branding, files, and the error catalogue."""

from __future__ import annotations

import base64
import json
import os
import socket
from datetime import UTC, datetime, timedelta

import jwt
import pytest

from ..api_client import MULTIPART, Api, multipart, signed_in
from ..helpers import ADMIN_PASSWORD, make_daemon, now_iso

PASSWORD = "user-password-1"


def token_not_valid(reply) -> bool:
    return (
        reply.status == 401
        and reply.body["code"] == "token_not_valid"
        and reply.body["detail"] == "Given token not valid for any token type"
        and isinstance(reply.body["messages"], list)
    )


# -- sessions ---------------------------------------------------------------------------


def test_login_returns_tokens_and_the_user(daemon):
    api = Api(daemon)
    reply = api.login("admin", ADMIN_PASSWORD)
    assert reply.status == 200
    assert {"access", "refresh", "id", "username", "email", "is_admin", "is_superuser"} <= set(reply.body)
    assert reply.body["is_admin"] is True and reply.body["username"] == "admin"
    claims = jwt.decode(reply.body["access"], options={"verify_signature": False})
    assert {"exp", "iat", "jti", "token_type", "user_id"} <= set(claims) and claims["token_type"] == "access"


def test_login_failures_answer_the_same(daemon):
    wrong = Api(daemon).login("admin", "wrong-password")
    unknown = Api(daemon).login("nobody-at-all", "wrong-password")
    assert wrong.status == unknown.status == 401
    assert wrong.body == unknown.body


def test_refresh_rotates_and_a_used_refresh_token_is_refused(daemon):
    api = signed_in(daemon, "admin", ADMIN_PASSWORD)
    first = api.refresh_token
    renewed = Api(daemon).post("token/refresh/", {"refresh": first})
    assert renewed.status == 200 and {"access", "refresh"} <= set(renewed.body)
    assert renewed.body["refresh"] != first
    again = Api(daemon).post("token/refresh/", {"refresh": first})
    assert token_not_valid(again)
    # the new access token works; a refresh token is not an access token
    assert Api(daemon, renewed.body["access"]).get("organisation/").status == 200
    assert token_not_valid(Api(daemon, renewed.body["refresh"]).get("organisation/"))
    # logout revokes the refresh token
    assert Api(daemon).post("token/logout/", {"refresh": renewed.body["refresh"]}).status == 200
    assert token_not_valid(Api(daemon).post("token/refresh/", {"refresh": renewed.body["refresh"]}))


def test_signing_out_ends_the_sessions_access_tokens_at_once_and_after_a_restart(fresh_daemon):
    daemon = fresh_daemon
    signed = signed_in(daemon, "admin", ADMIN_PASSWORD)
    first_access = signed.token
    renewed = Api(daemon).post("token/refresh/", {"refresh": signed.refresh_token}).body
    other = signed_in(daemon, "admin", ADMIN_PASSWORD)  # another sign-in: another session
    for access in (first_access, renewed["access"], other.token):
        assert Api(daemon, access).get("organisation/").status == 200
    daemon.home("admin").mkdir(parents=True, exist_ok=True)
    (daemon.home("admin") / "f.txt").write_text("mine")
    download = Api(daemon, renewed["access"]).post("files/download-link/", {"path": "/f.txt"}).body["url"]
    assert Api(daemon).get(download.removeprefix("/api/portal/")).raw == b"mine"
    # the console signs out with the refresh token alone
    assert Api(daemon).post("token/logout/", {"refresh": renewed["refresh"]}).status == 200
    for access in (first_access, renewed["access"]):  # both of that session, the earlier one too
        refused = Api(daemon, access).get("organisation/")
        assert token_not_valid(refused) and refused.body["messages"][0]["token_class"] == "AccessToken"
    assert token_not_valid(Api(daemon).post("token/refresh/", {"refresh": renewed["refresh"]}))
    assert Api(daemon).get(download.removeprefix("/api/portal/")).status == 401  # its download links too
    assert Api(daemon, other.token).get("organisation/").status == 200
    # a client that sends only its access token ends that session too
    assert Api(daemon, other.token).post("token/logout/", {}).status == 200
    assert token_not_valid(Api(daemon, other.token).get("organisation/"))
    assert token_not_valid(Api(daemon).post("token/refresh/", {"refresh": other.refresh_token}))
    daemon.restart()
    for access in (first_access, renewed["access"], other.token):
        assert token_not_valid(Api(daemon, access).get("organisation/"))
    assert signed_in(daemon, "admin", ADMIN_PASSWORD).get("organisation/").status == 200


def test_bad_tokens_get_token_not_valid(daemon):
    api = signed_in(daemon, "admin", ADMIN_PASSWORD)
    header, payload, signature = api.token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=="))
    unsigned = base64.urlsafe_b64encode(b'{"alg":"none","typ":"JWT"}').rstrip(b"=").decode() + "." + payload + "."
    other_secret = jwt.encode(claims, "not-the-secret-but-long-enough-0123456789", algorithm="HS256")
    no_exp = jwt.encode({k: v for k, v in claims.items() if k != "exp"}, "x" * 32, algorithm="HS256")
    tampered = ".".join([header, base64.urlsafe_b64encode(json.dumps({**claims, "user_id": 999}).encode())
                         .rstrip(b"=").decode(), signature])  # fmt: skip
    for token in (unsigned, other_secret, no_exp, tampered, "garbage", api.token[:-2]):
        assert token_not_valid(Api(daemon, token).get("organisation/")), token
    no_credentials = Api(daemon).get("organisation/")
    assert no_credentials.status == 401 and "code" not in no_credentials.body


def test_a_password_change_ends_sessions(daemon):
    daemon.add_profile("changer")
    api = signed_in(daemon, "changer", PASSWORD)
    assert api.get("organisation/").status == 200
    daemon.execute(
        "UPDATE profiles SET password_changed_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+5 seconds') "
        "WHERE username = 'changer'"
    )
    assert token_not_valid(api.get("organisation/"))
    assert token_not_valid(Api(daemon).post("token/refresh/", {"refresh": api.refresh_token}))


def test_payment_missing_and_deleted_organisations_get_the_spec_replies(daemon):
    org = daemon.add_organisation("Soon Late")
    daemon.add_profile("soonlate", org_id=org, is_admin=True)
    api = signed_in(daemon, "soonlate", PASSWORD)
    daemon.execute("UPDATE organisations SET status = 'payment_missing' WHERE id = ?", org)
    reply = api.get("dashboard/information/")
    assert (reply.status, reply.body) == (403, {"detail": "Organisation payment missing"})
    daemon.execute("UPDATE organisations SET status = 'deleted' WHERE id = ?", org)
    reply = api.get("files/?path=/")
    assert (reply.status, reply.body) == (403, {"detail": "Organisation is deleted"})


def test_a_refused_sign_in_says_why_except_for_wrong_credentials(daemon):
    """The console shows each reason (its code); wrong credentials stay one answer."""
    wrong = Api(daemon).login("admin", "wrong-password")
    unknown = Api(daemon).login("nobody-at-all-2", "wrong-password")
    assert (
        wrong.body
        == unknown.body
        == {  # plain HTTP: a failure there also says HTTPS may be required
            "detail": "Invalid username or password, or the account must sign in over HTTPS.",
            "code": "invalid_credentials",
        }
    )
    org = daemon.add_organisation("Trial Over", status="trial", trial_ends_at=now_iso(-timedelta(days=1)))
    daemon.add_profile("trialover", org_id=org, is_admin=True)
    ended = Api(daemon).login("trialover", PASSWORD)  # the trial ran out: payment missing, not wrong credentials
    assert (ended.status, ended.body) == (401, {"detail": "Organisation payment missing", "code": "payment_missing"})
    assert Api(daemon).login("trialover", "wrong-password").body["code"] == "invalid_credentials"  # tells nothing
    daemon.execute("UPDATE organisations SET status = 'deleted' WHERE id = ?", org)
    deleted = Api(daemon).login("trialover", PASSWORD)
    assert (deleted.status, deleted.body) == (
        401,
        {"detail": "Organisation is deleted", "code": "organisation_deleted"},
    )
    daemon.add_profile("switchedoff", active=False)
    disabled = Api(daemon).login("switchedoff", PASSWORD)
    assert disabled.body["code"] == "account_disabled" and "disabled" in disabled.body["detail"], disabled.body


# -- first run -----------------------------------------------------------------------------


def test_first_run_setup(tmp_path):
    daemon = make_daemon(tmp_path, start=False)
    daemon.data_dir = tmp_path / "fresh"
    daemon.start()
    try:
        api = Api(daemon)
        assert api.get("initialized/").body == {"initialized": False}
        bad = api.post("setup/", {"organisation": "Acme", "username": "root admin", "email": "x", "password": "p"})
        assert bad.status == 400
        created = api.post(
            "setup/",
            {"organisation": "Acme", "username": "boss", "email": "boss@example.com", "password": "long-password-1"},
        )
        assert created.status == 201 and created.body["is_superuser"] is True and created.body["access"]
        assert api.get("initialized/").body == {"initialized": True}
        again = api.post(
            "setup/",
            {"organisation": "Evil", "username": "evil", "email": "e@example.com", "password": "long-password-1"},
        )
        assert again.status == 403
        assert Api(daemon, created.body["access"]).get("dashboard/overview/").status == 200
    finally:
        daemon.stop()


def test_the_sign_in_setup_opens_is_counted(tmp_path):
    """The session first-run setup opens is the admin's first sign-in: the dashboard's
    Top users must not say 'Last login never' and the log says who signed in."""
    daemon = make_daemon(tmp_path, start=False)
    daemon.data_dir = tmp_path / "fresh"
    daemon.start()
    try:
        created = Api(daemon).post(
            "setup/",
            {"organisation": "Acme", "username": "boss", "email": "boss@example.com", "password": "long-password-1"},
        )
        assert created.status == 201
        assert daemon.query("SELECT last_login FROM profiles WHERE username = 'boss'")[0][0]
        (login,) = daemon.logs("login")
        assert login["username"] == "boss" and login["protocol"] == "web"
        assert login["message"].startswith("boss signed in over")
        overview = Api(daemon, created.body["access"]).get("dashboard/overview/").body
        assert overview["active_users"] == 1
    finally:
        daemon.stop()


# -- dashboard, organisation, branding ---------------------------------------------------------


def test_dashboard_overview_has_the_spec_fields_and_twelve_months(daemon, tmp_path):
    api = signed_in(daemon, "admin", ADMIN_PASSWORD)
    api.post("files/upload/?path=/", raw=multipart("dash.txt", b"dashboard"), headers=MULTIPART)
    body = api.get("dashboard/overview/").body
    assert {"users", "active_users", "log_count", "file_transfers", "series", "logs", "top_users"} <= set(body)
    assert body["file_transfers"] >= 1 and body["active_users"] >= 1
    assert {s["name"] for s in body["series"]} == {"sftp", "ftp", "web", "mail"}
    for series in body["series"]:
        assert len(series["data"]) == 12
    web = next(s for s in body["series"] if s["name"] == "web")["data"]
    assert web[-1]["y"] >= 1 and " " in web[-1]["x"]  # "Nov 2026"
    assert body["logs"][0].keys() == {"id", "username", "created_at", "message"}
    assert any(u["username"] == "admin" and u["count"] >= 1 for u in body["top_users"])


def test_the_dashboard_chart_has_bars_by_day_week_or_month(daemon):
    api = signed_in(daemon, "admin", ADMIN_PASSWORD)
    api.post("files/upload/?path=/", raw=multipart("by-day.txt", b"day one"), headers=MULTIPART)
    today = datetime.now(UTC).date()
    monday = today - timedelta(days=today.weekday())
    # a day-one appliance's transfers in today's bar, this week's (from Monday) or this month's
    for period, bars, last in (
        ("day", 30, f"{today.day} {today:%b}"),
        ("week", 12, f"{monday.day} {monday:%b}"),
        ("month", 12, f"{today:%b %Y}"),
        ("", 12, f"{today:%b %Y}"),
    ):
        body = api.get(f"dashboard/overview/?period={period}").body
        web = next(s for s in body["series"] if s["name"] == "web")["data"]
        assert len(web) == bars and web[-1]["x"] == last and web[-1]["y"] >= 1, (period, web[-3:])
    refused = api.get("dashboard/overview/?period=year")
    assert refused.status == 400 and refused.body == {"period": ["Choose one of: day, week, month."]}


def test_non_admins_get_403_on_admin_calls_but_see_their_information(daemon):
    daemon.add_profile("viewer")
    api = signed_in(daemon, "viewer", PASSWORD)
    assert api.get("dashboard/overview/").status == 403
    info = api.get("dashboard/information/").body
    assert info["username"] == "viewer" and info["source"] == "Default"
    assert info["sftp_port"] == daemon.sftp_port and info["ftp_port"] == daemon.ftp_port
    assert [k["type"] for k in info["host_keys"]] == ["ssh-ed25519", "ssh-rsa"]
    assert all(k["fingerprint"].startswith("SHA256:") for k in info["host_keys"])
    org = api.get("organisation/").body[0]
    assert api.patch(f"organisation/{org['id']}/", {"name": "Mine now"}).status == 403


def test_organisation_settings_and_public_branding(daemon):
    api = signed_in(daemon, "admin", ADMIN_PASSWORD)
    org = api.get("organisation/").body[0]
    assert {"on_trial", "days_left_on_trial", "status", "name", "subdomain", "branding_colour"} <= set(org)
    bad = api.patch(f"organisation/{org['id']}/", {"branding_colour": "red"})
    assert bad.status == 400 and "branding_colour" in bad.body
    good = api.patch(
        f"organisation/{org['id']}/", {"branding": True, "branding_colour": "#123ABC", "user_terms": "Be nice."}
    )
    assert good.status == 200 and good.body["branding_colour"] == "#123ABC"
    public = Api(daemon).get(f"branding/?subdomain={org['subdomain']}")
    assert public.body == {"branding": True, "branding_logo": None, "branding_colour": "#123ABC"}
    assert Api(daemon).get("branding/?subdomain=nobody-here").body["branding"] is False
    assert api.patch("organisation/999999/", {"name": "x"}).status == 404


def test_a_trial_shows_days_left(daemon):
    org = daemon.add_organisation("Trying", status="trial")
    daemon.execute(
        "UPDATE organisations SET trial_ends_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+10 days', '-1 hour') WHERE id = ?",
        org,
    )
    daemon.add_profile("trier", org_id=org, is_admin=True)
    body = signed_in(daemon, "trier", PASSWORD).get("organisation/").body[0]
    assert body["on_trial"] is True and body["days_left_on_trial"] == 10
    assert body["trial_expired"] is False


def test_the_operator_sees_an_ended_trial_as_expired(daemon):
    ended = daemon.add_organisation("Ended Trial", status="trial", trial_ends_at=now_iso(-timedelta(days=2)))
    unpaid = daemon.add_organisation(
        "Unpaid After Trial", status="payment_missing", trial_ends_at=now_iso(-timedelta(days=9))
    )
    operator = signed_in(daemon, "admin", ADMIN_PASSWORD)
    listed = {o["id"]: o for o in operator.get("god/organisations/?page_size=200").body["results"]}
    assert listed[ended]["trial_expired"] is True and listed[ended]["days_left_on_trial"] == 0
    assert listed[unpaid]["trial_expired"] is True  # the housekeeping job turned it: still an ended trial
    assert listed[daemon.default_org()]["trial_expired"] is False


# -- files ---------------------------------------------------------------------------------------


def test_files_round_trip_through_the_core(daemon):
    daemon.add_profile("webby")
    api = signed_in(daemon, "webby", PASSWORD)
    data = os.urandom(2 * 1024 * 1024 + 5)
    up = api.post("files/upload/?path=/reports", raw=multipart("q3/é report.bin", data), headers=MULTIPART)
    assert up.status == 201 and up.body["files"] == [{"path": "/reports/q3/é report.bin", "size": len(data)}]
    assert (daemon.home("webby") / "reports" / "q3" / "é report.bin").read_bytes() == data
    listing = api.get("files/?path=/reports/q3").body
    assert listing["entries"][0]["name"] == "é report.bin" and listing["entries"][0]["size"] == len(data)
    down = api.get("files/download/?path=/reports/q3/%C3%A9%20report.bin")
    assert down.status == 200 and down.raw == data
    assert "filename*=UTF-8''%C3%A9%20report.bin" in down.headers["content-disposition"]
    part = api.get("files/download/?path=/reports/q3/%C3%A9%20report.bin", headers={"Range": "bytes=100-199"})
    assert part.status == 206 and part.raw == data[100:200]
    assert part.headers["content-range"] == f"bytes 100-199/{len(data)}"
    again = api.post("files/upload/?path=/reports", raw=multipart("q3/é report.bin", b"x"), headers=MULTIPART)
    assert again.status == 400  # never overwritten by surprise
    assert api.post("files/mkdir/", {"path": "/a/b"}).status == 201
    assert api.post("files/rename/", {"path": "/reports", "new_path": "/a/b/reports"}).status == 200
    assert api.delete("files/?path=/a").status == 204
    assert api.get("files/?path=/").body["entries"] == []
    rows = [r for r in daemon.logs() if r["username"] == "webby" and r["protocol"] == "web"]
    assert {"upload", "download", "mkdir", "rename", "delete"} <= {r["action"] for r in rows}
    # the whole file, then the range: the audit row says how much of the file went out
    downloads = [r["message"] for r in rows if r["action"] == "download"]
    assert downloads == [
        "webby downloaded /reports/q3/é report.bin (2.1 MB) over the web",
        "webby downloaded /reports/q3/é report.bin (100 bytes of 2.1 MB) over the web",
    ], downloads


def test_files_refuse_escapes_and_respect_permissions(daemon):
    daemon.add_profile("readonly", permissions=["list", "download"])
    api = signed_in(daemon, "readonly", PASSWORD)
    assert api.get("files/?path=/../../etc").status == 403
    assert api.get("files/download/?path=/etc/passwd").status == 404
    refused = api.post("files/upload/?path=/", raw=multipart("x.txt", b"x"), headers=MULTIPART)
    assert refused.status == 403 and "may not upload" in refused.body["detail"]
    assert api.post("files/mkdir/", {"path": "/d"}).status == 403


def test_an_upload_cut_off_midway_leaves_nothing(daemon):
    daemon.add_profile("cutweb")
    api = signed_in(daemon, "cutweb", PASSWORD)
    body = multipart("cut.bin", os.urandom(4 * 1024 * 1024))
    with socket.create_connection(("127.0.0.1", daemon.http_port)) as sock:
        sock.sendall(
            b"POST /api/portal/files/upload/?path=/ HTTP/1.1\r\nHost: x\r\n"
            b"Authorization: Bearer " + api.token.encode() + b"\r\n"
            b"Content-Type: multipart/form-data; boundary=XyZ\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body[: len(body) // 2]
        )
    listing = api.get("files/?path=/").body["entries"]
    assert listing == []
    home = daemon.home("cutweb")
    assert not home.exists() or [p.name for p in home.iterdir()] == []


def test_api_misses_are_json_and_the_console_falls_back(daemon):
    miss = Api(daemon).get("no/such/thing/")
    assert miss.status == 404 and miss.body == {"detail": "Not found."}
    assert (
        miss.headers["x-content-type-options"] == "nosniff"
        and "frame-ancestors 'none'" in miss.headers["content-security-policy"]
    )
    assert miss.headers["server"] == "Appliance"


@pytest.mark.parametrize(("body", "status"), [(b"{not json", 400), (b"[1,2]", 400), (b"x" * (256 * 1024 + 1), 413)])
def test_bad_json_bodies_get_400(daemon, body, status):
    reply = Api(daemon).post("token/", raw=body, headers={"Content-Type": "application/json"})
    assert reply.status == status


def test_a_big_folder_is_listed_a_page_at_a_time(daemon):
    """?page=&page_size= gives one page of a folder (folders first, then by name regardless
    of case), its count and the links to the pages beside it; the pages put together
    are the whole listing; without them the whole folder comes, as before."""
    daemon.add_profile("pager")
    home = daemon.home("pager")
    (home / "big").mkdir(parents=True)
    for i in range(230):
        (home / "big" / f"{'F' if i % 2 else 'f'}ile-{i:04d}.txt").write_bytes(b"x" * i)
    for name in ("zeta", "Alpha", "mid"):
        (home / "big" / name).mkdir()
    (home / "big" / "link-to-mid").symlink_to(home / "big" / "mid")  # listed as the folder it points to
    api = signed_in(daemon, "pager", PASSWORD)
    whole = api.get("files/?path=/big").body
    assert "count" not in whole and len(whole["entries"]) == 234

    first = api.get("files/?path=/big&page=1&page_size=100")
    assert first.status == 200, first.body
    page = first.body
    assert page["count"] == 234 and page["previous"] is None and len(page["entries"]) == 100
    assert [e["name"] for e in page["entries"][:4]] == ["Alpha", "link-to-mid", "mid", "zeta"]
    assert page["entries"][4] == {**page["entries"][4], "name": "file-0000.txt", "type": "file", "size": 0}
    seen = page["entries"]
    while page["next"]:
        page = api.get(page["next"].removeprefix("/api/portal/")).body
        seen += page["entries"]
    assert page["previous"] and len(page["entries"]) == 34
    assert seen == whole["entries"]
    assert api.get("files/?path=/big&page=9&page_size=100").body["entries"] == []
    refused = api.get("files/?path=/big&page=x")
    assert refused.status == 400 and "whole numbers" in refused.body["detail"]
    not_a_folder = api.get("files/?path=/big/file-0000.txt&page=1")  # refused as the whole listing is
    assert not_a_folder.status == api.get("files/?path=/big/file-0000.txt").status == 400


def test_paging_and_filters_out_of_their_range_are_refused_not_moved_into_it(daemon):
    """Issue 40, item 12: what the OpenAPI document declares (page_size 1-200, page from
    1, the log filters' enums) is what the API enforces: a 400 naming the field."""
    admin = signed_in(daemon, "admin", ADMIN_PASSWORD)
    for query, field in (("page_size=0", "page_size"), ("page_size=201", "page_size"), ("page_size=-5", "page_size"),
                         ("page=0", "page"), ("page=-1", "page"), ("action=nonsense", "action"),
                         ("protocol=gopher", "protocol")):  # fmt: skip
        reply = admin.get(f"logs/?{query}")
        assert reply.status == 400 and field in reply.body, (query, reply.status, reply.body)
    for query in ("page_size=1", "page_size=200", "action=login", "protocol=web", "protocol=system"):
        assert admin.get(f"logs/?{query}").status == 200, query
    assert admin.get("profiles/?page_size=500").status == 400
    declared = Api(daemon).get("openapi.json").body
    logs = declared["paths"]["/api/portal/logs/"]["get"]["parameters"]
    schema = {p["name"]: p["schema"] for p in logs}
    assert schema["page_size"] == {"type": "integer", "minimum": 1, "maximum": 200}
    assert "system" in schema["protocol"]["enum"] and "login" in schema["action"]["enum"]
