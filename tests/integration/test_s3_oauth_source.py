"""S3 sources that sign in with OpenID Connect, through the HTTP API: a stand-in
provider (oauth_standin.py) and moto's server as a stand-in S3 with an STS that
trusts it (moto_web_identity.py, IAM authentication on, so only the temporary keys
from AssumeRoleWithWebIdentity are accepted). The admin creates the source, gets the
authorize URL, follows it to the stand-in (which redirects back with a code), hands
code and state to sources/callback/; a profile on the source then moves files by SFTP."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request

import pytest

from ..api_client import signed_in
from ..frontends.sftp_client import sftp, sha256
from ..helpers import ADMIN_PASSWORD, now_iso, require_module
from .oauth_standin import CLIENT_ID, CLIENT_SECRET, StandInProvider, s256
from .sources import BUCKET, web_identity_s3

require_module("botocore.session")
require_module("moto.server")

PASSWORD = "oidc-password-1"
NOT_SIGNED_IN = "Sign in with the provider to finish connecting this source."
REFUSED = "The provider refused the saved sign-in: sign in again."


@pytest.fixture(scope="module")
def provider():
    stand_in = StandInProvider().start()
    yield stand_in
    stand_in.stop()


@pytest.fixture(scope="module")
def s3(tmp_path_factory, provider):
    server = web_identity_s3(tmp_path_factory.mktemp("s3-oidc"), provider)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def gateway(daemon_factory, provider):
    daemon = daemon_factory(sources__allow_loopback=True)
    provider.redirect_uri = f"http://127.0.0.1:{daemon.http_port}/admin/sources/callback"
    return daemon


def oauth_body(s3, provider, name: str) -> dict:
    return {"name": name, "type": "s3", "config": {
        "endpoint": s3.endpoint, "region": "us-east-1", "bucket": BUCKET, "prefix": "oidc", "path_style": True,
        "auth": "oauth2",
        "oauth": {"authorize_url": provider.url + "/authorize", "token_url": provider.url + "/token",
                  "client_id": CLIENT_ID, "client_secret": CLIENT_SECRET, "role_arn": s3.role_arn},
    }}  # fmt: skip


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args):
        return None


def follow(url: str) -> dict:
    """Open the authorize URL as a browser would, up to the stand-in's redirect back: its query."""
    try:
        urllib.request.build_opener(NoRedirect).open(url, timeout=10)
    except urllib.error.HTTPError as e:
        assert e.code == 302, (e.code, e.read())
        location = e.headers["location"]
    else:
        raise AssertionError("the stand-in did not redirect")
    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(location).query))


def sign_in(admin, source_id: int) -> tuple[dict, dict]:
    """(the authorize URL's query, what the provider sent back)."""
    started = admin.post(f"sources/{source_id}/authorize/")
    assert started.status == 200, started.body
    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(started.body["url"]).query)), follow(started.body["url"])


@pytest.fixture(scope="module")
def source(gateway, s3, provider):
    admin = signed_in(gateway, "admin", ADMIN_PASSWORD)
    created = admin.post("sources/", oauth_body(s3, provider, "Bucket by sign-in"))
    assert created.status == 201, created.body
    return created.body


