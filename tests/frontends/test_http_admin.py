"""Admin resources over HTTP: profiles and logs, scoped to the caller's organisation."""

from __future__ import annotations

import csv
import io
import subprocess

from ..api_client import Api, signed_in
from ..helpers import ADMIN_PASSWORD
from .sftp_client import sftp


def test_an_admin_creates_a_profile_who_then_signs_in_over_sftp(daemon, tmp_path):
    admin = signed_in(daemon, "admin", ADMIN_PASSWORD)
    created = admin.post(
        "profiles/",
        {"username": "newbie", "email": "newbie@example.com", "password": "newbie-password", "quota_bytes": 5_000_000,
         "permissions": ["list", "download", "upload"], "protocols": ["sftp", "web"]},
    )  # fmt: skip
    assert created.status == 201, created.body
    profile = created.body
    assert profile["home"] == "/newbie" and profile["has_password"] and "password" not in profile
    assert "password_hash" not in profile
    (tmp_path / "hello.txt").write_text("hello")
    result = sftp(daemon, "newbie", "newbie-password", "put hello.txt", tmp_path)
    assert result.returncode == 0, result.stderr
    assert (daemon.home("newbie") / "hello.txt").read_text() == "hello"
    assert Api(daemon).login("newbie", "newbie-password").status == 200
    # the list finds it
    listing = admin.get("profiles/?search=newb").body
    assert listing["count"] == 1 and listing["results"][0]["username"] == "newbie"
    # change and delete
    changed = admin.patch(f"profiles/{profile['id']}/", {"active": False})
    assert changed.status == 200 and changed.body["active"] is False
    assert Api(daemon).login("newbie", "newbie-password").status == 401
    assert admin.delete(f"profiles/{profile['id']}/").status == 204
    assert admin.get(f"profiles/{profile['id']}/").status == 404


def test_profile_fields_are_validated(daemon):
    admin = signed_in(daemon, "admin", ADMIN_PASSWORD)
    reply = admin.post(
        "profiles/",
        {"username": "bad name", "email": "nope@localhost", "password": "short", "ssh_keys": ["ssh-ed25519 not-a-key"],
         "ip_allow": ["999.1.1.1"], "home": "/../x"},
    )  # fmt: skip
    assert reply.status == 400
    for field in ("username", "email", "password", "ssh_keys", "ip_allow", "home"):
        assert field in reply.body, field
    # what the declaration itself rules out is refused before the core looks at the rest
    reply = admin.post("profiles/", {"username": "ok", "email": "ok@example.com", "permissions": ["fly"],
                                     "quota_bytes": -1})  # fmt: skip
    assert reply.status == 400 and set(reply.body) == {"permissions", "quota_bytes"}, reply.body
    taken = admin.post("profiles/", {"username": "admin", "email": "a@example.com"})
    assert taken.status == 400 and "username" in taken.body


def test_an_admin_cannot_demote_disable_or_delete_themselves(daemon):
    admin = signed_in(daemon, "admin", ADMIN_PASSWORD)
    me = next(p for p in admin.get("profiles/?search=admin").body["results"] if p["username"] == "admin")
    assert admin.patch(f"profiles/{me['id']}/", {"is_admin": False}).status == 400
    assert admin.patch(f"profiles/{me['id']}/", {"active": False}).status == 400
    assert admin.delete(f"profiles/{me['id']}/").status == 403


def test_profiles_and_logs_of_another_organisation_answer_404_or_nothing(daemon):
    other = daemon.add_organisation("Elsewhere Ltd")
    outsider_id = daemon.add_profile("outsider", org_id=other)
    daemon.add_profile("otherboss", org_id=other, is_admin=True)
    admin = signed_in(daemon, "admin", ADMIN_PASSWORD)
    assert admin.get(f"profiles/{outsider_id}/").status == 404
    assert admin.patch(f"profiles/{outsider_id}/", {"active": False}).status == 404
    assert admin.delete(f"profiles/{outsider_id}/").status == 404
    boss = signed_in(daemon, "otherboss", "user-password-1")
    assert all(row["username"] != "admin" for row in boss.get("logs/?page_size=200").body["results"])
    assert {p["username"] for p in boss.get("profiles/").body["results"]} == {"outsider", "otherboss"}
    daemon.add_profile("justauser")
    user = signed_in(daemon, "justauser", "user-password-1")
    assert user.get("profiles/").status == 403 and user.get("logs/").status == 403


