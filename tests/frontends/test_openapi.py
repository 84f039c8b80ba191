"""The OpenAPI document matches the live routes: every documented operation exists
(answers something other than 404/405), and every route is documented; every
operation declares what it answers, and what a seeded daemon answers (successes and
errors) matches those declarations, status, media type and schema."""

from __future__ import annotations

import base64
import inspect
import io
import json
import re

import jsonschema_rs
import pytest

from ..api_client import MULTIPART, Api, multipart, signed_in
from ..helpers import ADMIN_PASSWORD, free_port, wait_for


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


def test_resource_bodies_are_the_cores_declarations():
    """Profiles, mailboxes and sources (each type's config too) are declared once, in the core and
    the backends: the document's request bodies are generated from those declarations, which the
    core checks bodies by, so a field added there is documented, typed and checked at once."""
    from appliance.core.mailbox_admin import MailboxFields
    from appliance.core.profile_admin import ProfileFields
    from appliance.core.source_admin import SETTINGS, SourceFields
    from appliance.declarations import schema
    from appliance.frontends.http.openapi import INPUTS

    for api, model in (("ProfilesApi", ProfileFields), ("MailboxesApi", MailboxFields), ("SourcesApi", SourceFields)):
        assert INPUTS[f"{api}.create"]["body"] == schema(model, creating=True)
        assert INPUTS[f"{api}.change"]["body"] == schema(model, creating=False)
        assert INPUTS[f"{api}.create"]["body"]["required"] == [
            n for n, f in model.model_fields.items() if f.is_required()
        ]
    config = INPUTS["SourcesApi.change"]["body"]["properties"]["config"]["properties"]
    assert set(config) == {name for settings in SETTINGS.values() for name in settings.model_fields}
    assert set(SETTINGS) == set(INPUTS["SourcesApi.change"]["body"]["properties"]["type"]["enum"])


# what a reply shows otherwise than an admin gives it: a moment kept as one, a column that may be
# empty, a config as its type shows it, a fingerprint pinned on save, OAuth2 settings without their secret
SHOWN_OTHERWISE = {("Profile", "expires_at"), ("Mailbox", "source"), ("Source", "config"),
                   ("SftpSourceConfig", "host_key_fingerprint"), ("S3SourceConfig", "oauth")}  # fmt: skip
SECRETS = {"password", "private_key", "secret_key", "client_secret"}


def test_resource_replies_are_the_cores_declarations(daemon):
    """A profile, a mailbox and a source (each type's config too) are answered as the core declares
    them: every field an admin gives but the secrets, with its declared type and bounds, beside what
    only the core sets; so a field added to a declaration is in the reply's schema at once."""
    from appliance.core.mailbox_admin import MailboxFields
    from appliance.core.profile_admin import ProfileFields
    from appliance.core.source_admin import SETTINGS, SourceFields
    from appliance.declarations import schema
    from appliance.storage.s3.config import OAuthSettings

    replies = Api(daemon).get("openapi.json").body["components"]["schemas"]
    declared = [(name, replies[name]["properties"], model) for name, model in (
        ("Profile", ProfileFields), ("Mailbox", MailboxFields), ("Source", SourceFields),
        *((f"{kind.capitalize()}SourceConfig", settings) for kind, settings in SETTINGS.items()),
    )]  # fmt: skip
    declared.append(
        ("S3SourceConfig.oauth", replies["S3SourceConfig"]["properties"]["oauth"]["properties"], OAuthSettings)
    )
    for name, shown, model in declared:
        assert not SECRETS & set(shown), name
        for field, given in schema(model, creating=False)["properties"].items():
            if field not in SECRETS and (name, field) not in SHOWN_OTHERWISE:
                assert shown[field] == given, (name, field)


