"""Signed download links against a live daemon: `POST files/download-link/` gives a URL
whose `access` value downloads one file of one profile for a minute without the
Bearer header (so a browser streams it to disk), and nothing else."""

from __future__ import annotations

import http.client
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request

from appliance.core import signed
from appliance.core.sessions import DOWNLOAD_LINK_SECONDS, DOWNLOAD_PURPOSE

from ..api_client import Api, signed_in

PASSWORD = "user-password-1"


def person(daemon, username: str, files: dict[str, bytes], **profile) -> Api:
    daemon.add_profile(username, **profile)
    home = daemon.home(username)
    for path, data in files.items():
        (home / path).parent.mkdir(parents=True, exist_ok=True)
        (home / path).write_bytes(data)
    return signed_in(daemon, username, PASSWORD)


def link(api: Api, path: str) -> str:
    reply = api.post("files/download-link/", {"path": path})
    assert reply.status == 200, reply.body
    return reply.body["url"]


def fetch(daemon, url: str, headers: dict | None = None, method: str = "GET") -> tuple[int, bytes, dict]:
    """A plain request to a URL of the daemon, like a browser following a link (no Bearer)."""
    request = urllib.request.Request(f"http://127.0.0.1:{daemon.http_port}{url}", headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read(), {k.lower(): v for k, v in response.headers.items()}
    except urllib.error.HTTPError as e:
        return e.code, e.read(), {k.lower(): v for k, v in e.headers.items()}


def with_query(url: str, **changes) -> str:
    base, _, query = url.partition("?")
    params = dict(urllib.parse.parse_qsl(query))
    params.update(changes)
    return base + "?" + urllib.parse.urlencode(params, quote_via=urllib.parse.quote)


def access_of(url: str) -> str:
    return dict(urllib.parse.parse_qsl(url.partition("?")[2]))["access"]


def downloads(daemon, username: str) -> list:
    return [r for r in daemon.logs("download") if r["username"] == username]


def logged_downloads(daemon, username: str, count: int) -> list:
    """The user's download rows once `count` are there (a row is written as the reply ends)."""
    deadline = time.monotonic() + 20
    while len(rows := downloads(daemon, username)) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    return rows


def test_a_link_downloads_its_file_without_the_bearer_header_audited_once(daemon):
    data = os.urandom(700_000)
    alice = person(daemon, "alice", {"reports/q3 été.bin": data})
    reply = alice.post("files/download-link/", {"path": "reports//q3 été.bin"})
    assert reply.status == 200
    url = reply.body["url"]
    assert url.startswith("/api/portal/files/download/?path=/reports/q3%20%C3%A9t%C3%A9.bin&access=")
    assert reply.body["expires_at"] > time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    status, body, headers = fetch(daemon, url)
    assert status == 200 and body == data
    assert (
        headers["content-disposition"].startswith("attachment;")
        and "q3%20%C3%A9t%C3%A9.bin" in (headers["content-disposition"])
    )
    assert headers["cache-control"] == "no-store"
    rows = logged_downloads(daemon, "alice", 1)
    assert len(rows) == 1  # making the link read nothing and logged nothing; the download, once
    assert rows[0]["protocol"] == "web" and rows[0]["bytes"] == len(data)
    assert rows[0]["path"] == "/reports/q3 été.bin"
    assert rows[0]["message"] == "alice downloaded /reports/q3 été.bin (700.0 KB) over the web"
    # the secret never reaches the access log
    connection = http.client.HTTPConnection("127.0.0.1", daemon.http_port, timeout=30)
    try:  # kept open: the line is written when the request finishes (not after a client hung up first)
        connection.request("HEAD", url)
        assert connection.getresponse().status == 200
        deadline = time.monotonic() + 20
        while "HEAD /api/portal/files/download/" not in daemon.output() and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        connection.close()
    logged = [line for line in daemon.output().splitlines() if "/api/portal/files/download/" in line]
    assert logged and all("&access=*** HTTP/1.1" in line for line in logged), logged
    assert access_of(url) not in daemon.output()


def test_range_requests_work_with_a_link(daemon):
    data = os.urandom(100_000)
    ranger = person(daemon, "ranger", {"big.bin": data})
    url = link(ranger, "/big.bin")
    status, body, headers = fetch(daemon, url, {"Range": "bytes=1000-1999"})
    assert status == 206 and body == data[1000:2000]
    assert headers["content-range"] == f"bytes 1000-1999/{len(data)}"
    status, body, _ = fetch(daemon, url, {"Range": "bytes=-10"})
    assert status == 206 and body == data[-10:]
    assert fetch(daemon, url, {"Range": "bytes=200000-"})[0] == 416


def test_a_link_opens_its_own_path_only(daemon):
    paths = person(daemon, "paths", {"a.txt": b"file a", "b.txt": b"file b", "sub/a.txt": b"sub a"})
    url = link(paths, "/a.txt")
    for other in ("/b.txt", "/sub/a.txt", "/", "/a.txt/../b.txt", "/sub/../sub/a.txt"):
        status, body, _ = fetch(daemon, with_query(url, path=other))
        assert status in (401, 400, 403) and b"file b" not in body and b"sub a" not in body, other
    status, body, _ = fetch(daemon, with_query(url, path="/b.txt"))
    assert status == 401
    assert json.loads(body) == {
        "detail": "This download link is not valid for this file, or it has expired: download it again."
    }
    # the same file named another way is still that file
    assert fetch(daemon, with_query(url, path="//a.txt"))[1] == b"file a"
    assert fetch(daemon, with_query(url, path="/sub/../a.txt"))[1] == b"file a"
    assert fetch(daemon, with_query(url, path="a.txt/"))[1] == b"file a"
    # the link downloads, nothing else: not a listing, not a delete
    access = access_of(url)
    assert fetch(daemon, f"/api/portal/files/?path=/&access={access}")[0] == 401
    assert fetch(daemon, f"/api/portal/files/?path=/a.txt&access={access}", method="DELETE")[0] == 401
    assert (daemon.home("paths") / "a.txt").exists()


def test_another_users_link_is_refused(daemon):
    owner = person(daemon, "owner1", {"same.txt": b"owner's"})
    other = person(daemon, "other1", {"same.txt": b"other's"})
    owners = link(owner, "/same.txt")
    # a signed-in user presenting someone else's link is refused
    refused = other.get(owners.removeprefix("/api/portal/"))
    assert refused.status == 403 and refused.body == {"detail": "This download link was made for another user."}
    # another user's value with this user's id in it does not verify
    access = access_of(owners)
    _, until, mac = access.split(".")
    other_id = daemon.query("SELECT id FROM profiles WHERE username = 'other1'")[0]["id"]
    assert fetch(daemon, with_query(owners, access=f"{other_id}.{until}.{mac}"))[0] == 401
    # a user's own link for the same path gives that user's own file
    assert fetch(daemon, link(other, "/same.txt"))[1] == b"other's"
    assert fetch(daemon, owners)[1] == b"owner's"
    # another organisation's user with the same home path gets nothing of this one
    org = daemon.add_organisation("Elsewhere Ltd")
    stranger = person(daemon, "stranger1", {"same.txt": b"stranger's"}, org_id=org, home="/owner1")
    assert stranger.get(owners.removeprefix("/api/portal/")).status == 403


def test_a_link_expires(daemon):
    person(daemon, "expiry", {"f.txt": b"expiring"})
    profile_id = daemon.query("SELECT id FROM profiles WHERE username = 'expiry'")[0]["id"]
    secret = (daemon.data_dir / "token.key").read_bytes().strip()
    now = int(time.time())

    def url(until: int, purpose: str = DOWNLOAD_PURPOSE, key: bytes = secret) -> str:
        value = signed.sign(key, purpose, profile_id, until, "/f.txt")
        return f"/api/portal/files/download/?path=/f.txt&access={value}"

    assert fetch(daemon, url(now + 30))[1] == b"expiring"  # genuine: the daemon takes what the test makes
    assert fetch(daemon, url(now - 1))[0] == 401  # a second late
    assert fetch(daemon, url(now - DOWNLOAD_LINK_SECONDS))[0] == 401
    assert fetch(daemon, url(now + 30, purpose="share-access"))[0] == 401  # made for another purpose
    assert fetch(daemon, url(now + 30, key=b"not the secret"))[0] == 401
    for garbage in ("", "x", "1.2", "1.2.3.4", f"{profile_id}.+{now + 30}.00", "9" * 30 + ".9.ab", "é.é.é"):
        status = fetch(daemon, with_query(url(now + 30), access=garbage))[0]
        assert status == 401, garbage  # (an empty access is no credentials at all)


def test_a_link_is_refused_once_the_profile_may_no_longer_download(daemon):
    person(daemon, "revoked", {"f.txt": b"data"})
    api = signed_in(daemon, "revoked", PASSWORD)
    for change, status in (
        ("UPDATE profiles SET permissions = '[\"list\"]' WHERE username = 'revoked'", 403),
        ("UPDATE profiles SET active = 0 WHERE username = 'revoked'", 401),
        (
            "UPDATE profiles SET password_changed_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+5 seconds') "
            "WHERE username = 'revoked'",
            401,
        ),
    ):
        url = link(api, "/f.txt")
        daemon.execute(change)
        assert fetch(daemon, url)[0] == status, change
        daemon.execute(
            "UPDATE profiles SET active = 1, password_changed_at = NULL, "
            "permissions = '[\"list\", \"download\"]' WHERE username = 'revoked'"
        )
    org = daemon.query("SELECT org_id FROM profiles WHERE username = 'revoked'")[0]["org_id"]
    url = link(api, "/f.txt")
    daemon.execute("UPDATE organisations SET status = 'payment_missing' WHERE id = ?", org)
    try:
        status, body, _ = fetch(daemon, url)
        assert (status, json.loads(body)) == (403, {"detail": "Organisation payment missing"})
    finally:
        daemon.execute("UPDATE organisations SET status = 'active' WHERE id = ?", org)


def test_a_link_is_made_only_for_a_file_that_may_be_downloaded_now(daemon):
    maker = person(daemon, "maker", {"f.txt": b"f", "folder/g.txt": b"g"})
    os.symlink("f.txt", daemon.home("maker") / "link.txt")
    assert maker.post("files/download-link/", {"path": "/missing.txt"}).status == 404
    assert maker.post("files/download-link/", {"path": "/folder"}).status == 400
    assert maker.post("files/download-link/", {"path": "/link.txt"}).status == 400
    assert maker.post("files/download-link/", {"path": "/"}).status == 400
    assert maker.post("files/download-link/", {}).status == 400
    assert maker.post("files/download-link/", {"path": "/../../etc/passwd"}).status in (400, 403, 404)
    assert Api(daemon).post("files/download-link/", {"path": "/f.txt"}).status == 401
    person(daemon, "lister", {"f.txt": b"f"}, permissions=["list"])
    lister = signed_in(daemon, "lister", PASSWORD)
    refused = lister.post("files/download-link/", {"path": "/f.txt"})
    assert refused.status == 403 and "You may not download files" in refused.body["detail"]
    assert not downloads(daemon, "maker") and not downloads(daemon, "lister")


def fetch_from(daemon, source: str, url: str) -> tuple[int, bytes]:
    """GET a URL of the daemon from another loopback address (another client)."""
    connection = http.client.HTTPConnection("127.0.0.1", daemon.http_port, timeout=30, source_address=(source, 0))
    try:
        connection.request("GET", url)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def test_a_link_is_checked_at_use_as_its_maker_the_token_and_the_address(daemon):
    """Issue 40, item 5: a link made through an API token ends with the token; a link is
    refused from an address outside its profile's IP allow-list, as the profile is."""
    data = b"made through a token"
    alice = person(daemon, "tokenlinker", {"report.bin": data}, is_admin=True)
    made = alice.post("tokens/", {"name": "automation", "scopes": ["files"]})
    assert made.status == 201, made.body
    robot = Api(daemon, made.body["token"])
    url = link(robot, "/report.bin")
    status, body, _ = fetch(daemon, url)
    assert (status, body) == (200, data)
    assert alice.delete(f"tokens/{made.body['id']}/").status == 204
    status, body, _ = fetch(daemon, url)
    assert status == 401 and json.loads(body)["detail"].startswith("This download link is not valid"), body

    # the profile may act only from 127.0.0.1: so may its links
    fenced = person(daemon, "fenced", {"plans.bin": b"inside the fence"}, ip_allow=["127.0.0.1"])
    url = link(fenced, "/plans.bin")
    assert fetch_from(daemon, "127.0.0.1", url) == (200, b"inside the fence")
    status, body = fetch_from(daemon, "127.0.0.2", url)
    assert status in (401, 403) and b"inside the fence" not in body, (status, body)
    assert not [r for r in downloads(daemon, "fenced") if r["remote_address"] == "127.0.0.2"]
