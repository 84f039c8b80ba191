"""The OpenAPI 3.1 document of the portal API, built from the routes themselves
(so it cannot drift from them): every mounted resource's paths, methods and the
first line of each handler's docstring or name; what each handler reads (INPUTS,
here) and what it answers (replies.OUTPUTS, with the schema of every body)."""

from __future__ import annotations

import re

from ... import __version__
from ...core.dashboard import PERIODS as CHART_PERIODS
from ...core.mailbox_admin import MailboxFields
from ...core.profile_admin import ORDERINGS as PROFILE_ORDERINGS
from ...core.profile_admin import ProfileFields
from ...core.source_admin import FILES_CHOICES, SourceFields
from ...declarations import schema
from ...models import ACTIONS, LOG_PROTOCOLS
from .replies import OUTPUTS, SCHEMAS, Reply

# the bounds api.paging() enforces, declared here with the rest of the query parameters
MAX_PAGE = 1_000_000_000
MAX_PAGE_SIZE = 200

PUBLIC = {"/token/", "/token/refresh/", "/token/logout/", "/initialized/", "/setup/", "/branding/",
          "/branding/logo/<int:org_id>/<name>",
          "/password/reset/", "/password/reset/confirm/",
          "/shared/<token>/", "/shared/<token>/unlock/", "/shared/<token>/files/", "/shared/<token>/download/",
          "/shared/<token>/upload/"}  # fmt: skip


# -- what each handler reads: its query parameters and its request body ------------------------
# Keyed by "<resource class>.<handler>" (the operationId without its method), so the
# routes are never restated here; a test checks every key names a documented handler.

# operations limited per address, account or organisation (core/ratelimit.py): those that send
# mail, and those that check a remote source (its checks that reach no server are counted)
RATE_LIMITED = {
    "PortalApi.reset",
    "ProfilesApi.create",
    "ProfilesApi.invite",
    "SharesApi.create",
    "OperatorApi.create",
    "OperatorApi.mail_test",
    "SourcesApi.create",
    "SourcesApi.change",
    "SourcesApi.check",
}
# Every string, integer and list is bounded (schema.py holds bodies to these; a test
# checks none is left unbounded): integers to what SQLite stores, texts to MAX_STRING
# characters unless a field needs more; the core checks the finer limits with its own words.
SQLITE_MAX = 2**63 - 1
MAX_STRING = 4096
STRING = {"type": "string", "maxLength": MAX_STRING}
NULLABLE_STRING = {"type": ["string", "null"], "maxLength": MAX_STRING}
BOOLEAN = {"type": "boolean"}
EMAIL = {"type": "string", "format": "email", "maxLength": 254}
# a moment, or none: null or "" (the console sends null, forms and scripts often "")
MOMENT = {"type": ["string", "null"], "maxLength": 64, "anyOf": [{"format": "date-time"}, {"maxLength": 0}]}
ID = {"type": "integer", "minimum": 1, "maximum": SQLITE_MAX}
PORT = {"type": "integer", "minimum": 1, "maximum": 65535}
LIMIT = {"type": ["integer", "null"], "minimum": 0, "maximum": SQLITE_MAX}


def _list(items: dict, most: int, *, nullable: bool = False) -> dict:
    return {"type": ["array", "null"] if nullable else "array", "items": items, "maxItems": most}


def _choices(*values: str) -> dict:
    return {"type": "string", "enum": list(values)}