def test_the_consoles_source_forms_are_made_from_the_documents_config():
    """The console's source forms take each type's fields, their kind, bounds and defaults from
    ui/src/features/sources/components/sourceConfig.json: the document's config of a source, as
    the core declares it. After a change of a type's declaration, write it again with
        .venv/bin/python -c 'import json; from appliance.core.source_admin import CONFIG; print(json.dumps(CONFIG))' \\
          > ui/src/features/sources/components/sourceConfig.json
        (cd ui && npx prettier --write src/features/sources/components/sourceConfig.json)"""
    from pathlib import Path

    from appliance.frontends.http.openapi import INPUTS

    shipped = Path(__file__).parents[2] / "ui/src/features/sources/components/sourceConfig.json"
    declared = INPUTS["SourcesApi.create"]["body"]["properties"]["config"]
    assert json.loads(shipped.read_text()) == declared, "write sourceConfig.json again (see this test's docstring)"


# -- what each operation answers -------------------------------------------------------------------

JSON = "application/json"


# the daemon's mail goes to a closed local port (invitations and the test mail fail at once)
# and its mailboxes may poll this host (where nothing answers)
pytestmark = pytest.mark.daemon_with(smtp__host="127.0.0.1", smtp__port=free_port(), mail__allow_loopback=True)


def _objects(schema, where: str):
    """Every object schema inside `schema`, with where it is."""
    if isinstance(schema, dict):
        if schema.get("type") == "object" or "object" in (schema.get("type") or []):
            yield where, schema
        for key, inner in schema.items():
            yield from _objects(inner, f"{where}.{key}")
    elif isinstance(schema, list):
        for n, inner in enumerate(schema):
            yield from _objects(inner, f"{where}[{n}]")


def test_every_operation_declares_its_replies_and_every_body_its_schema(daemon):
    from appliance.frontends.http.replies import OUTPUTS

    spec = Api(daemon).get("openapi.json").body
    operations = {op["operationId"]: op for ops in spec["paths"].values() for op in ops.values()}
    handlers = {operation_id.rsplit(".", 1)[0] for operation_id in operations}
    assert set(OUTPUTS) == handlers, set(OUTPUTS) ^ handlers  # every handler declares its replies, no stale one
    for operation_id, operation in operations.items():
        success = {status: reply for status, reply in operation["responses"].items() if status.startswith("2")}
        assert success, operation_id
        for status, reply in success.items():
            # no body: a 204, and the 201 of a resumable upload (its Location header says where it is)
            if status == "204" or operation_id == "TusApi.create.post":
                assert "content" not in reply, (operation_id, status)
                continue
            assert reply.get("content"), (operation_id, status)
            for media, content in reply["content"].items():
                assert "schema" in content, (operation_id, status, media)
                if media == JSON:
                    assert set(content["schema"]) == {"$ref"}, (operation_id, status)  # a named type for clients
        for status, reply in operation["responses"].items():  # every error has the catalogue's body too
            if status >= "400":
                assert "$ref" in reply or reply["content"][JSON]["schema"], (operation_id, status)
    text = json.dumps(spec)
    for kind, name in set(re.findall(r'"#/components/(\w+)/(\w+)"', text)):
        assert name in spec["components"][kind], (kind, name)
    for name in spec["components"]["schemas"]:
        assert f'"#/components/schemas/{name}"' in text, f"{name} is declared but no reply uses it"
    # closed shapes: an object says what else it may hold (nothing, or a field's messages)
    loose = [where for name, schema in spec["components"]["schemas"].items()
             for where, found in _objects(schema, name) if "additionalProperties" not in found]  # fmt: skip
    assert not loose, loose