def test_the_source_waits_for_a_sign_in_then_moves_files(gateway, s3, provider, source, tmp_path):
    replies = [source]
    assert source["status"] == "authorize" and source["last_error"] == NOT_SIGNED_IN, source
    config = source["config"]
    assert config["auth"] == "oauth2" and config["oauth"]["signed_in"] is False
    assert config["oauth"]["has_client_secret"] is True and "client_secret" not in config["oauth"]
    admin = signed_in(gateway, "admin", ADMIN_PASSWORD)
    asked, back = sign_in(admin, source["id"])
    redirect_uri = f"http://127.0.0.1:{gateway.http_port}/admin/sources/callback"
    assert asked["redirect_uri"] == redirect_uri and asked["client_id"] == CLIENT_ID
    assert asked["response_type"] == "code" and asked["scope"] == "openid"
    assert asked["code_challenge_method"] == "S256" and len(asked["code_challenge"]) == 43
    assert len(asked["state"]) >= 43 and back["state"] == asked["state"] and back["code"]
    done = admin.post("sources/callback/", {"code": back["code"], "state": back["state"]})
    replies.append(done.body)
    assert done.status == 200 and done.body["id"] == source["id"], done.body
    assert done.body["status"] == "ok" and done.body["config"]["oauth"]["signed_in"] is True, done.body
    exchange = [r for r in provider.token_requests if r.get("grant_type") == "authorization_code"][-1]
    assert s256(exchange["code_verifier"]) == asked["code_challenge"]  # PKCE: the verifier of that challenge
    assert 43 <= len(exchange["code_verifier"]) <= 128 and exchange["redirect_uri"] == redirect_uri
    assert exchange["authorization"].startswith("Basic ") and "client_secret" not in exchange  # client_secret_basic
    stored = gateway.query("SELECT config FROM sources WHERE id=?", source["id"])[0][0]
    assert not any(token in stored for token in provider.issued_refresh_tokens) and CLIENT_SECRET not in stored

    body = {"username": "oidc", "email": "oidc@example.com", "password": PASSWORD, "source": source["id"],
            "protocols": ["sftp"], "permissions": ["list", "download", "upload", "mkdir", "delete"]}  # fmt: skip
    assert admin.post("profiles/", body).status == 201
    sent = tmp_path / "report.bin"
    sent.write_bytes(b"signed in with OpenID Connect\n" * 5000)
    result = sftp(gateway, "oidc", PASSWORD, "put report.bin report.bin\nget report.bin back.bin\nls -l", tmp_path)
    assert result.returncode == 0, result.stderr
    assert sha256(tmp_path / "back.bin") == sha256(sent)
    assert s3.body("oidc/oidc/report.bin") == sent.read_bytes()  # with the temporary keys moto's S3 checked

    # a check tries the saved sign-in again: the provider rotates the refresh token, the new one is kept
    before = gateway.query("SELECT config FROM sources WHERE id=?", source["id"])[0][0]
    refreshes = len([r for r in provider.token_requests if r.get("grant_type") == "refresh_token"])
    checked = admin.post(f"sources/{source['id']}/check/")
    replies.append(checked.body)
    assert checked.status == 200 and checked.body["status"] == "ok", checked.body
    assert len([r for r in provider.token_requests if r.get("grant_type") == "refresh_token"]) > refreshes
    after = gateway.query("SELECT config FROM sources WHERE id=?", source["id"])[0][0]
    assert (
        json.loads(after)["oauth"]["refresh_token_encrypted"] != json.loads(before)["oauth"]["refresh_token_encrypted"]
    )
    checked = admin.post(f"sources/{source['id']}/check/")  # with the rotated one (the old one is dead now)
    assert checked.status == 200 and checked.body["status"] == "ok", checked.body
    replies += [checked.body, admin.get(f"sources/{source['id']}/").body, admin.get("sources/").body]
    raw = json.dumps(replies)
    assert not any(token in raw for token in provider.issued_refresh_tokens) and CLIENT_SECRET not in raw


def test_a_state_is_used_once(gateway, s3, provider, source):
    admin = signed_in(gateway, "admin", ADMIN_PASSWORD)
    _, back = sign_in(admin, source["id"])
    assert admin.post("sources/callback/", {"code": back["code"], "state": back["state"]}).status == 200
    again = admin.post("sources/callback/", {"code": back["code"], "state": back["state"]})
    assert again.status == 400 and "unknown or was used already" in again.body["state"][0], again.body
    made_up = admin.post("sources/callback/", {"code": back["code"], "state": "x" * 43})
    assert made_up.status == 400 and "unknown" in made_up.body["state"][0]


def test_an_expired_state_is_refused(gateway, s3, provider, source):
    admin = signed_in(gateway, "admin", ADMIN_PASSWORD)
    _, back = sign_in(admin, source["id"])
    gateway.execute("UPDATE source_sign_ins SET expires_at = ?", now_iso())
    late = admin.post("sources/callback/", {"code": back["code"], "state": back["state"]})
    assert late.status == 400 and "longer than 10 minutes" in late.body["state"][0], late.body
    assert gateway.query("SELECT count(*) FROM source_sign_ins")[0][0] == 0  # gone, whatever happened