def _object(required: tuple[str, ...] = (), nullable: bool = False, **properties) -> dict:
    schema = {"type": ["object", "null"] if nullable else "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    return schema


# query parameters are checked by the handlers (api.paging, the files service); a URL's
# length is bounded where the request arrives
TEXT = {"type": "string"}
QUERY = {
    "path": TEXT,
    "page": {"type": "integer", "minimum": 1, "maximum": MAX_PAGE},
    "page_size": {"type": "integer", "minimum": 1, "maximum": MAX_PAGE_SIZE},
    "search": TEXT,
    "ordering": {"type": "string", "enum": [*PROFILE_ORDERINGS, ""], "description": "empty: by username"},
    "action": {"type": "string", "enum": [*ACTIONS, ""], "description": "empty: any"},
    "protocol": {"type": "string", "enum": [*LOG_PROTOCOLS, ""], "description": "empty: any"},
    "username": TEXT,
    "date_from": {"type": "string", "anyOf": [{"format": "date-time"}, {"maxLength": 0}], "description": "empty: any"},
    "date_to": {"type": "string", "anyOf": [{"format": "date-time"}, {"maxLength": 0}], "description": "empty: any"},
    "subdomain": TEXT,
    "overwrite": BOOLEAN,
    "access": TEXT,
    "files": {"type": "string", "enum": list(FILES_CHOICES), "description": "what becomes of a local source's files"},
    "period": {"type": "string", "enum": [*CHART_PERIODS, ""], "description": "the chart's bars; empty: month"},
}  # fmt: skip
PAGED = ("page", "page_size")
LOG_FILTERS = (*PAGED, "search", "action", "protocol", "username", "date_from", "date_to")

SHARE_CHANGE = {"expires_at": MOMENT, "max_downloads": {"type": ["integer", "null"], "minimum": 1,
                                                        "maximum": 1_000_000_000},
                "password": NULLABLE_STRING}  # fmt: skip
NEW_PASSWORD = {"new_password1": STRING, "new_password2": STRING}

INPUTS: dict[str, dict] = {
    "PortalApi.token": {"body": _object(("username", "password"), username=STRING, password=STRING)},
    "PortalApi.refresh": {"body": _object(("refresh",), refresh=STRING)},
    "PortalApi.logout": {"body": _object(refresh=STRING)},  # without one, nothing to end: still 200
    "PortalApi.reset": {"body": _object(("email",), email=EMAIL)},
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
            email=EMAIL,
            password=STRING,
        )
    },  # fmt: skip
    "PortalApi.organisation_item": {
        "body": _object(
            name={**STRING, "x-hint": "Enter a name."},
            branding=BOOLEAN,
            user_terms={"type": "string", "maxLength": 100_000},
            require_tls=BOOLEAN,
            branding_colour={
                "type": ["string", "null"],
                "pattern": "^#[0-9A-Fa-f]{6}$",
                "x-hint": "Enter a colour as #RRGGBB, for example #3D37FF.",
            },
        )
    },  # fmt: skip
    "PortalApi.organisation_logo": {"upload": "logo", "raw": ("image/png", "image/jpeg", "image/svg+xml")},
    "PortalApi.branding": {"query": ("subdomain",)},
    "PortalApi.overview": {"query": ("period",)},
    "FilesApi.listing": {"query": ("path", *PAGED)},
    "FilesApi.delete": {"query": ("path",)},
    "FilesApi.download": {"query": ("path", "access")},
    "FilesApi.download_link": {"body": _object(("path",), path=STRING)},
    "FilesApi.upload": {"query": ("path", "overwrite"), "upload": "file"},
    "FilesApi.mkdir": {"body": _object(("path",), path=STRING, parents=BOOLEAN)},
    "FilesApi.rename": {"body": _object(("path", "new_path"), path=STRING, new_path=STRING, overwrite=BOOLEAN)},
    "ProfilesApi.listing": {"query": (*PAGED, "search", "ordering")},
    "ProfilesApi.create": {"body": schema(ProfileFields, creating=True)},
    "ProfilesApi.change": {"body": schema(ProfileFields, creating=False)},
    "SourcesApi.listing": {"query": (*PAGED, "search")},
    "SourcesApi.create": {"body": schema(SourceFields, creating=True)},  # type: local by default
    "SourcesApi.change": {"body": schema(SourceFields, creating=False)},
    "SourcesApi.delete": {"query": ("files",)},
    "SourcesApi.callback": {
        "body": _object(("state",), state=STRING, code=STRING, error=STRING, error_description=STRING)
    },
    "MailboxesApi.listing": {"query": (*PAGED, "search")},
    "MailboxesApi.create": {"body": schema(MailboxFields, creating=True)},
    "MailboxesApi.change": {"body": schema(MailboxFields, creating=False)},
    "MailboxesApi.runs": {"query": PAGED},
    "TokensApi.listing": {"query": (*PAGED, "search")},
    "TokensApi.create": {
        "body": _object(("name",), name=STRING, scopes=_list(_choices("files", "admin"), 10), expires_at=MOMENT)
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
            message=NULLABLE_STRING,
            recipients=_list(EMAIL, 50, nullable=True),
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
            subdomain=NULLABLE_STRING,  # null: made from the name
            admin=_object(("username", "email"), username=STRING, email=EMAIL, password=NULLABLE_STRING),
        )
    },  # fmt: skip
    "OperatorApi.change": {
        "body": _object(status=_choices("trial", "active", "payment_missing", "deleted"), trial_ends_at=MOMENT)
    },
    "OperatorApi.mail_test": {"body": _object(to=EMAIL)},
    # null: back to the default; the password's "" keeps it (the core checks each value)
    "OperatorApi.change_appliance_settings": {
        "body": _object(
            server=_object(public_hostname=NULLABLE_STRING),
            smtp=_object(
                host=NULLABLE_STRING,
                port={**PORT, "type": ["integer", "null"]},
                starttls={"type": ["boolean", "null"]},
                sender=NULLABLE_STRING,
                username=NULLABLE_STRING,
                password=NULLABLE_STRING,
            ),
        )
    },
    "OperatorApi.logs": {"query": LOG_FILTERS},
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
                "schema": {"type": "integer", "minimum": 0, "maximum": SQLITE_MAX}
                if converter == "int"
                else {"type": "string"},
            }
        )
        return "{" + name + "}"

    path = re.sub(r"<(?:(\w+):)?(\w+)>", convert, prefix.rstrip("/") + rule)
    return path, parameters


