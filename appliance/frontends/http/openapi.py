"""The OpenAPI 3.1 document of the portal API, built from the routes themselves
(so it cannot drift from them): every mounted resource's paths, methods and the
first line of each handler's docstring or name."""

from __future__ import annotations

import re

from ... import __version__
from ...models import ACTIONS

PUBLIC = {"/token/", "/token/refresh/", "/token/logout/", "/initialized/", "/setup/", "/branding/",
          "/branding/logo/<int:org_id>/<name>",
          "/password/reset/", "/password/reset/confirm/",
          "/shared/<token>/", "/shared/<token>/unlock/", "/shared/<token>/files/", "/shared/<token>/download/",
          "/shared/<token>/upload/"}  # fmt: skip


# -- what each handler reads: its query parameters and its request body ------------------------
# Keyed by "<resource class>.<handler>" (the operationId without its method), so the
# routes are never restated here; a test checks every key names a documented handler.

# operations that send mail, limited per address and account (core/ratelimit.py)
RATE_LIMITED = {"PortalApi.reset", "ProfilesApi.create", "ProfilesApi.invite", "SharesApi.create"}
STRING = {"type": "string"}
BOOLEAN = {"type": "boolean"}
MOMENT = {"type": ["string", "null"], "format": "date-time"}
LIMIT = {"type": ["integer", "null"], "minimum": 0}
TEXTS = {"type": "array", "items": STRING}


def _object(required: tuple[str, ...] = (), **properties) -> dict:
    schema = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    return schema


QUERY = {
    "path": STRING,
    "page": {"type": "integer", "minimum": 1},
    "page_size": {"type": "integer", "minimum": 1, "maximum": 200},
    "search": STRING,
    "ordering": {"type": "string", "enum": ["username", "-username", "last_login", "-last_login", "created_at",
                                           "-created_at"]},
    "action": {"type": "string", "enum": list(ACTIONS)},
    "protocol": {"type": "string", "enum": ["sftp", "ftp", "web", "api", "mail", "system"]},
    "username": STRING,
    "date_from": {"type": "string", "format": "date-time"},
    "date_to": {"type": "string", "format": "date-time"},
    "subdomain": STRING,
    "overwrite": BOOLEAN,
    "access": STRING,
}  # fmt: skip
PAGED = ("page", "page_size")
LOG_FILTERS = (*PAGED, "search", "action", "protocol", "username", "date_from", "date_to")

PROFILE = _object(
    username=STRING, email={"type": "string", "format": "email"}, password=STRING, is_admin=BOOLEAN,
    active=BOOLEAN, source={"type": ["integer", "null"]}, home=STRING,
    permissions={"type": "array", "items": {"enum": ["list", "download", "upload", "overwrite", "delete", "rename",
                                                     "mkdir"]}},
    protocols={"type": "array", "items": {"enum": ["sftp", "ftp", "web"]}},
    ssh_keys=TEXTS, ip_allow=TEXTS, quota_bytes=LIMIT, quota_files=LIMIT, expires_at=MOMENT,
)  # fmt: skip
SOURCE = _object(
    name=STRING, type={"enum": ["local", "s3", "sftp"]}, read_only=BOOLEAN,
    default={"type": "boolean", "description": "true: the organisation's default source, which new profiles get "
             "(true makes it so; an organisation always has one, so false on it is refused)"},
    config=_object(path=STRING, endpoint=STRING, region=STRING, bucket=STRING, prefix=STRING, access_key=STRING,
                   secret_key=STRING, path_style=BOOLEAN, verify_tls=BOOLEAN, host=STRING,
                   port={"type": "integer", "minimum": 1, "maximum": 65535}, username=STRING, password=STRING,
                   private_key=STRING, host_key_fingerprint=STRING, auth={"enum": ["keys", "oauth2"]},
                   oauth=_object(authorize_url=STRING, token_url=STRING, client_id=STRING, client_secret=STRING,
                                 scope=STRING, role_arn=STRING, sts_endpoint=STRING)),
)  # fmt: skip
MAILBOX = _object(
    name=STRING, host=STRING, port={"type": "integer", "minimum": 1, "maximum": 65535},
    security={"enum": ["tls", "starttls", "none"]}, verify_tls=BOOLEAN, username=STRING, password=STRING,
    folder=STRING, source={"type": "integer"}, target_folder=STRING, keep={"enum": ["attachments", "message"]},
    after={"enum": ["seen", "move", "delete"]}, move_to=STRING,
    interval_minutes={"type": "integer", "minimum": 1, "maximum": 1440}, enabled=BOOLEAN,
)  # fmt: skip
SHARE_CHANGE = {"expires_at": MOMENT, "max_downloads": {"type": ["integer", "null"], "minimum": 1},
                "password": {"type": ["string", "null"]}}  # fmt: skip