def test_logs_filter_page_and_export(daemon, tmp_path):
    daemon.add_profile("logger")
    (tmp_path / "=cmd.txt").write_text("x")
    subprocess.run(["curl", "-sS", f"ftp://logger:wrong@127.0.0.1:{daemon.ftp_port}/"], capture_output=True)
    assert sftp(daemon, "logger", "user-password-1", "put =cmd.txt", tmp_path).returncode == 0
    admin = signed_in(daemon, "admin", ADMIN_PASSWORD)
    uploads = admin.get("logs/?action=upload&username=logger").body
    assert uploads["count"] == 1 and uploads["results"][0]["path"] == "/=cmd.txt"
    failed = admin.get("logs/?action=login_failed&protocol=ftp&search=logger").body
    assert failed["count"] >= 1
    paged = admin.get("logs/?page_size=2&page=1").body
    assert len(paged["results"]) == 2 and paged["next"] and paged["previous"] is None
    export = admin.get("logs/export/?username=logger")
    assert export.status == 200 and export.headers["content-type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(export.raw.decode())))
    assert rows[0][:5] == ["id", "created_at", "username", "protocol", "action"]
    upload_row = next(r for r in rows if r[4] == "upload")
    assert upload_row[5] == "'/=cmd.txt" or upload_row[5] == "/=cmd.txt"
    assert not any(cell.startswith("=") for row in rows for cell in row)


def test_api_tokens_work_as_bearer_with_scopes_and_revocation(daemon):
    admin = signed_in(daemon, "admin", ADMIN_PASSWORD)
    created = admin.post("tokens/", {"name": "nightly sync", "scopes": ["files"]})
    assert created.status == 201 and created.body["token"].startswith("apl_")
    secret = created.body["token"]
    stored = daemon.query("SELECT secret_hash FROM api_tokens WHERE id = ?", created.body["id"])[0][0]
    assert secret.split("_", 2)[2] not in stored  # only a hash is kept
    listed = admin.get("tokens/").body["results"][0]
    assert "token" not in listed and listed["prefix"] == created.body["prefix"]
    robot = Api(daemon, secret)
    assert robot.get("files/?path=/").status == 200
    assert robot.get("profiles/").status == 403  # no admin scope
    assert admin.get(f"tokens/{created.body['id']}/").body["last_used_at"] is not None
    assert admin.delete(f"tokens/{created.body['id']}/").status == 204
    assert robot.get("files/?path=/").status == 401
    assert Api(daemon, "apl_deadbeef_nope").get("files/?path=/").status == 401
    bad = admin.post("tokens/", {"name": "", "expires_at": "2001-01-01T00:00:00Z"})
    assert bad.status == 400 and {"name", "expires_at"} <= set(bad.body)
    bad = admin.post("tokens/", {"name": "robot", "scopes": ["everything"]})
    assert bad.status == 400 and set(bad.body) == {"scopes"}


def test_sources_stay_inside_allowed_folders_and_are_checked(daemon):
    admin = signed_in(daemon, "admin", ADMIN_PASSWORD)
    own = admin.post("sources/", {"name": "Archive", "config": {"path": "archive"}})
    assert own.status == 201, own.body
    # a new source's folder is made for it (an admin of the appliance has no shell on it)
    assert own.body["status"] == "ok" and own.body["last_error"] == "", own.body
    assert (daemon.source_root() / "archive").is_dir()
    # a folder that goes away later is reported, not made again (an unmounted disk)
    (daemon.source_root() / "archive").rmdir()
    checked = admin.post(f"sources/{own.body['id']}/check/")
    assert checked.body["status"] == "error" and "does not exist" in checked.body["last_error"], checked.body
    assert not (daemon.source_root() / "archive").exists()
    # a new path is made too; a file in the way is named
    (daemon.source_root() / "in-the-way").write_text("not a folder")
    blocked = admin.patch(f"sources/{own.body['id']}/", {"config": {"path": "in-the-way"}})
    assert blocked.body["status"] == "error" and "is not a folder" in blocked.body["last_error"], blocked.body
    moved = admin.patch(f"sources/{own.body['id']}/", {"config": {"path": "archive/2026"}})
    assert moved.body["status"] == "ok" and (daemon.source_root() / "archive" / "2026").is_dir(), moved.body
    for path in ("/etc", "../..", "/", str(daemon.data_dir)):
        reply = admin.post("sources/", {"name": f"Escape {path}", "config": {"path": path}})
        assert reply.status == 400 and "config" in reply.body, path
    other = daemon.add_organisation("Neighbours")
    neighbour = daemon.source_root(other)
    reply = admin.post("sources/", {"name": "Theirs", "config": {"path": str(neighbour)}})
    assert reply.status == 400 and "another organisation" in str(reply.body)
    assert admin.post("sources/", {"name": "Archive", "config": {"path": "x"}}).status == 400  # name taken
    assert admin.post("sources/", {"name": "S3", "type": "s3", "config": {"path": "x"}}).status == 400
    assert {s["name"] for s in admin.get("sources/").body["results"]} >= {"Default", "Archive"}


def test_the_operator_manages_organisations(daemon):
    operator = signed_in(daemon, "admin", ADMIN_PASSWORD)  # set-up's admin is the operator
    created = operator.post(
        "god/organisations/",
        {"name": "Client Co", "subdomain": "client-co", "admin": {"username": "clientboss", "email": "b@client.example",
                                                                  "password": "client-password-1"}},
    )  # fmt: skip
    assert created.status == 201, created.body
    org = created.body
    assert org["status"] == "trial" and org["on_trial"] and org["days_left_on_trial"] == 14
    boss = signed_in(daemon, "clientboss", "client-password-1")
    assert boss.get("god/organisations/").status == 403  # org admins are not operators
    assert boss.get("organisation/").body[0]["name"] == "Client Co"
    listing = operator.get("god/organisations/?search=client").body
    assert listing["count"] == 1 and listing["results"][0]["users"] == 1
    late = operator.patch(f"god/organisations/{org['id']}/", {"status": "payment_missing"})
    assert late.status == 200 and late.body["status"] == "payment_missing"
    assert boss.get("dashboard/information/").body == {"detail": "Organisation payment missing"}
    assert operator.patch(f"god/organisations/{org['id']}/", {"status": "bankrupt"}).status == 400
    logs = operator.get(f"god/organisations/{org['id']}/logs/").body
    assert any("status from trial to payment missing" in row["message"] for row in logs["results"])
    own = operator.get("organisation/").body[0]["id"]
    assert operator.patch(f"god/organisations/{own}/", {"status": "deleted"}).status == 400
