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


@pytest.mark.parametrize(
    "name",
    [
        "Acme \u202egnp.exe",  # right-to-left override: shows as "Acme exe.png"
        "Acme \u2067Files\u2069",  # a right-to-left isolate
        "Acme\u0085Files",  # a C1 control (next line)
        "Acme\u2028Files",  # the line separator
        "Acme\x1b[31mFiles",  # a terminal escape
    ],
)
def test_a_name_with_control_or_text_direction_characters_is_refused(admin, name):
    org = admin.get("organisation/").body[0]
    reply = admin.patch(f"organisation/{org['id']}/", {"name": name})
    assert reply.status == 400 and reply.body == {"name": [HIDDEN_HINT]}, reply.body
    assert admin.get("organisation/").body[0]["name"] == org["name"]
    for path, body in (("sources/", {"name": name, "config": {"path": "hidden"}}), ("tokens/", {"name": name})):
        reply = admin.post(path, body)
        assert reply.status == 400 and reply.body["name"] == [HIDDEN_HINT], (path, reply.body)
    # a name in another script, or with emoji joined by U+200D, is a name
    for fine in ("\u05d0\u05e7\u05de\u05d4 \u05e7\u05d1\u05e6\u05d9\u05dd", "Acme \U0001f468\u200d\U0001f4bb"):
        assert admin.post("tokens/", {"name": fine}).status == 201


HIDDEN_HINT = "Use printable characters only (no control or text-direction characters)."