class Conformance:
    """Replies checked against the document as they arrive: the status is declared for the
    operation, and a body has a declared media type and (JSON) matches its schema, formats too."""

    def __init__(self, spec: dict):
        self.spec = spec
        # a concrete path's operation: literal templates before those with parameters
        self.routes = sorted(
            ((re.compile("^" + re.sub(r"\\\{\w+\\\}", "[^/]+", re.escape(path)) + "$"), path)
             for path in spec["paths"]),
            key=lambda route: route[1].count("{"),
        )  # fmt: skip
        self.problems: list[str] = []
        self.answered: set[str] = set()  # operationIds whose 2xx JSON body matched

    def operation(self, method: str, path: str) -> dict:
        for pattern, template in self.routes:
            if pattern.match(path) and method.lower() in self.spec["paths"][template]:
                return self.spec["paths"][template][method.lower()]
        raise AssertionError(f"{method} {path} is no documented operation")

    def schema_problems(self, schema: dict, body) -> list[str]:
        validator = jsonschema_rs.validator_for({**schema, "components": self.spec["components"]},
                                                validate_formats=True)  # fmt: skip
        return [f"{'/'.join(map(str, error.instance_path))}: {error.message}" for error in validator.iter_errors(body)]

    def __call__(self, method: str, url: str, reply):
        path = "/api/portal/" + url.split("?")[0]
        operation = self.operation(method, path)
        label = f"{method} {url} -> {reply.status}"
        response = operation["responses"].get(str(reply.status))
        if response is None:
            self.problems.append(f"{label}: the status is not declared")
            return reply
        if "$ref" in response:
            response = self.spec["components"]["responses"][response["$ref"].rsplit("/", 1)[1]]
        content = response.get("content", {})
        media = (reply.headers.get("content-type") or "").split(";")[0].strip()
        if not content:
            if reply.raw:
                self.problems.append(f"{label}: a body where none is declared")
        elif media not in content:
            self.problems.append(f"{label}: {media!r} is not declared (only {sorted(content)})")
        elif media == JSON:
            found = self.schema_problems(content[JSON]["schema"], reply.body)
            self.problems += [f"{label}: {problem} in {reply.body!r:.300}" for problem in found]
            if not found and 200 <= reply.status < 300:
                self.answered.add(operation["operationId"])
        return reply


class CheckedApi(Api):
    """The API client whose every reply goes through a Conformance."""

    def __init__(self, daemon, check: Conformance, token: str | None = None):
        super().__init__(daemon, token)
        self.check = check

    def call(self, method, path, body=None, headers=None, raw=None):
        return self.check(method, path, super().call(method, path, body, headers, raw))


def _png() -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (2, 1), (61, 55, 255)).save(out, "PNG")
    return out.getvalue()


def _plant(daemon, table: str, **row) -> int:
    """A row the API would check against a live server first (a remote source, a mailbox)."""
    row = {key: json.dumps(value) if isinstance(value, dict) else value for key, value in row.items()}
    conn = daemon.db()
    try:
        with conn:
            names = ", ".join(row)
            return conn.execute(f"INSERT INTO {table} ({names}) VALUES ({', '.join('?' * len(row))})",
                                list(row.values())).lastrowid  # fmt: skip
    finally:
        conn.close()


def _ok(reply, status: int = 200):
    assert reply.status == status, (reply.status, reply.body)
    return reply.body


# remote sources as they are stored (planted: the API would connect to them first)
SFTP = {"host": "sftp.example.com", "port": 2222, "username": "u", "path": "/in", "host_key_fingerprint": "SHA256:abc"}
S3 = {"endpoint": "https://s3.example.com", "region": "eu", "bucket": "b", "prefix": "p/", "access_key": "AK",
      "path_style": True}  # fmt: skip
FEDERATED = {
    "endpoint": "https://s3.example.com", "region": "eu", "bucket": "f", "auth": "oauth2",
    "oauth": {"authorize_url": "https://login.example.com/authorize", "token_url": "https://login.example.com/token",
              "client_id": "app", "scope": "openid", "role_arn": "arn:aws:iam::1:role/r", "sts_endpoint": ""},
}  # fmt: skip

# answered with a 2xx only where this daemon cannot go: its set-up is done, reset links come by mail,
# and finishing a source's sign-in needs an OAuth2 provider (their refusals are checked)
UNREACHED = {"PortalApi.setup.post", "PortalApi.reset_confirm.post", "SourcesApi.callback.post"}


