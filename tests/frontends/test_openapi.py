"""The OpenAPI document matches the live routes: every documented operation exists
(answers something other than 404/405), and every route is documented."""

from __future__ import annotations

import re

from ..api_client import Api, signed_in
from ..helpers import ADMIN_PASSWORD


def test_every_documented_operation_exists_and_every_route_is_documented(daemon):
    spec = Api(daemon).get("openapi.json").body
    assert spec["openapi"].startswith("3.1")
    paths = spec["paths"]
    for expected in ("/api/portal/token/", "/api/portal/files/download/", "/api/portal/mailboxes/{mailbox_id}/runs/",
                     "/api/portal/god/organisations/{org_id}/logs/", "/api/portal/dashboard/overview/"):  # fmt: skip
        assert expected in paths, expected
    api = signed_in(daemon, "admin", ADMIN_PASSWORD)
    for path, operations in paths.items():
        concrete = re.sub(r"\{[^}]+\}", "999999", path).removeprefix("/api/portal/")
        for method in operations:
            reply = api.call(method.upper(), concrete, body={} if method in ("post", "patch", "put") else None)
            # 404 is right for the made-up ids; a route that does not exist answers {"detail": "Not found."}
            if reply.status == 404:
                assert "{" in path and reply.body != {"detail": "Not found."}, (method, path)
            assert reply.status != 405, (method, path)
    # every handler of every mounted resource is documented
    documented = {op["operationId"].rsplit(".", 1)[0] for ops in paths.values() for op in ops.values()}
    assert {"FilesApi.upload", "ProfilesApi.invite", "PortalApi.setup", "OperatorApi.change"} <= documented


def test_inputs_are_documented_for_the_handlers_that_read_them(daemon):
    from appliance.frontends.http.openapi import INPUTS

    paths = Api(daemon).get("openapi.json").body["paths"]
    operations = {op["operationId"]: op for ops in paths.values() for op in ops.values()}
    handlers = {operation_id.rsplit(".", 1)[0] for operation_id in operations}
    assert set(INPUTS) <= handlers, set(INPUTS) - handlers  # no declaration outlives its handler
    profiles = operations["ProfilesApi.listing.get"]
    assert {"page", "page_size", "search", "ordering"} <= {p["name"] for p in profiles["parameters"]}
    files = operations["FilesApi.listing.get"]
    assert [p["name"] for p in files["parameters"] if p["in"] == "query"] == ["path"]
    create = operations["ProfilesApi.create.post"]["requestBody"]["content"]["application/json"]["schema"]
    assert create["required"] == ["username", "email"] and create["properties"]["is_admin"] == {"type": "boolean"}
    change = operations["PortalApi.organisation_item.patch"]["requestBody"]
    assert change["required"] is False
    assert change["content"]["application/json"]["schema"]["properties"]["branding_colour"]["pattern"]
    logo = operations["PortalApi.organisation_logo.post"]["requestBody"]["content"]
    assert {"multipart/form-data", "image/png", "image/jpeg", "image/svg+xml"} <= set(logo)
    assert "requestBody" not in operations["PortalApi.organisation_logo.delete"]
    assert "security" not in operations["PortalApi.branding_logo.get"]