NEW_PASSWORD = {"new_password1": STRING, "new_password2": STRING}

INPUTS: dict[str, dict] = {
    "PortalApi.token": {"body": _object(("username", "password"), username=STRING, password=STRING)},
    "PortalApi.refresh": {"body": _object(("refresh",), refresh=STRING)},
    "PortalApi.logout": {"body": _object(("refresh",), refresh=STRING)},
    "PortalApi.reset": {"body": _object(("email",), email={"type": "string", "format": "email"})},
    "PortalApi.reset_confirm": {
        "body": _object(("uid", "token", *NEW_PASSWORD), uid=STRING, token=STRING, **NEW_PASSWORD)
    },
    "PortalApi.change_password": {
        "body": _object(("old_password", *NEW_PASSWORD), old_password=STRING, **NEW_PASSWORD)
    },
    "PortalApi.setup": {
        "body": _object(
            ("organisation", "username", "email", "password"),
            organisation=STRING,
            username=STRING,
            email={"type": "string", "format": "email"},
            password=STRING,
        )
    },  # fmt: skip
    "PortalApi.organisation_item": {
        "body": _object(
            name=STRING,
            branding=BOOLEAN,
            user_terms=STRING,
            require_tls=BOOLEAN,
            branding_colour={"type": ["string", "null"], "pattern": "^#[0-9A-Fa-f]{6}$"},
        )
    },  # fmt: skip
    "PortalApi.organisation_logo": {"upload": "logo", "raw": ("image/png", "image/jpeg", "image/svg+xml")},
    "PortalApi.branding": {"query": ("subdomain",)},
    "FilesApi.listing": {"query": ("path",)},
    "FilesApi.delete": {"query": ("path",)},
    "FilesApi.download": {"query": ("path", "access")},
    "FilesApi.download_link": {"body": _object(("path",), path=STRING)},
    "FilesApi.upload": {"query": ("path", "overwrite"), "upload": "file"},
    "FilesApi.mkdir": {"body": _object(("path",), path=STRING, parents=BOOLEAN)},
    "FilesApi.rename": {"body": _object(("path", "new_path"), path=STRING, new_path=STRING, overwrite=BOOLEAN)},
    "ProfilesApi.listing": {"query": (*PAGED, "search", "ordering")},
    "ProfilesApi.create": {"body": {**PROFILE, "required": ["username", "email"]}},
    "ProfilesApi.change": {"body": PROFILE},
    "SourcesApi.listing": {"query": (*PAGED, "search")},
    "SourcesApi.create": {"body": {**SOURCE, "required": ["name", "type", "config"]}},
    "SourcesApi.change": {"body": SOURCE},
    "SourcesApi.callback": {
        "body": _object(("state",), state=STRING, code=STRING, error=STRING, error_description=STRING)
    },
    "MailboxesApi.listing": {"query": (*PAGED, "search")},
    "MailboxesApi.create": {"body": {**MAILBOX, "required": ["name", "host", "username"]}},
    "MailboxesApi.change": {"body": MAILBOX},
    "MailboxesApi.runs": {"query": PAGED},
    "TokensApi.listing": {"query": (*PAGED, "search")},
    "TokensApi.create": {
        "body": _object(
            ("name",), name=STRING, scopes={"type": "array", "items": {"enum": ["files", "admin"]}}, expires_at=MOMENT
        )
    },  # fmt: skip
    "BansApi.listing": {"query": PAGED},
    "LogsApi.listing": {"query": LOG_FILTERS},
    "LogsApi.export": {"query": LOG_FILTERS[2:]},
    "SharesApi.listing": {"query": PAGED},
    "SharesApi.create": {
        "body": _object(
            ("path",),
            path=STRING,
            upload_only=BOOLEAN,
            message=STRING,
            recipients={"type": "array", "items": {"type": "string", "format": "email"}},
            **SHARE_CHANGE,
        )
    },  # fmt: skip
    "SharesApi.change": {"body": _object(**SHARE_CHANGE)},
    "SharedApi.metadata": {"query": ("access",)},
    "SharedApi.files": {"query": ("path", "access")},
    "SharedApi.download": {"query": ("path", "access")},
    "SharedApi.upload": {"query": ("access",), "upload": "file"},
    "SharedApi.unlock": {"body": _object(("password",), password=STRING)},
    "OperatorApi.listing": {"query": (*PAGED, "search")},
    "OperatorApi.folders": {"query": PAGED},
    "OperatorApi.create": {
        "body": _object(
            ("name", "admin"),
            name=STRING,
            subdomain=STRING,
            admin=_object(
                ("username", "email"), username=STRING, email={"type": "string", "format": "email"}, password=STRING
            ),
        )
    },  # fmt: skip
    "OperatorApi.change": {
        "body": _object(status={"enum": ["trial", "active", "payment_missing", "deleted"]}, trial_ends_at=MOMENT)
    },
    "OperatorApi.logs": {"query": LOG_FILTERS[:6]},
}


