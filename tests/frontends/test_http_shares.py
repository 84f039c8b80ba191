"""Share links against a live daemon: the owner's shares/ API, and what a link opens
without sign-in (metadata, folder listings, downloads with Range, drop-box uploads),
expiry, download limits, passwords, scoping, mail to recipients and the audit rows."""

from __future__ import annotations

import hashlib
import html
import os
import subprocess
import urllib.parse
from datetime import timedelta

import pytest

from ..api_client import Api, signed_in
from ..helpers import ADMIN_PASSWORD, now_iso, wait_for

PASSWORD = "user-password-1"
MULTIPART = {"Content-Type": "multipart/form-data; boundary=XyZ"}


def multipart(name: str, data: bytes) -> bytes:
    return (
        b'--XyZ\r\nContent-Disposition: form-data; name="file"; filename="' + name.encode() + b'"\r\n'
        b"Content-Type: application/octet-stream\r\n\r\n" + data + b"\r\n--XyZ--\r\n"
    )


@pytest.fixture(scope="module")
def daemon(mail_daemon):
    """The module's daemon mails through the test SMTP listener (tests/conftest.py)."""
    return mail_daemon


def owner(daemon, username: str, files: dict[str, bytes] | None = None, **profile) -> Api:
    """A signed-in profile whose home holds `files` (paths relative to the home)."""
    daemon.add_profile(username, **profile)
    home = daemon.home(username)
    home.mkdir(parents=True, exist_ok=True)
    for path, data in (files or {}).items():
        (home / path).parent.mkdir(parents=True, exist_ok=True)
        (home / path).write_bytes(data)
    return signed_in(daemon, username, PASSWORD)


def share(api: Api, **body) -> dict:
    reply = api.post("shares/", body)
    assert reply.status == 201, reply.body
    return reply.body