def test_every_reply_of_a_seeded_daemon_matches_its_declared_schema(daemon):
    """Every operation with a JSON reply answers it on a daemon holding one of everything (a remote
    source of each kind, a mailbox with runs, links, a second organisation), and each reply, errors
    too, is as the document declares it. (A ban takes ten seconds to earn: schemathesis's run, whose
    generated sign-ins earn one, checks the bans listed.)"""
    spec = Api(daemon).get("openapi.json").body
    check = Conformance(spec)
    anonymous = CheckedApi(daemon, check)
    org_id = daemon.default_org()

    # sign-in, first run, the public side
    _ok(anonymous.get("initialized/"))
    _ok(anonymous.get("branding/?subdomain=nowhere"))
    assert anonymous.post("token/", {"username": "admin", "password": "wrong-password"}).status == 401
    assert anonymous.get("dashboard/information/").status == 401
    assert CheckedApi(daemon, check, token="not-a-token").get("profiles/").status == 401
    assert anonymous.post("token/refresh/", {"refresh": "not-a-token"}).status == 401
    _ok(anonymous.post("password/reset/", {"email": "nobody@example.com"}))
    refused = {"uid": "x", "token": "y", "new_password1": "a-new-password-1", "new_password2": "a-new-password-1"}
    assert anonymous.post("password/reset/confirm/", refused).status == 400
    setup = {"organisation": "Again", "username": "again", "email": "again@example.com", "password": "again-pass-1"}
    assert anonymous.post("setup/", setup).status == 403
    admin = CheckedApi(daemon, check)
    _ok(admin.login("admin", ADMIN_PASSWORD))
    _ok(admin.post("token/refresh/", {"refresh": admin.refresh_token}))

    # the dashboard and the organisation
    _ok(admin.get("dashboard/overview/"))
    _ok(admin.get("dashboard/information/"))
    _ok(admin.get("organisation/"))
    _ok(admin.get(f"organisation/{org_id}/"))
    _ok(admin.patch(f"organisation/{org_id}/", {"branding": True, "branding_colour": "#3D37FF"}))
    logo = _ok(admin.call("POST", f"organisation/{org_id}/logo/", raw=_png(), headers={"Content-Type": "image/png"}))
    assert _ok(anonymous.get("branding/?subdomain=acme"))["branding_logo"] == logo["branding_logo"]
    assert anonymous.get(logo["branding_logo"].removeprefix("/api/portal/")).raw.startswith(b"\x89PNG")
    _ok(admin.delete(f"organisation/{org_id}/logo/"))
    assert admin.patch("organisation/999999/", {"name": "Other"}).status == 404

    # profiles
    pat = _ok(admin.post("profiles/", {"username": "pat", "email": "pat@example.com", "password": "pat-password-1",
                                       "quota_bytes": 10**9, "expires_at": "2040-01-01T00:00:00Z",
                                       "require_tls": False}), 201)  # fmt: skip
    ivy = _ok(admin.post("profiles/", {"username": "ivy", "email": "ivy@example.com"}), 201)
    assert ivy["invitation"]["mailed"] is False, ivy  # the mail server is a closed port
    _ok(admin.get("profiles/?ordering=-last_login&page_size=2"))
    _ok(admin.get(f"profiles/{pat['id']}/"))
    _ok(admin.patch(f"profiles/{pat['id']}/", {"quota_files": 100, "ip_allow": ["127.0.0.0/8"]}))
    _ok(admin.call("PUT", f"profiles/{pat['id']}/", {"quota_files": None}))
    _ok(admin.post(f"profiles/{ivy['id']}/invite/"), 202)
    assert admin.post("profiles/", {"username": 5, "email": "x@example.com"}).status == 400
    assert admin.get("profiles/?ordering=shoe-size").status == 400
    assert admin.get("profiles/999999/").status == 404
    _ok(admin.delete(f"profiles/{ivy['id']}/"), 204)

    # sources: a local one made here, a remote one of each kind planted
    extra = _ok(admin.post("sources/", {"name": "Extra", "type": "local", "config": {"path": "extra"}}), 201)
    now = "2030-01-01T00:00:00.000000Z"
    sftp = dict(SFTP, password_encrypted=daemon.seal("p"))
    _plant(daemon, "sources", org_id=org_id, name="Remote", type="sftp", created_at=now, status="error",
           last_error="refused", config=sftp)  # fmt: skip
    bucket = dict(S3, secret_key_encrypted=daemon.seal("s"))
    _plant(daemon, "sources", org_id=org_id, name="Bucket", type="s3", created_at=now, config=bucket)
    signs_in = _plant(daemon, "sources", org_id=org_id, name="Federated", type="s3", created_at=now,
                      status="authorize", config=FEDERATED)  # fmt: skip
    assert {s["type"] for s in _ok(admin.get("sources/?page_size=10"))["results"]} == {"local", "sftp", "s3"}
    _ok(admin.get(f"sources/{extra['id']}/"))
    _ok(admin.patch(f"sources/{extra['id']}/", {"read_only": True}))
    _ok(admin.call("PUT", f"sources/{extra['id']}/", {"name": "Extra files"}))
    _ok(admin.post(f"sources/{extra['id']}/check/"))
    _ok(admin.post(f"sources/{signs_in}/authorize/"))
    assert admin.post("sources/callback/", {"state": "never-handed-out", "code": "c"}).status == 400
    _ok(admin.delete(f"sources/{extra['id']}/"), 204)

    # a mailbox, run once (nothing answers it)
    inbox = {"name": "Inbox", "host": "127.0.0.1", "port": free_port(), "security": "none", "username": "u",
             "password": "p"}  # fmt: skip
    mailbox = _ok(admin.post("mailboxes/", inbox), 201)["id"]
    assert _ok(admin.get(f"mailboxes/{mailbox}/"))["last_run"] is None
    _ok(admin.patch(f"mailboxes/{mailbox}/", {"interval_minutes": 30}))
    _ok(admin.call("PUT", f"mailboxes/{mailbox}/", {"interval_minutes": 40}))
    _ok(admin.post(f"mailboxes/{mailbox}/run/"), 202)
    wait_for(lambda: _ok(admin.get(f"mailboxes/{mailbox}/runs/"))["results"][0]["finished_at"])
    assert _ok(admin.get("mailboxes/"))["results"][0]["last_run"]["status"] == "failed"
    _ok(admin.delete(f"mailboxes/{mailbox}/"), 204)

    # API tokens
    token = _ok(admin.post("tokens/", {"name": "ci", "scopes": ["files"], "expires_at": "2040-01-01T00:00:00Z"}), 201)
    _ok(CheckedApi(daemon, check, token=token["token"]).get("files/"))
    assert _ok(admin.get(f"tokens/{token['id']}/"))["last_used_at"]
    _ok(admin.get("tokens/"))
    _ok(admin.delete(f"tokens/{token['id']}/"), 204)

    # files
    _ok(admin.call("POST", "files/upload/?path=/", raw=multipart("report.txt", b"the report"), headers=MULTIPART), 201)
    _ok(admin.post("files/mkdir/", {"path": "/box"}), 201)
    _ok(admin.call("POST", "files/upload/?path=/box", raw=multipart("a.txt", b"a"), headers=MULTIPART), 201)
    _ok(admin.post("files/rename/", {"path": "/box/a.txt", "new_path": "/box/b.txt"}))
    _ok(admin.get("files/?path=/"))
    _ok(admin.get("files/?path=/&page=1&page_size=1"))
    _ok(admin.post("files/download-link/", {"path": "/report.txt"}))
    whole = admin.get("files/download/?path=/report.txt")
    assert whole.raw == b"the report"
    assert admin.get("files/download/?path=/report.txt", headers={"Range": "bytes=4-"}).status == 206
    assert admin.get("files/download/?path=/report.txt", headers={"If-None-Match": whole.headers["etag"]}).status == 304
    assert admin.get("files/download/?path=/report.txt", headers={"Range": "bytes=99-"}).status == 416
    assert admin.get("files/?path=/nowhere").status == 404
    named = "filename " + base64.b64encode(b"t").decode()
    tus = {"Tus-Resumable": "1.0.0", "Upload-Length": "1", "Upload-Metadata": named}
    assert admin.call("POST", "files/tus/", raw=b"", headers=tus).status == 201

    # share links, and what they open
    link = _ok(admin.post("shares/", {"path": "/report.txt"}), 201)
    locked = _ok(admin.post("shares/", {"path": "/box", "password": "link-pass-1", "max_downloads": 3,
                                        "recipients": ["friend@example.com"]}), 201)  # fmt: skip
    assert locked["mail"][0]["sent"] is False, locked  # the mail server is a closed port
    drop = _ok(admin.post("shares/", {"path": "/box", "upload_only": True}), 201)
    _ok(admin.get("shares/"))
    _ok(admin.get(f"shares/{locked['id']}/"))
    _ok(admin.patch(f"shares/{locked['id']}/", {"max_downloads": 5}))
    _ok(anonymous.get(f"shared/{link['token']}/"))
    assert anonymous.get(f"shared/{link['token']}/download/").raw == b"the report"
    _ok(anonymous.get(f"shared/{locked['token']}/"))
    access = _ok(anonymous.post(f"shared/{locked['token']}/unlock/", {"password": "link-pass-1"}))["access"]
    _ok(anonymous.get(f"shared/{locked['token']}/?access={access}"))
    _ok(anonymous.get(f"shared/{locked['token']}/files/?path=/&access={access}"))
    _ok(anonymous.call("POST", f"shared/{drop['token']}/upload/", raw=multipart("in.txt", b"in"), headers=MULTIPART),
        201)  # fmt: skip
    _ok(admin.delete(f"shares/{link['id']}/"), 204)
    assert anonymous.get(f"shared/{link['token']}/").status == 410
    _ok(admin.get("bans/"))

    # the audit log
    _ok(admin.get("logs/?page_size=200"))
    _ok(admin.get("logs/?action=login&protocol=web&date_from=2020-01-01T00:00:00Z&date_to="))
    _ok(admin.get("logs/actions/"))
    assert admin.get("logs/export/").raw.startswith(b"id,")

    # the operator's side
    first_admin = {"username": "globex-admin", "email": "admin@globex.example", "password": "globex-password-1"}
    globex = _ok(admin.post("god/organisations/", {"name": "Globex", "admin": first_admin}), 201)
    initech = _ok(admin.post("god/organisations/", {"name": "Initech", "admin": {
        "username": "initech-admin", "email": "admin@initech.example"}}), 201)  # fmt: skip
    assert initech["invitation"]["mailed"] is False, initech
    _ok(admin.get(f"god/organisations/{globex['id']}/"))
    _ok(admin.patch(f"god/organisations/{globex['id']}/", {"status": "active", "trial_ends_at": None}))
    _ok(admin.post(f"god/organisations/{globex['id']}/storage/"))
    _ok(admin.get("god/organisations/"))
    _ok(admin.get(f"god/organisations/{org_id}/logs/"))
    _ok(admin.get("god/folders/"))
    _ok(admin.get("god/mail/"))
    _ok(admin.get("god/settings/"))
    _ok(admin.patch("god/settings/", {"smtp": {"sender": "portal@acme.example"}}))
    assert _ok(admin.post("god/mail/test/", {"to": "ops@example.com"}))["sent"] is False

    # a member who is not an admin
    member = CheckedApi(daemon, check)
    _ok(member.login("pat", "pat-password-1"))
    assert member.get("profiles/").status == 403
    assert member.get("god/organisations/").status == 403
    _ok(member.post("password/change/", {"old_password": "pat-password-1", "new_password1": "pat-password-2",
                                         "new_password2": "pat-password-2"}))  # fmt: skip
    _ok(member.post("token/logout/", {"refresh": member.refresh_token}))

    assert not check.problems, "\n".join(check.problems)
    declared = {op["operationId"] for ops in spec["paths"].values() for op in ops.values()
                if any(JSON in reply.get("content", {}) for status, reply in op["responses"].items()
                       if status.startswith("2"))}  # fmt: skip
    assert declared - UNREACHED <= check.answered, sorted(declared - UNREACHED - check.answered)
