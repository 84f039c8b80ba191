"""An S3 source that signs in with OpenID Connect, in Chromium: the admin creates it
in the form (the redirect URI to register is shown), presses "Sign in with the
provider", the stand-in provider (tests/integration/oauth_standin.py) sends the
browser back to /admin/sources/callback with a code, and the source's page shows it
connected. moto's server stands in for the S3 service and its STS."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from ..helpers import ADMIN_PASSWORD, daemon_with, require_module
from ..integration.oauth_standin import CLIENT_ID, CLIENT_SECRET, StandInProvider
from ..integration.sources import BUCKET, web_identity_s3
from .conftest import screenshot
from .helpers_console import menu, sign_in

require_module("moto.server")


@pytest.fixture
def provider():
    stand_in = StandInProvider().start()
    yield stand_in
    stand_in.stop()


@pytest.fixture
def s3(tmp_path, provider):
    server = web_identity_s3(tmp_path / "s3", provider)
    yield server
    server.stop()


@pytest.fixture
def loopback_console(tmp_path, console_built, provider):
    (tmp_path / "console").mkdir()
    daemon = daemon_with(tmp_path / "console", sources__allow_loopback=True)
    daemon.url = f"http://127.0.0.1:{daemon.http_port}"
    provider.redirect_uri = daemon.url + "/admin/sources/callback"
    yield daemon
    daemon.stop()


def test_an_s3_source_signs_in_with_the_provider_in_the_browser(page, loopback_console, s3, provider):
    console = loopback_console
    sign_in(page, console, "admin", ADMIN_PASSWORD)
    menu(page, "Sources")
    page.get_by_role("link", name="Create").click()
    page.get_by_label("Name", exact=True).fill("Signed-in bucket")
    page.get_by_label("Type").select_option(label="S3-compatible bucket")
    page.get_by_label("Endpoint URL").fill(s3.endpoint)
    page.get_by_label("Bucket").fill(BUCKET)
    page.get_by_label("Path-style addressing").check()
    page.get_by_label("Authentication").select_option(label="OpenID Connect sign-in")
    expect(page.get_by_label("Access key")).to_have_count(0)
    expect(page.get_by_test_id("redirect-uri")).to_contain_text(provider.redirect_uri)
    page.get_by_label("Authorize URL").fill(provider.url + "/authorize")
    page.get_by_label("Token URL").fill(provider.url + "/token")
    page.get_by_label("Client ID").fill(CLIENT_ID)
    page.get_by_label("Client secret").fill(CLIENT_SECRET)
    page.get_by_label("Role ARN").fill(s3.role_arn)
    screenshot(page, "source-create-s3-oidc")
    page.get_by_role("button", name="Create").click()

    expect(page.get_by_role("heading", name="Signed-in bucket")).to_be_visible()
    expect(page.get_by_test_id("last-error")).to_contain_text("Sign in with the provider")
    page.get_by_role("button", name="Sign in with the provider").click()
    # the stand-in sends the browser straight back with a code; the console finishes the sign-in
    expect(page).to_have_url(re.compile(r"/admin/sources/\d+$"), timeout=20_000)
    expect(page.get_by_text("ok", exact=True)).to_be_visible(timeout=20_000)
    expect(page.get_by_test_id("last-error")).to_have_count(0)
    expect(page.get_by_text("Signed in: sign in again", exact=False)).to_be_visible()
    assert [a["code_challenge_method"] for a in provider.authorizations] == ["S256"]
    assert any(r.get("grant_type") == "authorization_code" for r in provider.token_requests)
    assert console.query("SELECT status FROM sources WHERE name = 'Signed-in bucket'")[0][0] == "ok"
    screenshot(page, "source-s3-oidc-signed-in")