def curl(daemon, path: str, output, *args: str) -> int:
    """GET with curl like a browser following a link; the HTTP status."""
    url = f"http://127.0.0.1:{daemon.http_port}/api/portal/{path}"
    done = subprocess.run(
        ["curl", "-sS", "-o", str(output), "-w", "%{http_code}", *args, url],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    return int(done.stdout)


def test_create_list_get_revoke(daemon):
    data = os.urandom(300_000)
    alice = owner(daemon, "alice", {"reports/q3.pdf": data})
    created = share(alice, path="/reports/q3.pdf")
    token = created["token"]
    assert len(token) >= 40
    assert created["url"] == f"http://127.0.0.1:{daemon.http_port}/auth/shared?token={token}"
    assert created["path"] == "/reports/q3.pdf" and created["name"] == "q3.pdf" and created["kind"] == "file"
    assert created["created_by"] == "alice" and created["has_password"] is False and created["revoked"] is False
    assert created["downloads"] == 0 and created["max_downloads"] is None and created["upload_only"] is False
    assert created["expires_at"] > now_iso(timedelta(days=6)) and created["expires_at"] < now_iso(timedelta(days=8))
    # only a hash of the token is stored
    stored = daemon.query("SELECT token FROM shares WHERE id=?", created["id"])[0]["token"]
    assert stored == hashlib.sha256(token.encode()).hexdigest()
    listed = alice.get("shares/").body
    mine = [s for s in listed["results"] if s["id"] == created["id"]]
    assert len(mine) == 1 and "token" not in mine[0] and mine[0]["url"] is None
    item = alice.get(f"shares/{created['id']}/")
    assert item.status == 200 and item.body["path"] == "/reports/q3.pdf"

    public = Api(daemon)
    meta = public.get(f"shared/{token}/")
    assert meta.status == 200
    assert meta.body["name"] == "q3.pdf" and meta.body["kind"] == "file" and meta.body["size"] == len(data)
    assert meta.body["password_required"] is False and meta.body["upload_only"] is False
    assert meta.body["downloads_left"] is None and meta.body["expires_at"] == created["expires_at"]
    down = public.get(f"shared/{token}/download/")
    assert down.status == 200 and down.raw == data
    assert (
        down.headers["content-disposition"].startswith("attachment;")
        and "q3.pdf" in down.headers["content-disposition"]
    )

    assert alice.delete(f"shares/{created['id']}/").status == 204
    gone = public.get(f"shared/{token}/")
    assert gone.status == 410 and gone.body == {"detail": "This link was revoked."}
    assert public.get(f"shared/{token}/download/").status == 410
    assert alice.get(f"shares/{created['id']}/").body["revoked"] is True
    assert public.get("shared/no-such-token/").body == {"detail": "This link does not exist."}
    assert all(token not in (r["message"] + r["path"]) for r in daemon.logs())  # the secret is never logged
    assert "/api/portal/shared/***/download/" in daemon.output() and token not in daemon.output()


def test_bad_share_requests_are_refused(daemon):
    carol = owner(daemon, "carol", {"doc.txt": b"doc", "box/keep.txt": b"k"})
    cases = [
        ({}, "path"),
        ({"path": "/missing.txt"}, "path"),
        ({"path": "/doc.txt", "expires_at": now_iso(timedelta(hours=-1))}, "expires_at"),
        ({"path": "/doc.txt", "expires_at": now_iso(timedelta(days=400))}, "expires_at"),
        ({"path": "/doc.txt", "expires_at": "next tuesday"}, "expires_at"),
        ({"path": "/doc.txt", "max_downloads": 0}, "max_downloads"),
        ({"path": "/doc.txt", "max_downloads": "3"}, "max_downloads"),
        ({"path": "/doc.txt", "upload_only": True}, "upload_only"),
        ({"path": "/box", "upload_only": True, "max_downloads": 2}, "max_downloads"),
        ({"path": "/doc.txt", "password": "short"}, "password"),
        ({"path": "/doc.txt", "recipients": ["not-an-address"]}, "recipients"),
        ({"path": "/doc.txt", "recipients": ["a@example.com\r\nBcc: x@evil.example"]}, "recipients"),
    ]
    for body, field in cases:
        reply = carol.post("shares/", body)
        assert reply.status == 400 and field in reply.body, (body, reply.body)
    escape = carol.post("shares/", {"path": "/../alice/reports/q3.pdf"})
    assert escape.status == 403
    assert Api(daemon).post("shares/", {"path": "/doc.txt"}).status == 401
    # permissions: a download link needs download (and list for a folder), a drop box upload
    reader = owner(daemon, "lister", {"f.txt": b"f", "d/x": b"x"}, permissions=["list"])
    assert reader.post("shares/", {"path": "/f.txt"}).status == 403
    uploader = owner(daemon, "uploader", {"d/x": b"x"}, permissions=["download"])
    assert uploader.post("shares/", {"path": "/d"}).status == 403  # a folder needs list
    assert uploader.post("shares/", {"path": "/d", "upload_only": True}).status == 403


def test_range_and_a_browser_download_with_curl(daemon, tmp_path):
    data = os.urandom(1_000_003)
    dave = owner(daemon, "dave", {"big.bin": data})
    token = share(dave, path="/big.bin")["token"]
    public = Api(daemon)
    part = public.get(f"shared/{token}/download/", headers={"Range": "bytes=1000-1999"})
    assert part.status == 206 and part.raw == data[1000:2000]
    assert part.headers["content-range"] == f"bytes 1000-1999/{len(data)}"
    tail = public.get(f"shared/{token}/download/", headers={"Range": "bytes=-10"})
    assert tail.status == 206 and tail.raw == data[-10:]
    assert public.get(f"shared/{token}/download/", headers={"Range": "bytes=5000000-"}).status == 416
    head = public.call("HEAD", f"shared/{token}/download/")
    assert head.status == 200 and head.headers["content-length"] == str(len(data)) and head.raw == b""
    assert curl(daemon, f"shared/{token}/download/", tmp_path / "got.bin") == 200
    assert (tmp_path / "got.bin").read_bytes() == data
    # the two ranges and the whole file are downloads; the 416 and the HEAD are not
    sent = lambda: sorted(r["bytes"] for r in daemon.logs("download") if r["username"] == "dave")  # noqa: E731
    wait_for(lambda: len(data) in sent())  # the 416's and the HEAD's would be written before their replies
    assert sent() == [10, 1000, len(data)]


def test_an_expired_link_answers_410(daemon):
    erin = owner(daemon, "erin", {"old.txt": b"old"})
    created = share(erin, path="/old.txt", expires_at=now_iso(timedelta(hours=1)))
    public = Api(daemon)
    assert public.get(f"shared/{created['token']}/").status == 200
    daemon.execute("UPDATE shares SET expires_at=? WHERE id=?", now_iso(timedelta(seconds=-5)), created["id"])
    expired = public.get(f"shared/{created['token']}/")
    assert expired.status == 410 and expired.body == {"detail": "This link has expired."}
    assert public.get(f"shared/{created['token']}/download/").status == 410


def test_the_download_limit_is_counted_and_enforced(daemon):
    frank = owner(daemon, "frank", {"twice.txt": b"only twice"})
    created = share(frank, path="/twice.txt", max_downloads=2)
    token, public = created["token"], Api(daemon)
    assert public.get(f"shared/{token}/").body["downloads_left"] == 2
    assert public.get(f"shared/{token}/download/").raw == b"only twice"
    assert public.get(f"shared/{token}/").body["downloads_left"] == 1
    assert public.get(f"shared/{token}/download/").raw == b"only twice"
    third = public.get(f"shared/{token}/download/")
    assert third.status == 410 and third.body == {"detail": "This link has reached its download limit."}
    assert public.get(f"shared/{token}/").status == 410
    assert frank.get(f"shares/{created['id']}/").body["downloads"] == 2
    # the owner raises the limit: the link works again, once
    raised = frank.patch(f"shares/{created['id']}/", {"max_downloads": 3})
    assert raised.status == 200 and raised.body["max_downloads"] == 3
    assert public.get(f"shared/{token}/download/").status == 200
    assert public.get(f"shared/{token}/download/").status == 410
    assert frank.patch(f"shares/{created['id']}/", {"max_downloads": -1}).status == 400


def test_a_password_is_needed_and_unlock_gives_a_browser_link(daemon, tmp_path):
    gina = owner(daemon, "gina", {"secret.txt": b"the secret"})
    created = share(gina, path="/secret.txt", password="share-pass-1")
    assert created["has_password"] is True
    token, public = created["token"], Api(daemon)
    locked = public.get(f"shared/{token}/")
    assert locked.status == 200 and locked.body["password_required"] is True and locked.body["unlocked"] is False
    assert locked.body["name"] is None and locked.body["size"] is None  # nothing about the file before the password
    needed = public.get(f"shared/{token}/download/")
    assert needed.status == 401 and needed.body == {"detail": "This link is protected by a password."}
    wrong = public.get(f"shared/{token}/download/", headers={"X-Share-Password": "wrong-pass-1"})
    assert wrong.status == 401 and wrong.body == {"detail": "The password is not right."}
    right = public.get(f"shared/{token}/download/", headers={"X-Share-Password": "share-pass-1"})
    assert right.status == 200 and right.raw == b"the secret"
    assert public.post(f"shared/{token}/unlock/", {"password": "nope-nope"}).status == 401
    unlocked = public.post(f"shared/{token}/unlock/", {"password": "share-pass-1"})
    assert unlocked.status == 200 and unlocked.body["expires_at"] > now_iso()
    access = urllib.parse.quote(unlocked.body["access"])
    assert public.get(f"shared/{token}/?access={access}").body["name"] == "secret.txt"
    assert curl(daemon, f"shared/{token}/download/?access={access}", tmp_path / "s.txt") == 200
    assert (tmp_path / "s.txt").read_bytes() == b"the secret"
    assert "/download/?access=*** HTTP/1.1" in daemon.output() and unlocked.body["access"] not in daemon.output()
    forged = unlocked.body["access"][:-2] + ("00" if not unlocked.body["access"].endswith("00") else "11")
    assert public.get(f"shared/{token}/download/?access={forged}").status == 401
    # a new password ends the access given with the old one
    assert gina.patch(f"shares/{created['id']}/", {"password": "other-pass-2"}).status == 200
    assert public.get(f"shared/{token}/download/?access={access}").status == 401
    assert public.get(f"shared/{token}/download/", headers={"X-Share-Password": "other-pass-2"}).status == 200
    # removing the password opens the link
    assert gina.patch(f"shares/{created['id']}/", {"password": None}).body["has_password"] is False
    assert public.get(f"shared/{token}/download/").status == 200
    refused = [r["message"] for r in daemon.logs("share_access") if "wrong password" in r["message"]]
    assert len(refused) == 2 and all(
        m.startswith(f"anonymous was refused share {created['id']} of gina") for m in refused
    )


def test_a_drop_box_takes_uploads_without_overwriting_and_shows_nothing(daemon):
    hugo = owner(daemon, "hugo", {"inbox/scan.pdf": b"the original", "inbox/private.txt": b"private"})
    created = share(hugo, path="/inbox", upload_only=True)
    assert created["upload_only"] is True and created["kind"] == "folder"
    token, public = created["token"], Api(daemon)
    meta = public.get(f"shared/{token}/").body
    assert meta["upload_only"] is True and meta["kind"] == "folder" and meta["name"] == "inbox"
    first = public.post(f"shared/{token}/upload/", raw=multipart("scan.pdf", b"first upload"), headers=MULTIPART)
    assert first.status == 201 and first.body == {"files": [{"name": "scan (1).pdf", "size": 12}]}
    second = public.post(f"shared/{token}/upload/", raw=multipart("../x/scan.pdf", b"second"), headers=MULTIPART)
    assert second.status == 201 and second.body["files"] == [{"name": "scan (2).pdf", "size": 6}]
    new = public.post(f"shared/{token}/upload/", raw=multipart("notes.txt", b"notes"), headers=MULTIPART)
    assert new.body["files"] == [{"name": "notes.txt", "size": 5}]
    # the owner finds them in their own files; nothing was replaced
    listing = {e["name"]: e["size"] for e in hugo.get("files/?path=/inbox").body["entries"]}
    assert listing == {"scan.pdf": 12, "scan (1).pdf": 12, "scan (2).pdf": 6, "notes.txt": 5, "private.txt": 7}
    assert hugo.get("files/download/?path=/inbox/scan.pdf").raw == b"the original"
    assert hugo.get("files/download/?path=/inbox/scan%20%281%29.pdf").raw == b"first upload"
    assert not (daemon.home("hugo") / "x").exists()
    # visitors may neither list nor download
    listed = public.get(f"shared/{token}/files/?path=/")
    assert listed.status == 403 and listed.body == {"detail": "This link is a drop box: it takes uploads only."}
    assert public.get(f"shared/{token}/download/?path=/private.txt").status == 403
    # a download link takes no uploads
    download_link = share(hugo, path="/inbox")["token"]
    refused = public.post(f"shared/{download_link}/upload/", raw=multipart("x.txt", b"x"), headers=MULTIPART)
    assert refused.status == 403 and refused.body == {"detail": "This link does not take uploads."}
    assert public.post(f"shared/{token}/upload/", raw=b"not multipart").status == 400


def test_a_folder_share_lists_and_downloads_inside_only(daemon):
    files = {"project/a.txt": b"a", "project/sub/b.txt": b"bb", "outside.txt": b"not shared"}
    ivan = owner(daemon, "ivan", files)
    token, public = share(ivan, path="/project")["token"], Api(daemon)
    root = public.get(f"shared/{token}/files/?path=/")
    assert root.status == 200 and root.body["path"] == "/"
    assert [(e["name"], e["type"]) for e in root.body["entries"]] == [("sub", "dir"), ("a.txt", "file")]
    sub = public.get(f"shared/{token}/files/?path=/sub")
    assert sub.body["path"] == "/sub" and [e["name"] for e in sub.body["entries"]] == ["b.txt"]
    assert public.get(f"shared/{token}/download/?path=/sub/b.txt").raw == b"bb"
    assert public.get(f"shared/{token}/download/?path=/sub/../a.txt").raw == b"a"
    for escape in ("/../outside.txt", "../outside.txt", "/sub/../../outside.txt", "..%2Foutside.txt"):
        reply = public.get(f"shared/{token}/download/?path={escape}")
        assert reply.status == 403 and reply.body == {"detail": "That path leads outside the shared folder."}, escape
    assert public.get(f"shared/{token}/files/?path=/../").status == 403
    assert public.get(f"shared/{token}/download/?path=/").status == 400
    missing = public.get(f"shared/{token}/download/?path=/nothing.txt")
    assert missing.status == 404 and "/project" not in missing.body["detail"], missing.body
    assert "/nothing.txt" in missing.body["detail"], missing.body  # the path as the visitor gave it
    listed = public.get(f"shared/{token}/files/?path=/sub/b.txt")  # a file, not a folder
    assert listed.status == 400 and "/project" not in str(listed.body) and "/sub/b.txt" in str(listed.body)


def test_shares_are_scoped_to_their_owner_and_organisation(daemon):
    jane = owner(daemon, "jane", {"j.txt": b"j"})
    created = share(jane, path="/j.txt")
    kim = owner(daemon, "kim")
    assert kim.get(f"shares/{created['id']}/").status == 404
    assert kim.delete(f"shares/{created['id']}/").status == 404
    assert kim.patch(f"shares/{created['id']}/", {"max_downloads": 1}).status == 404
    assert created["id"] not in [s["id"] for s in kim.get("shares/").body["results"]]
    admin = signed_in(daemon, "admin", ADMIN_PASSWORD)
    assert created["id"] in [s["id"] for s in admin.get("shares/").body["results"]]
    assert admin.get(f"shares/{created['id']}/").body["created_by"] == "jane"
    other_org = daemon.add_organisation("Other Org")
    daemon.add_profile("other-admin", org_id=other_org, is_admin=True)
    stranger = signed_in(daemon, "other-admin", PASSWORD)
    missing = stranger.get(f"shares/{created['id']}/")
    assert missing.status == 404 and missing.body == {"detail": "No such share."}
    assert stranger.delete(f"shares/{created['id']}/").status == 404
    assert created["id"] not in [s["id"] for s in stranger.get("shares/").body["results"]]
    assert admin.delete(f"shares/{created['id']}/").status == 204  # an admin may revoke any of the organisation's
    assert Api(daemon).get(f"shared/{created['token']}/").status == 410


def test_a_link_stops_with_its_owner_and_organisation(daemon):
    org = daemon.add_organisation("Lapsed Org")
    lena = owner(daemon, "lena", {"l.txt": b"l"}, org_id=org)
    token, public = share(lena, path="/l.txt")["token"], Api(daemon)
    daemon.execute("UPDATE profiles SET active=0 WHERE username='lena'")
    disabled = public.get(f"shared/{token}/")
    assert disabled.status == 410 and "disabled" in disabled.body["detail"]
    daemon.execute("UPDATE profiles SET active=1 WHERE username='lena'")
    assert public.get(f"shared/{token}/").status == 200
    daemon.execute("UPDATE organisations SET status='payment_missing' WHERE id=?", org)
    assert public.get(f"shared/{token}/download/").body == {"detail": "Organisation payment missing"}
    daemon.execute("UPDATE organisations SET status='deleted' WHERE id=?", org)
    assert public.get(f"shared/{token}/").body == {"detail": "Organisation is deleted"}


def test_recipients_get_the_link_by_mail(daemon, smtp):
    mona = owner(daemon, "mona", {"plan.txt": b"plan"})
    created = share(
        mona, path="/plan.txt", password="mail-pass-12", max_downloads=3,
        recipients=["reader1@example.net", "reader2@example.net"], message="Here is <b>the plan</b>.",
    )  # fmt: skip
    for recipient in ("reader1@example.net", "reader2@example.net"):
        message = smtp.wait_for(recipient)
        assert message["Subject"] == "mona shared plan.txt with you" and message["From"] == "portal@acme.example"
        text = message.get_body(("plain",)).get_content()
        assert created["url"] in text and "Here is <b>the plan</b>." in text and "3 downloads" in text
        assert "mail-pass-12" not in text and "password" in text
        body = message.get_body(("html",)).get_content()
        assert "Here is &lt;b&gt;the plan&lt;/b&gt;." in body and html.escape(created["url"]) in body
    mailed = [r["message"] for r in daemon.logs("share") if "mailed" in r["message"]]
    assert mailed == [f"mona mailed the link of share {created['id']} to reader1@example.net, reader2@example.net"]


def test_every_access_writes_a_log_row(daemon):
    nora = owner(daemon, "nora", {"pub/report.txt": b"report", "drop/.keep": b""})
    link = share(nora, path="/pub")
    box = share(nora, path="/drop", upload_only=True)
    public = Api(daemon)
    public.get(f"shared/{link['token']}/")
    public.get(f"shared/{link['token']}/files/?path=/")
    public.get(f"shared/{link['token']}/download/?path=/report.txt")
    public.post(f"shared/{box['token']}/upload/", raw=multipart("in.txt", b"incoming"), headers=MULTIPART)
    admin = signed_in(daemon, "admin", ADMIN_PASSWORD)
    rows = admin.get("logs/?username=nora&page_size=50").body["results"]
    messages = [(r["action"], r["message"]) for r in reversed(rows)]
    label, drop = f"share {link['id']} of nora", f"share {box['id']} of nora"
    assert ("share_access", f"anonymous opened {label} (/pub)") in messages
    assert ("share_access", f"anonymous listed /pub through {label}") in messages
    assert ("download", f"anonymous downloaded /pub/report.txt (6 bytes) through {label}") in messages
    assert ("upload", f"anonymous uploaded /drop/in.txt (8 bytes) through {drop}") in messages
    made = [m for a, m in messages if a == "share" and m.startswith("nora made")]
    assert len(made) == 2 and any("a drop box of /drop" in m for m in made)
    transfers = [r for r in rows if r["action"] in ("upload", "download")]
    assert {r["protocol"] for r in transfers} == {"web"} and {r["remote_address"] for r in transfers} == {"127.0.0.1"}


def test_a_links_audit_rows_name_the_door_its_maker_signed_in_by(daemon):
    """The console's session makes "web" rows, an API token "api" rows: the sign-in says which."""
    console = owner(daemon, "door-keeper", {"plan.txt": b"plan"}, is_admin=True)
    made = console.post("tokens/", {"name": "link maker", "scopes": ["files"]})
    assert made.status == 201, made.body
    script = Api(daemon, made.body["token"])
    by_console, by_script = share(console, path="/plan.txt"), share(script, path="/plan.txt")
    assert script.delete(f"shares/{by_console['id']}/").status == 204
    rows = [row for row in daemon.logs("share") if row["username"] == "door-keeper"]
    protocols = {
        share_id: [row["protocol"] for row in rows if f"(share {share_id})" in row["message"]]
        for share_id in (by_console["id"], by_script["id"])
    }
    assert protocols == {by_console["id"]: ["web"], by_script["id"]: ["api"]}, [r["message"] for r in rows]
    revoked = [row["protocol"] for row in rows if "revoked" in row["message"]]
    assert revoked == ["api"], [r["message"] for r in rows]