def _inputs(key: str, method: str) -> dict:
    """The parameters and requestBody of one operation, from INPUTS."""
    declared = INPUTS.get(key, {})
    found: dict = {}
    if declared.get("query"):
        found["parameters"] = [{"name": name, "in": "query", "required": False, "schema": QUERY[name]}
                               for name in declared["query"]]  # fmt: skip
    if method not in ("POST", "PATCH", "PUT"):
        return found
    content: dict = {}
    if "body" in declared:
        content["application/json"] = {"schema": declared["body"]}
    if "upload" in declared:
        field = declared["upload"]
        content["multipart/form-data"] = {
            "schema": _object((field,), **{field: {"type": "string", "contentMediaType": "application/octet-stream"}})
        }
    for media_type in declared.get("raw", ()):
        content[media_type] = {"schema": {"type": "string", "contentMediaType": media_type}}
    if content:
        found["requestBody"] = {"required": "body" not in declared or "required" in declared["body"],
                                "content": content}  # fmt: skip
    return found


def _openapi_path(prefix: str, rule: str) -> tuple[str, list[dict]]:
    parameters = []

    def convert(match: re.Match) -> str:
        converter, name = (match.group(1) or "string"), match.group(2)
        parameters.append(
            {
                "name": name,
                "in": "path",
                "required": True,
                "schema": {"type": "integer" if converter == "int" else "string"},
            }
        )
        return "{" + name + "}"

    path = re.sub(r"<(?:(\w+):)?(\w+)>", convert, prefix.rstrip("/") + rule)
    return path, parameters


def document(mounts: list[tuple[str, object]]) -> dict:
    """mounts: (prefix under /api/portal, resource instance) in routing order."""
    paths: dict[str, dict] = {}
    for prefix, resource in mounts:
        app = type(resource).app
        for rule in app.url_map.iter_rules():
            if rule.rule == "/" and prefix == "" or rule.endpoint == "not_found":
                continue
            path, parameters = _openapi_path(prefix, rule.rule)
            handler = getattr(type(resource), rule.endpoint, None)
            summary = ((handler.__doc__ or "").strip().splitlines() or [rule.endpoint.replace("_", " ")])[0]
            for method in sorted((rule.methods or set()) - {"HEAD", "OPTIONS"}):
                operation = {
                    "operationId": f"{type(resource).__name__}.{rule.endpoint}.{method.lower()}",
                    "summary": summary,
                    "responses": {
                        "200": {"description": "OK"},
                        "400": {"description": "Invalid input: {field: [messages]} or {detail}"},
                        "401": {"description": "Not signed in, or token_not_valid"},
                        "403": {
                            "description": "Not allowed, or the organisation's payment is missing or it is deleted"
                        },
                        "404": {"description": "Not found in the caller's organisation"},
                    },
                }
                if f"{type(resource).__name__}.{rule.endpoint}" in RATE_LIMITED and method == "POST":
                    operation["responses"]["429"] = {
                        "description": "Too many mails of this kind lately: try again after Retry-After seconds"
                    }
                inputs = _inputs(f"{type(resource).__name__}.{rule.endpoint}", method)
                if parameters or inputs.get("parameters"):
                    operation["parameters"] = parameters + inputs.get("parameters", [])
                if "requestBody" in inputs:
                    operation["requestBody"] = inputs["requestBody"]
                if prefix + rule.rule not in PUBLIC:
                    operation["security"] = [{"bearer": []}]
                paths.setdefault("/api/portal" + path, {})[method.lower()] = operation
    return {
        "openapi": "3.1.0",
        "info": {"title": "File-transfer portal appliance API", "version": __version__},
        "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
        "paths": dict(sorted(paths.items())),
    }
