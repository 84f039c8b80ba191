"""The HTTP API as an integrator meets it from outside, with odd but plausible input:
every answer is a JSON reply a person can act on, never a 500, and what is saved
can be read back."""

from __future__ import annotations

import csv
import io
import time
from datetime import UTC, datetime, timedelta, timezone

from ..api_client import Api, signed_in
from ..helpers import ADMIN_PASSWORD

PASSWORD = "user-password-1"
BOUNDARY = "XyZoutside"
MULTIPART = {"Content-Type": f"multipart/form-data; boundary={BOUNDARY}"}


def _multipart(filename: str, data: bytes) -> bytes:
    return (
        (
            f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="{filename}"\r\n'
            f"Content-Type: application/octet-stream\r\n\r\n"
        ).encode()
        + data
        + f"\r\n--{BOUNDARY}--\r\n".encode()
    )


def _admin(daemon) -> Api:
    return signed_in(daemon, "admin", ADMIN_PASSWORD)


# -- the audit log ----------------------------------------------------------------------


def test_the_log_export_leaves_empty_fields_empty(daemon):
    admin = _admin(daemon)  # its sign-in is a log row without a path
    export = admin.get("logs/export/")
    assert export.status == 200
    rows = list(csv.DictReader(io.StringIO(export.raw.decode())))
    logins = [r for r in rows if r["action"] == "login"]
    assert logins and all(r["path"] == "" for r in logins), logins[:2]


def test_log_date_filters_read_dates_with_an_offset_and_refuse_what_is_not_a_date(daemon):
    admin = _admin(daemon)
    # an hour ago, written in +05:00 (its wall-clock digits are later than the UTC ones)
    hour_ago = (datetime.now(UTC) - timedelta(hours=1)).astimezone(timezone(timedelta(hours=5)))
    recent = admin.get("logs/?" + "date_from=" + hour_ago.isoformat().replace("+", "%2B"))
    assert recent.status == 200 and recent.body["count"] >= 1, recent.body
    for bad in ("garbage", "24/11/2026"):
        for path in ("logs/", "logs/export/"):
            reply = admin.get(f"{path}?date_from={bad}")
            assert reply.status == 400 and "date_from" in reply.body, (path, bad, reply.raw)
        assert admin.get(f"logs/?date_to={bad}").status == 400


def test_the_operators_view_of_an_organisations_log_has_the_date_filters(daemon):
    operator = _admin(daemon)  # the setup admin is the operator; its sign-in is a log row
    listing = f"god/organisations/{daemon.default_org()}/logs/"
    hour_ago = (datetime.now(UTC) - timedelta(hours=1)).isoformat().replace("+", "%2B")
    tomorrow = (datetime.now(UTC) + timedelta(days=1)).isoformat().replace("+", "%2B")
    assert operator.get(f"{listing}?date_from={hour_ago}").body["count"] >= 1
    assert operator.get(f"{listing}?date_from={tomorrow}").body["count"] == 0
    assert operator.get(f"{listing}?date_to={hour_ago}").body["count"] == 0
    reply = operator.get(f"{listing}?date_to=garbage")
    assert reply.status == 400 and "date_to" in reply.body, reply.raw


# -- request bodies -----------------------------------------------------------------------


def test_a_deeply_nested_json_body_is_a_400(daemon):
    body = b'{"a":' * 10_000 + b"1" + b"}" * 10_000  # within the 256 KiB a JSON body may have
    reply = _admin(daemon).post("profiles/", raw=body, headers={"Content-Type": "application/json"})
    assert reply.status == 400 and "JSON" in reply.body["detail"]


def test_numbers_too_large_to_store_are_field_errors(daemon):
    admin = _admin(daemon)
    profile_id = daemon.add_profile("bignum")
    for field in ("quota_bytes", "quota_files", "source"):
        reply = admin.patch(f"profiles/{profile_id}/", {field: 10**30})
        assert reply.status == 400 and field in reply.body, (field, reply.raw)


