"""An organisation's settings and branding tried from outside, over HTTP against
the live daemon: odd field values, and one organisation's branding never
showing for another."""

from __future__ import annotations

import pytest

from ..api_client import signed_in
from ..helpers import ADMIN_PASSWORD


@pytest.fixture(scope="module")
def admin(daemon):
    return signed_in(daemon, "admin", ADMIN_PASSWORD)


@pytest.mark.parametrize("colour", ["#123456\n", "#123456\r\n", " #123456", "#1234567", "#12345g", "red", "#fff", 3])
def test_a_colour_that_is_not_exactly_rrggbb_is_refused(admin, colour):
    org_id = admin.get("organisation/").body[0]["id"]
    before = admin.get("organisation/").body[0]["branding_colour"]
    reply = admin.patch(f"organisation/{org_id}/", {"branding_colour": colour})
    assert reply.status == 400, reply.body
    assert "branding_colour" in reply.body
    assert admin.get("organisation/").body[0]["branding_colour"] == before


def test_one_organisations_branding_never_shows_for_another(daemon, admin):
    org_id = admin.get("organisation/").body[0]["id"]
    assert admin.patch(f"organisation/{org_id}/", {"branding": True, "branding_colour": "#3D37FF"}).status == 200
    created = admin.post(
        "god/organisations/",
        {"name": "Other Co", "subdomain": "otherco", "admin": {"username": "other-admin", "email": "o@example.com",
                                                              "password": "other-password-1"}},
    )  # fmt: skip
    assert created.status == 201, created.body
    assert admin.get("branding/?subdomain=acme").body["branding_colour"] == "#3D37FF"
    assert admin.get("branding/?subdomain=otherco").body == {
        "branding": False,
        "branding_logo": None,
        "branding_colour": None,
    }
    other = signed_in(daemon, "other-admin", "other-password-1")
    assert other.get("organisation/").body[0]["branding_colour"] is None
    assert other.patch(f"organisation/{org_id}/", {"branding_colour": "#000000"}).status == 404
    assert admin.get("branding/?subdomain=acme").body["branding_colour"] == "#3D37FF"
