"""What the API answers to paths and methods its routes do not take (found by
schemathesis as 500s): a JSON 404 or 405, never an internal error."""

from __future__ import annotations

from ..api_client import signed_in
from ..helpers import ADMIN_PASSWORD

NOT_FOUND = {"detail": "Not found."}


def test_an_id_that_is_not_a_row_id_is_not_found(daemon):
    api = signed_in(daemon, "admin", ADMIN_PASSWORD)
    for method, path in (("GET", "profiles/null/"), ("DELETE", "tokens/abc/"), ("GET", "sources/-1/"),
                         ("PATCH", "god/organisations/1.5/"), ("POST", "mailboxes/null,null/run/"),
                         ("GET", f"shares/{2**64}/"), ("POST", f"sources/{2**63}/check/"),
                         ("GET", f"profiles/{2**63 - 1}/")):  # fmt: skip
        reply = api.call(method, path, body={} if method in ("POST", "PATCH") else None)
        assert reply.status == 404, (method, path, reply.status)
        assert reply.headers["content-type"] == "application/json"
        assert reply.body == NOT_FOUND or reply.body["detail"].startswith("No such"), (method, path, reply.body)


def test_a_method_a_route_does_not_take_is_405_with_allow(daemon):
    api = signed_in(daemon, "admin", ADMIN_PASSWORD)
    reply = api.call("TRACE", "files/")
    assert reply.status == 405 and reply.body == {"detail": 'Method "TRACE" not allowed.'}
    assert set(reply.headers["allow"].split(", ")) >= {"GET", "DELETE"}
    reply = api.call("PUT", "tokens/")
    assert reply.status == 405 and "POST" in reply.headers["allow"]


def test_a_page_past_any_offset_is_a_field_error(daemon):
    api = signed_in(daemon, "admin", ADMIN_PASSWORD)
    for path in ("profiles/", "logs/", "god/organisations/", "tokens/"):
        reply = api.get(f"{path}?page={2**64}&page_size=8")
        assert reply.status == 400 and "page" in reply.body, (path, reply.body)
    assert api.get("profiles/?page=1000000000").body["results"] == []