def test_a_malformed_ssh_key_is_a_field_error(daemon):
    admin = _admin(daemon)
    profile_id = daemon.add_profile("badkey")
    for key in ("ssh-rsa AAAA garbage", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5", "ssh-rsa"):
        reply = admin.patch(f"profiles/{profile_id}/", {"ssh_keys": [key]})
        assert reply.status == 400 and "ssh_keys" in reply.body, (key, reply.raw)


def test_dates_at_the_ends_of_the_calendar_are_refused_or_kept_readable(daemon):
    admin = _admin(daemon)
    profile_id = daemon.add_profile("farout")
    overflow = "9999-12-31T23:59:59-05:00"  # past the last date Python knows, in UTC
    assert admin.patch(f"profiles/{profile_id}/", {"expires_at": overflow}).status == 400
    assert admin.post("tokens/", {"name": "far", "expires_at": overflow}).status == 400
    assert admin.post("shares/", {"path": "/", "expires_at": "0001-01-01T00:00:00+05:00"}).status == 400
    org = admin.get("god/organisations/").body["results"][0]["id"]
    assert admin.patch(f"god/organisations/{org}/", {"trial_ends_at": overflow}).status == 400
    # a typo for a year long gone is an expiry in the past: the profile cannot sign in,
    # and is told so (it used to be saved unreadably, and every sign-in was a 500)
    saved = admin.patch(f"profiles/{profile_id}/", {"expires_at": "0202-01-01T00:00:00Z"})
    assert saved.status == 200 and saved.body["expires_at"].startswith("0202-01-01T00:00:00"), saved.raw
    refused = Api(daemon).login("farout", PASSWORD)
    assert refused.status == 401, refused.raw


def test_a_token_name_too_long_says_so(daemon):
    reply = _admin(daemon).post("tokens/", {"name": "x" * 201})
    assert reply.status == 400 and "200" in reply.body["name"][0]


# -- files --------------------------------------------------------------------------------


def test_ranges_the_server_does_not_serve_get_the_whole_file(daemon):
    daemon.add_profile("ranger")
    api = signed_in(daemon, "ranger", PASSWORD)
    assert api.post("files/upload/?path=/", raw=_multipart("r.txt", b"0123456789"), headers=MULTIPART).status == 201
    # RFC 9110 14.2: an unknown unit or a range set the server does not serve is ignored
    for header in ("items=0-1", "bytes=0-1,4-5", "bytes=5-2"):
        reply = api.get("files/download/?path=/r.txt", headers={"Range": header})
        assert reply.status == 200 and reply.raw == b"0123456789", (header, reply.status)
    part = api.get("files/download/?path=/r.txt", headers={"Range": "bytes=2-4"})
    assert part.status == 206 and part.raw == b"234"
    past = api.get("files/download/?path=/r.txt", headers={"Range": "bytes=50-"})
    assert past.status == 416 and past.headers["content-range"] == "bytes */10"
    assert "10 bytes" in past.body["detail"]  # JSON like every other error


def test_a_form_without_a_chosen_file_is_told_to_choose_one(daemon):
    # a browser form whose file input was left empty sends a part with filename=""
    daemon.add_profile("emptyform")
    api = signed_in(daemon, "emptyform", PASSWORD)
    reply = api.post("files/upload/?path=/", raw=_multipart("", b""), headers=MULTIPART)
    assert reply.status == 400 and reply.body == {"file": ["Choose a file to upload."]}, reply.raw


def test_a_head_request_or_a_range_outside_the_file_is_not_logged_as_a_download(daemon):
    # download managers and `curl -I` ask HEAD first, resuming ones a range past the end
    # of a file they have whole; the dashboard counts download rows
    daemon.add_profile("header")
    api = signed_in(daemon, "header", PASSWORD)
    assert api.post("files/upload/?path=/", raw=_multipart("h.bin", b"x" * 1000), headers=MULTIPART).status == 201
    for _ in range(2):
        head = api.call("HEAD", "files/download/?path=/h.bin")
        assert head.status == 200 and head.headers["content-length"] == "1000" and head.raw == b""
    assert api.get("files/download/?path=/h.bin", headers={"Range": "bytes=1000-"}).status == 416
    assert api.call("HEAD", "files/download/?path=/none.bin").status == 404
    assert api.call("HEAD", "files/download/?path=/").status == 400
    assert [r for r in daemon.logs("download") if r["username"] == "header"] == []
    assert api.get("files/download/?path=/h.bin").raw == b"x" * 1000
    # the row is written just after the reply ends
    for _ in range(100):
        rows = [r["bytes"] for r in daemon.logs("download") if r["username"] == "header"]
        if rows:
            break
        time.sleep(0.05)
    assert rows == [1000]


def test_a_token_sent_with_another_scheme_is_told_how_to_send_it(daemon):
    token = _admin(daemon).post("tokens/", {"name": "scheme"}).body["token"]
    for header in (f"Token {token}", f"Basic {token}", token):
        reply = Api(daemon).get("organisation/", headers={"Authorization": header})
        assert reply.status == 401 and "Authorization: Bearer" in reply.body["detail"], (header, reply.raw)
    missing = Api(daemon).get("organisation/")
    assert missing.status == 401 and missing.body == {"detail": "Authentication credentials were not provided."}
    # RFC 9110 15.5.2: a 401 names the scheme it wants
    assert missing.headers["www-authenticate"].startswith("Bearer")
    assert Api(daemon, "garbage").get("organisation/").headers["www-authenticate"].startswith("Bearer")
    assert Api(daemon).get("organisation/", headers={"Authorization": f"bearer {token}"}).status == 200


def test_an_api_token_stops_when_its_owners_account_expires(daemon):
    owner = daemon.add_profile("tokenowner", is_admin=True)
    token = signed_in(daemon, "tokenowner", PASSWORD).post("tokens/", {"name": "cron"}).body["token"]
    script = Api(daemon, token)
    assert script.get("files/").status == 200
    daemon.execute("UPDATE profiles SET expires_at=? WHERE id=?", "2020-01-01T00:00:00.000000Z", owner)
    for path in ("files/", "profiles/"):
        reply = script.get(path)
        assert reply.status == 401 and reply.body["code"] == "token_not_valid", (path, reply.raw)
        assert "expired" in reply.body["messages"][0]["message"]


def test_an_api_token_is_refused_from_an_address_its_owner_may_not_use(daemon):
    owner = daemon.add_profile("tokenip", is_admin=True)
    token = signed_in(daemon, "tokenip", PASSWORD).post("tokens/", {"name": "cron"}).body["token"]
    daemon.execute("UPDATE profiles SET ip_allow=? WHERE id=?", '["10.0.0.0/8"]', owner)
    reply = Api(daemon, token).get("files/")
    assert reply.status == 401 and "127.0.0.1" in reply.body["messages"][0]["message"], reply.raw


def test_a_web_session_is_refused_from_an_address_taken_off_the_allow_list(daemon):
    """An open web session stops at once, as a new sign-in would be refused; its
    refresh token cannot get it a new access token either."""
    owner = daemon.add_profile("sessionip")
    api = signed_in(daemon, "sessionip", PASSWORD)
    assert api.get("files/").status == 200
    daemon.execute("UPDATE profiles SET ip_allow=? WHERE id=?", '["10.0.0.0/8"]', owner)
    reply = api.get("files/")
    assert reply.status == 401 and "127.0.0.1" in reply.body["messages"][0]["message"], reply.raw
    refreshed = Api(daemon).post("token/refresh/", {"refresh": api.refresh_token})
    assert refreshed.status == 401 and "127.0.0.1" in refreshed.body["messages"][0]["message"], refreshed.raw
