"""Authority over HTTP: operator > organisation admin > user. Nobody changes a profile
that holds more than they do, nobody gives more than they hold (issue 21, item 1)."""

from __future__ import annotations

import subprocess

import pytest

from ..api_client import Api, signed_in
from ..helpers import ADMIN_PASSWORD
from .sftp_client import sftp

OPERATOR_ONLY = "Only the operator can change the operator's profile."
PASSWORD = "user-password-1"


@pytest.fixture(scope="module")
def daemon(daemon):
    """Acme (the operator's organisation: 'admin' is the operator, 'deputy' a plain
    admin, 'plain' a user) and Beta (its own admin)."""
    daemon.add_profile("deputy", is_admin=True)
    daemon.add_profile("plain")
    beta = daemon.add_organisation("Beta")
    daemon.add_profile("beta-admin", org_id=beta, is_admin=True)
    return daemon


def profile_id(daemon, username: str) -> int:
    return daemon.query("SELECT id FROM profiles WHERE username=?", username)[0]["id"]


def row(daemon, username: str) -> dict:
    return dict(daemon.query("SELECT * FROM profiles WHERE username=?", username)[0])


def an_ssh_key(tmp_path) -> str:
    key = tmp_path / "key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    return (tmp_path / "key.pub").read_text().strip()


def changes(daemon, tmp_path) -> list[dict]:
    """One body per field an admin may set on a profile."""
    return [
        {"password": "taken-over-pass-1"},
        {"email": "attacker@example.com"},
        {"username": "not-the-operator"},
        {"is_admin": False},
        {"active": False},
        {"expires_at": "2000-01-01T00:00:00Z"},
        {"source": daemon.query("SELECT default_source_id FROM organisations ORDER BY id LIMIT 1")[0][0]},
        {"home": "/"},
        {"permissions": ["list"]},
        {"protocols": ["web"]},
        {"ssh_keys": [an_ssh_key(tmp_path)]},
        {"ip_allow": ["192.0.2.1"]},
        {"quota_bytes": 1},
        {"quota_files": 1},
        {"require_tls": True},
        {"is_superuser": False},
        {},
    ]


def test_a_plain_admin_cannot_change_the_operator_in_any_way(daemon, tmp_path):
    operator = profile_id(daemon, "admin")
    before = row(daemon, "admin")
    deputy = signed_in(daemon, "deputy", PASSWORD)
    # seeing the operator is fine
    assert operator in [p["id"] for p in deputy.get("profiles/?page_size=200").body["results"]]
    assert deputy.get(f"profiles/{operator}/").status == 200
    for body in changes(daemon, tmp_path):
        for method in ("PATCH", "PUT"):
            refused = deputy.call(method, f"profiles/{operator}/", body)
            assert (refused.status, refused.body) == (403, {"detail": OPERATOR_ONLY}), (method, body)
    refused = deputy.delete(f"profiles/{operator}/")
    assert (refused.status, refused.body) == (403, {"detail": OPERATOR_ONLY})
    refused = deputy.post(f"profiles/{operator}/invite/")
    assert (refused.status, refused.body) == (403, {"detail": OPERATOR_ONLY})
    assert row(daemon, "admin") == before
    # the operator's password, account and role still work
    (tmp_path / "probe.txt").write_text("still mine")
    result = sftp(daemon, "admin", ADMIN_PASSWORD, "put probe.txt", tmp_path)
    assert result.returncode == 0, result.stderr
    assert signed_in(daemon, "admin", ADMIN_PASSWORD).get("god/organisations/").status == 200
    assert deputy.get("god/organisations/").status == 403


def test_nobody_gives_the_operator_role_through_profiles(daemon):
    deputy = signed_in(daemon, "deputy", PASSWORD)
    plain = profile_id(daemon, "plain")
    for target in (profile_id(daemon, "deputy"), plain):
        refused = deputy.patch(f"profiles/{target}/", {"is_superuser": True})
        assert refused.status == 403 and "operator role" in refused.body["detail"]
    created = deputy.post(
        "profiles/", {"username": "wannabe", "email": "wannabe@example.com", "password": PASSWORD, "is_superuser": True}
    )
    assert created.status == 403 and "operator role" in created.body["detail"]
    assert not daemon.query("SELECT 1 FROM profiles WHERE username='wannabe'")
    operator = signed_in(daemon, "admin", ADMIN_PASSWORD)
    assert operator.patch(f"profiles/{plain}/", {"is_superuser": True}).status == 403
    assert operator.patch(f"profiles/{profile_id(daemon, 'admin')}/", {"is_superuser": False}).status == 403
    assert [r["username"] for r in daemon.query("SELECT username FROM profiles WHERE is_superuser")] == ["admin"]
    # an admin may still make an admin, and change peers and users
    assert deputy.patch(f"profiles/{plain}/", {"is_admin": True}).body["is_admin"] is True
    assert deputy.patch(f"profiles/{plain}/", {"is_admin": False, "quota_files": 10}).status == 200
    assert operator.patch(f"profiles/{profile_id(daemon, 'deputy')}/", {"quota_files": 100}).status == 200