# the errors every operation may answer, with the console-spec's bodies (api.error_reply):
# components/responses of the document, by name
SHARED_REPLIES = {
    "BadRequest": Reply("Invalid input: {field: [messages]} or {detail}", "BadRequest"),
    "Unauthorized": Reply("Not signed in, or the token is not valid (code token_not_valid, messages)", "Unauthorized"),
    "Forbidden": Reply("Not allowed, or the organisation's payment is missing or it is deleted", "Error"),
    "NotFound": Reply("Not found in the caller's organisation", "Error"),
    "Unavailable": Reply("Storage or a service the request needs is not usable now (say, the data disk is full)",
                         "Error"),
    "TooLarge": Reply("The request body is larger than this request may send", "Error"),
    "TooManyRequests": Reply("Too many of these lately (mails to one address, checks of remote sources that "
                             "found no server): try again after Retry-After seconds", "Error"),
}  # fmt: skip
ERRORS = {"400": "BadRequest", "401": "Unauthorized", "403": "Forbidden", "404": "NotFound", "503": "Unavailable"}


def _response(reply: Reply) -> dict:
    """An OpenAPI response object: the description and, for a body, its schema per media type."""
    if reply.body is None:
        return {"description": reply.description}
    schema = {"$ref": f"#/components/schemas/{reply.body}"} if isinstance(reply.body, str) else reply.body
    return {"description": reply.description, "content": {media: {"schema": schema} for media in reply.media}}


def _responses(key: str, has_body: bool) -> dict:
    """Every reply of one operation: its own (replies.OUTPUTS) over the ones every operation may give."""
    shared = dict(ERRORS)
    if has_body:
        shared["413"] = "TooLarge"  # the gate answers before any handler (api.body_too_large)
    if key in RATE_LIMITED:
        shared["429"] = "TooManyRequests"
    own = OUTPUTS.get(key, {"200": Reply("OK (no reply declared in replies.OUTPUTS)")})
    found = {status: {"$ref": f"#/components/responses/{name}"} for status, name in shared.items()}
    found.update({status: _response(reply) for status, reply in own.items()})
    return dict(sorted(found.items()))


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
            key = f"{type(resource).__name__}.{rule.endpoint}"
            for method in sorted((rule.methods or set()) - {"HEAD", "OPTIONS"}):
                inputs = _inputs(key, method)
                operation = {
                    "operationId": f"{key}.{method.lower()}",
                    "summary": summary,
                    "responses": _responses(key, "requestBody" in inputs),
                }
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
        "components": {
            "schemas": SCHEMAS,
            "responses": {name: _response(reply) for name, reply in SHARED_REPLIES.items()},
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "paths": dict(sorted(paths.items())),
    }