def test_a_state_from_another_organisation_or_admin_is_refused(gateway, s3, provider, source):
    org = gateway.add_organisation("Other Org")
    gateway.add_profile("other-admin", "other-password-1", org_id=org, is_admin=True)
    gateway.add_profile("second-admin", "second-password-1", is_admin=True)
    admin = signed_in(gateway, "admin", ADMIN_PASSWORD)
    _, back = sign_in(admin, source["id"])
    other = signed_in(gateway, "other-admin", "other-password-1")
    refused = other.post("sources/callback/", {"code": back["code"], "state": back["state"]})
    assert refused.status == 400 and "unknown" in refused.body["state"][0], refused.body
    assert admin.post("sources/callback/", {"code": back["code"], "state": back["state"]}).status == 400  # used up
    _, back = sign_in(admin, source["id"])
    second = signed_in(gateway, "second-admin", "second-password-1")
    refused = second.post("sources/callback/", {"code": back["code"], "state": back["state"]})
    assert refused.status == 400 and "Another administrator" in refused.body["state"][0], refused.body


def test_a_tampered_verifier_is_refused_by_the_provider(gateway, s3, provider, source):
    admin = signed_in(gateway, "admin", ADMIN_PASSWORD)
    _, back = sign_in(admin, source["id"])
    gateway.execute("UPDATE source_sign_ins SET code_verifier = ?", "t" * 64)
    refused = admin.post("sources/callback/", {"code": back["code"], "state": back["state"]})
    assert refused.status == 400, refused.body
    assert refused.body["detail"] == "The sign-in expired or was used already: try again."
    assert refused.body["source"] == source["id"]


def test_a_declined_sign_in_changes_nothing(gateway, s3, provider, source):
    admin = signed_in(gateway, "admin", ADMIN_PASSWORD)
    before = admin.get(f"sources/{source['id']}/").body
    provider.deny = True
    try:
        _, back = sign_in(admin, source["id"])
    finally:
        provider.deny = False
    assert back["error"] == "access_denied" and "code" not in back
    declined = admin.post("sources/callback/", back)
    assert declined.status == 400 and "declined at the provider" in declined.body["detail"], declined.body
    assert admin.get(f"sources/{source['id']}/").body == before


def test_a_revoked_sign_in_puts_the_source_in_error_until_signed_in_again(gateway, s3, provider, tmp_path):
    admin = signed_in(gateway, "admin", ADMIN_PASSWORD)
    created = admin.post("sources/", oauth_body(s3, provider, "Revoked"))
    _, back = sign_in(admin, created.body["id"])
    assert admin.post("sources/callback/", back).body["status"] == "ok"
    provider.revoke()
    checked = admin.post(f"sources/{created.body['id']}/check/")
    assert checked.body["status"] == "error" and checked.body["last_error"] == REFUSED, checked.body
    _, back = sign_in(admin, created.body["id"])
    again = admin.post("sources/callback/", back)
    assert again.status == 200 and again.body["status"] == "ok", again.body


def test_provider_urls_are_checked(gateway, s3, provider):
    admin = signed_in(gateway, "admin", ADMIN_PASSWORD)
    for field, value, words in (
        ("token_url", "http://files.example.com/token", "must use https"),
        ("authorize_url", "https://user:pw@login.example.com/authorize", "must not hold a user"),
        ("token_url", "https://169.254.169.254/token", "cloud metadata"),
    ):
        body = oauth_body(s3, provider, "Bad " + field)
        body["config"]["oauth"][field] = value
        refused = admin.post("sources/", body)
        assert refused.status == 400 and words in json.dumps(refused.body), (value, refused.body)
    body = oauth_body(s3, provider, "No client")
    del body["config"]["oauth"]["client_id"]
    assert admin.post("sources/", body).status == 400
    local = next(s for s in admin.get("sources/").body["results"] if s["type"] == "local")
    refused = admin.post(f"sources/{local['id']}/authorize/")
    assert refused.status == 400 and "does not sign in with a provider" in refused.body["detail"], refused.body