def test_a_user_and_another_organisation_reach_none_of_it(daemon):
    operator = profile_id(daemon, "admin")
    plain = signed_in(daemon, "plain", PASSWORD)
    assert plain.get("profiles/").status == 403
    assert plain.patch(f"profiles/{operator}/", {"password": "taken-over-pass-1"}).status == 403
    assert plain.patch(f"profiles/{profile_id(daemon, 'plain')}/", {"is_admin": True}).status == 403
    assert plain.delete(f"profiles/{operator}/").status == 403
    assert plain.post(f"profiles/{operator}/invite/").status == 403
    beta = signed_in(daemon, "beta-admin", PASSWORD)
    assert beta.patch(f"profiles/{operator}/", {"password": "taken-over-pass-1"}).status == 404
    assert beta.delete(f"profiles/{operator}/").status == 404
    assert Api(daemon).login("admin", ADMIN_PASSWORD).status == 200


def test_an_admin_cannot_open_up_the_operators_share_link(daemon):
    home = daemon.home("admin")
    home.mkdir(parents=True, exist_ok=True)
    (home / "plans.txt").write_text("operator only")
    operator = signed_in(daemon, "admin", ADMIN_PASSWORD)
    created = operator.post("shares/", {"path": "/plans.txt", "password": "share-pass-1"})
    assert created.status == 201, created.body
    deputy = signed_in(daemon, "deputy", PASSWORD)
    for body in ({"password": None}, {"password": "known-to-me"}, {"expires_at": None, "max_downloads": None}):
        refused = deputy.patch(f"shares/{created.body['id']}/", body)
        assert (refused.status, refused.body) == (403, {"detail": OPERATOR_ONLY})
    assert Api(daemon).get(f"shared/{created.body['token']}/download/").status == 401  # still needs its password


def test_revoking_is_a_change_a_plain_admin_cannot_revoke_the_operators_links_or_tokens(daemon):
    """Issue 40, item 6: revoking the operator's share link or API token is refused to a
    plain admin as changing them is; both keep working. The admin still revokes a user's."""
    home = daemon.home("admin")
    home.mkdir(parents=True, exist_ok=True)
    (home / "handbook.txt").write_text("the operator's")
    operator = signed_in(daemon, "admin", ADMIN_PASSWORD)
    share = operator.post("shares/", {"path": "/handbook.txt"})
    assert share.status == 201, share.body
    token = operator.post("tokens/", {"name": "operator's automation", "scopes": ["files", "admin"]})
    assert token.status == 201, token.body
    deputy = signed_in(daemon, "deputy", PASSWORD)
    refused = deputy.delete(f"shares/{share.body['id']}/")
    assert (refused.status, refused.body) == (403, {"detail": OPERATOR_ONLY})
    refused = deputy.delete(f"tokens/{token.body['id']}/")
    assert (refused.status, refused.body) == (403, {"detail": OPERATOR_ONLY})
    # both still work, and nothing was written in the audit log as revoked
    assert Api(daemon).get(f"shared/{share.body['token']}/download/").status == 200
    assert Api(daemon, token.body["token"]).get("files/?path=/").status == 200
    assert not [r for r in daemon.logs() if "revoked" in r["message"] and "deputy" in r["message"]]
    # the operator revokes its own; the deputy revokes a user's link and an admin's token
    plain_home = daemon.home("plain")
    plain_home.mkdir(parents=True, exist_ok=True)
    (plain_home / "mine.txt").write_text("a user's")
    plain_share = signed_in(daemon, "plain", PASSWORD).post("shares/", {"path": "/mine.txt"})
    assert plain_share.status == 201, plain_share.body
    assert deputy.delete(f"shares/{plain_share.body['id']}/").status == 204
    deputy_token = deputy.post("tokens/", {"name": "deputy's", "scopes": ["files"]})
    assert deputy_token.status == 201
    assert signed_in(daemon, "deputy", PASSWORD).delete(f"tokens/{deputy_token.body['id']}/").status == 204
    assert operator.delete(f"tokens/{token.body['id']}/").status == 204
    assert operator.delete(f"shares/{share.body['id']}/").status == 204
    assert Api(daemon, token.body["token"]).get("files/?path=/").status == 401
