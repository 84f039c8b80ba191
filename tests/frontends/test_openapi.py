"""The OpenAPI document matches the live routes: every documented operation exists
(answers something other than 404/405), and every route is documented."""

from __future__ import annotations

import inspect
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
    assert [p["name"] for p in files["parameters"] if p["in"] == "query"] == ["path", "page", "page_size"]
    create = operations["ProfilesApi.create.post"]["requestBody"]["content"]["application/json"]["schema"]
    assert create["required"] == ["username", "email"] and create["properties"]["is_admin"] == {"type": "boolean"}
    change = operations["PortalApi.organisation_item.patch"]["requestBody"]
    assert change["required"] is False
    assert change["content"]["application/json"]["schema"]["properties"]["branding_colour"]["pattern"]
    logo = operations["PortalApi.organisation_logo.post"]["requestBody"]["content"]
    assert {"multipart/form-data", "image/png", "image/jpeg", "image/svg+xml"} <= set(logo)
    assert "requestBody" not in operations["PortalApi.organisation_logo.delete"]
    assert "security" not in operations["PortalApi.branding_logo.get"]


def test_every_handler_that_reads_a_json_body_declares_it():
    """read_json checks a body against its operation's declaration (schema.py), so a handler
    that reads one without a declaration would fail every call: none may."""
    from appliance.frontends.http.api import Resource
    from appliance.frontends.http.openapi import INPUTS
    from appliance.frontends.http.schema import DeclaredKlein

    readers = []
    for cls in Resource.__subclasses__():
        for rule in cls.app.url_map.iter_rules():
            handler = getattr(cls, rule.endpoint.removesuffix("_branch"), None)
            if handler is not None and "read_json(" in inspect.getsource(handler):
                readers.append(f"{cls.__name__}.{handler.__name__}")
                assert isinstance(cls.app, DeclaredKlein), cls  # only its requests know their operation
    assert len(readers) >= 20  # the scan sees the handlers
    undeclared = [key for key in readers if "body" not in INPUTS.get(key, {})]
    assert not undeclared, f"handlers that read a JSON body without a declaration in openapi.INPUTS: {undeclared}"


def _bounded(schema: dict, where: str) -> list[str]:
    """Where a declaration leaves a number, a text or a list without its bound."""
    kinds = schema.get("type", [])
    kinds = [kinds] if isinstance(kinds, str) else kinds
    found = []
    if "integer" in kinds and not ("minimum" in schema and "maximum" in schema):
        found.append(where)
    if "string" in kinds and "maxLength" not in schema and "pattern" not in schema and "enum" not in schema:
        found.append(where)
    if "array" in kinds:
        found += [where] if "maxItems" not in schema else []
        found += _bounded(schema.get("items", {}), f"{where}[]")
    for name, inner in schema.get("properties", {}).items():
        found += _bounded(inner, f"{where}.{name}")
    return found


def test_every_declared_body_field_is_bounded():
    """Integers within what SQLite stores, texts and lists of a bounded length: the document says
    what the type gate holds bodies to."""
    from appliance.frontends.http.openapi import INPUTS, SQLITE_MAX

    unbounded = [spot for key, declared in INPUTS.items() if "body" in declared
                 for spot in _bounded(declared["body"], key)]  # fmt: skip
    assert not unbounded, unbounded

    def maxima(schema):
        if "maximum" in schema:
            yield schema["maximum"]
        for inner in [*schema.get("properties", {}).values(), *([schema["items"]] if "items" in schema else [])]:
            yield from maxima(inner)

    assert max(m for declared in INPUTS.values() if "body" in declared for m in maxima(declared["body"])) <= SQLITE_MAX
