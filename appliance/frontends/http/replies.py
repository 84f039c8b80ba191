"""What each operation of the portal API answers: its statuses and, for every reply
with a body, that body's JSON Schema (components/schemas of the OpenAPI document).

The schemas are closed (every field required unless named optional, no other field,
null only where the serialiser gives null), so a serialiser that adds, drops or
retypes a field fails schemathesis's response checks and the seeded replies of
tests/frontends/test_openapi.py instead of surprising a generated client. A profile,
a mailbox and a source (each type's config too) are the core's reply models, made
from the same declarations as their request bodies (declarations.shown); other
choices come from where the product declares them (models, the core), and the mail
state from its dataclass, so a new choice or field reaches the document by itself.

OUTPUTS is keyed like openapi.INPUTS, "<resource class>.<handler>", and holds the
success replies (each operation must have one: a test holds every handler to it) and
the errors an operation answers beyond the ones every operation may (openapi.py)."""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass

from ...core.access import Reason
from ...core.api_tokens import SCOPES
from ...core.appliance_settings import CONFIG, CONSOLE, DEFAULT, SECRET, SECTIONS, SETTINGS
from ...core.auth import BANNED, INVALID_CREDENTIALS
from ...core.dashboard import PROTOCOLS as DASHBOARD_PROTOCOLS
from ...core.mailbox_admin import MailboxReply
from ...core.profile_admin import ProfileReply
from ...core.signin import FILES_REFUSED, UNAVAILABLE
from ...core.source_admin import SHOWN_SETTINGS, SourceReply
from ...declarations import reply_schema
from ...mail.outbound import MailState
from ...models import ACTIONS, LOG_PROTOCOLS, ORG_STATUSES, PERMISSIONS

JSON = "application/json"
TOKEN_NOT_VALID = "token_not_valid"

# -- the pieces ----------------------------------------------------------------------------

TEXT = {"type": "string"}
MAYBE_TEXT = {"type": ["string", "null"]}
BOOLEAN = {"type": "boolean"}
COUNT = {"type": "integer", "minimum": 0}
MAYBE_COUNT = {"type": ["integer", "null"], "minimum": 0}
ID = {"type": "integer", "minimum": 1}
MAYBE_ID = {"type": ["integer", "null"], "minimum": 1}
PORT = {"type": "integer", "minimum": 1, "maximum": 65535}
MOMENT = {"type": "string", "format": "date-time"}
MAYBE_MOMENT = {"type": ["string", "null"], "format": "date-time"}


def ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def maybe(schema: dict) -> dict:
    """`schema` or null."""
    return {"anyOf": [schema, {"type": "null"}]}


def choice(*values: str) -> dict:
    return {"type": "string", "enum": list(values)}


def list_of(items: dict) -> dict:
    return {"type": "array", "items": items}


def record(*optional: str, **properties: dict) -> dict:
    """A closed object: these properties and no other, each required unless `optional`."""
    unknown = set(optional) - set(properties)
    if unknown:
        raise ValueError(f"optional fields that are not properties: {unknown}")
    return {
        "type": "object",
        "properties": properties,
        "required": [name for name in properties if name not in optional],
        "additionalProperties": False,
    }


def extended(schema: dict, *optional: str, **properties: dict) -> dict:
    """A closed object: `schema`'s properties and these, which replace any of the same name
    (each required unless `optional`)."""
    kept = [name for name in schema["properties"] if name not in schema["required"] and name not in properties]
    return record(*kept, *optional, **{**schema["properties"], **properties})


_TYPES = {str: "string", int: "integer", bool: "boolean", type(None): "null"}


def from_dataclass(cls) -> dict:
    """The closed object of a dataclass of plain fields as asdict() gives it (a `str | None` field
    is a string or null; a field named *_at a date-time)."""
    hints = typing.get_type_hints(cls)
    properties = {}
    for field in dataclasses.fields(cls):
        hint = hints[field.name]
        kinds = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
        schema: dict = {"type": [_TYPES[kind] for kind in kinds]}
        if len(schema["type"]) == 1:
            schema["type"] = schema["type"][0]
        if field.name.endswith("_at"):
            schema["format"] = "date-time"
        properties[field.name] = schema
    return record(**properties)


def page_of(item: str) -> dict:
    """api.page's envelope around a page of `item`s."""
    return record(count=COUNT, next=MAYBE_TEXT, previous=MAYBE_TEXT, results=list_of(ref(item)))


# -- errors (api.error_reply, the console-spec's catalogue) --------------------------------------

ERROR = record(detail=TEXT)
# a 400 naming fields: {field: [messages]} ("detail" too when no field is to blame)
FIELD_ERRORS = {
    "type": "object",
    "minProperties": 1,
    "additionalProperties": {"type": "array", "items": TEXT, "minItems": 1},
}
SIGN_IN_CODES = (TOKEN_NOT_VALID, INVALID_CREDENTIALS, BANNED, UNAVAILABLE, FILES_REFUSED, *(r.value for r in Reason))
UNAUTHORIZED = record(
    "code", "retry_after", "messages",
    detail=TEXT,
    code=choice(*SIGN_IN_CODES),
    retry_after={**COUNT, "description": "banned: the seconds until the ban ends (also in Retry-After)"},
    messages=list_of(record(token_class=choice("AccessToken", "RefreshToken"), token_type=choice("access", "refresh"),
                            message=TEXT)),
)  # fmt: skip

# -- the resources -----------------------------------------------------------------------------

USER = {"id": ID, "username": TEXT, "email": TEXT, "is_admin": BOOLEAN, "is_superuser": BOOLEAN}
TOKEN_PAIR = {"access": TEXT, "refresh": TEXT}

PROFILE = reply_schema(ProfileReply)
INVITATION = {
    "oneOf": [
        record(mailed={"const": True}, detail=TEXT),
        record(mailed={"const": False}, detail=TEXT, error=TEXT, link=TEXT),
    ],
    "description": "Whether the invitation was mailed; when not, why and the link to hand over (only to this admin)",
}

# a source's config as source_admin.view shows it, by type (secrets never: has_* says whether one is set)
SOURCE_CONFIGS = {f"{kind.capitalize()}SourceConfig": reply_schema(shown) for kind, shown in SHOWN_SETTINGS.items()}
SOURCE = extended(reply_schema(SourceReply), config={"oneOf": [ref(name) for name in SOURCE_CONFIGS]})

MAILBOX_RUN = record(id=ID, started_at=MOMENT, finished_at=MAYBE_MOMENT,
                     status=choice("running", "success", "partial", "failed"), messages=COUNT, files=COUNT,
                     bytes=COUNT, error=TEXT)  # fmt: skip
MAILBOX = extended(reply_schema(MailboxReply), last_run=maybe(ref("MailboxRun")))

API_TOKEN = record(id=ID, name=TEXT, prefix=TEXT, scopes=list_of(choice(*SCOPES)), created_by=MAYBE_ID,
                   expires_at=MAYBE_MOMENT, last_used_at=MAYBE_MOMENT, revoked=BOOLEAN, created_at=MOMENT)  # fmt: skip

SHARE = record(
    id=ID, name=TEXT, path=TEXT, kind=choice("file", "folder"),
    url={**MAYBE_TEXT, "description": "null: the link is shown only when it is made"},
    expires_at=MAYBE_MOMENT, has_password=BOOLEAN, max_downloads={"type": ["integer", "null"], "minimum": 1},
    downloads=COUNT, upload_only=BOOLEAN, revoked=BOOLEAN, created_at=MOMENT, created_by=TEXT,
)  # fmt: skip

LOG = record(id=ID, created_at=MOMENT, username=TEXT, protocol=choice(*LOG_PROTOCOLS), action=choice(*ACTIONS),
             path=TEXT, bytes=MAYBE_COUNT, remote_address=TEXT, message=TEXT)  # fmt: skip

BAN = record(address=TEXT, until=MOMENT, offences={"type": "integer", "minimum": 1},
             kind=choice("address", "username", "share_link"), why=TEXT, usernames=list_of(TEXT))  # fmt: skip

ORGANISATION = record(
    id=ID, name=TEXT, subdomain=TEXT, status=choice(*ORG_STATUSES), on_trial=BOOLEAN, days_left_on_trial=COUNT,
    trial_ends_at=MAYBE_MOMENT, trial_expired=BOOLEAN, branding=BOOLEAN, branding_logo=MAYBE_TEXT,
    branding_colour=MAYBE_TEXT, user_terms=TEXT, require_tls=BOOLEAN,
)  # fmt: skip
# the operator's view adds its members and its storage (null until first measured)
OPERATOR_ORGANISATION = extended(ORGANISATION, users=COUNT, storage_bytes=MAYBE_COUNT, storage_files=MAYBE_COUNT,
                                 storage_measured_at=MAYBE_MOMENT)  # fmt: skip
FOLDER = record(
    path=TEXT,
    organisation=record(id=ID, name=TEXT, subdomain=TEXT, status=choice(*ORG_STATUSES)),
    source={"anyOf": [record(id=ID, name=TEXT), {"type": "null"}],
            "description": "null: the organisation's own folder in the data dir, or a reserved one"},
    reserved={"anyOf": [record(id=ID, since=MOMENT, source=TEXT), {"type": "null"}],
              "description": "kept for the organisation since its source was deleted (source: that source's name)"},
    shared_with=list_of(ID),
)  # fmt: skip
MAIL_STATUS = extended(from_dataclass(MailState), host=TEXT, port=PORT, starttls=BOOLEAN, sender=TEXT,
                       authenticated=BOOLEAN)  # fmt: skip


def _appliance_setting(kind: str) -> dict:
    """One setting of god/settings/: its value (a secret's only as set or not), where it comes from,
    whether the console may change it, and where the config sets it."""
    told = {"set": BOOLEAN} if kind == SECRET else {"value": {"port": PORT, "bool": BOOLEAN}.get(kind, TEXT)}
    return record(**told, source=choice(CONFIG, CONSOLE, DEFAULT), editable=BOOLEAN, set_by=MAYBE_TEXT)


APPLIANCE_SETTINGS = record(
    **{section: record(**{key: _appliance_setting(setting.kind) for (of, key), setting in SETTINGS.items()
                          if of == section}) for section in SECTIONS},
    warnings=list_of(record(setting=TEXT, message=TEXT)),
)  # fmt: skip

ENTRY = record(name=TEXT, type=choice("dir", "file", "link", "other"), size=COUNT, modified=MOMENT)
FOLDER_LISTING = {
    **record("count", "next", "previous", "permissions", path=TEXT, entries=list_of(ref("Entry")), count=COUNT,
             next=MAYBE_TEXT, previous=MAYBE_TEXT, permissions=list_of(choice(*PERMISSIONS))),
    "dependentRequired": {"count": ["next", "previous"], "next": ["count"], "previous": ["count"]},
    "description": "count, next and previous: only when ?page= or ?page_size= asked for a page; permissions: what "
                   "the signed-in profile may do here (a read-only source leaves list and download), not in a share "
                   "link's listing",
}  # fmt: skip

BAR = {**TEXT, "description": "a bar of the chart: its month ('Nov 2026'), or day or week's Monday ('28 Nov')"}

SCHEMAS: dict[str, dict] = {
    "Error": ERROR,
    "FieldErrors": FIELD_ERRORS,
    "BadRequest": {"oneOf": [ref("Error"), ref("FieldErrors")]},
    "Unauthorized": UNAUTHORIZED,
    "Detail": record(detail=TEXT),
    "SignedIn": record(**TOKEN_PAIR, **USER),
    "TokenPair": record(**TOKEN_PAIR),
    "PasswordChanged": record(detail=TEXT, **TOKEN_PAIR),
    "Initialized": record(initialized=BOOLEAN),
    "Overview": record(
        users=COUNT, active_users=COUNT, log_count=COUNT, file_transfers=COUNT,
        series=list_of(record(name=choice(*DASHBOARD_PROTOCOLS), data=list_of(record(x=BAR, y=COUNT)))),
        logs=list_of(record(id=ID, username=TEXT, created_at=MOMENT, message=TEXT)),
        top_users=list_of(record(id=ID, username=TEXT, last_login=MAYBE_MOMENT, count=COUNT)),
    ),
    "Information": record(
        source={**TEXT, "description": "the name of the caller's source, or empty"}, hostname=TEXT, username=TEXT,
        sftp_port=PORT, ftp_port=PORT, host_keys=list_of(record(type=TEXT, fingerprint=TEXT)),
        permissions=list_of(choice(*PERMISSIONS)), read_only=BOOLEAN,
    ),
    "Organisation": ORGANISATION,
    "Organisations": list_of(ref("Organisation")),
    "Branding": record(branding=BOOLEAN, branding_logo=MAYBE_TEXT, branding_colour=MAYBE_TEXT),
    "Profile": PROFILE,
    "NewProfile": extended(PROFILE, "invitation", invitation=ref("Invitation")),
    "Invitation": INVITATION,
    "ProfilePage": page_of("Profile"),
    **SOURCE_CONFIGS,
    "Source": SOURCE,
    "SourcePage": page_of("Source"),
    "SourceSignIn": record(url=TEXT, redirect_uri=TEXT),
    # a provider's refusal names the source, so the console leads back to it
    "SourceSignInRefused": {"oneOf": [ref("Error"), ref("FieldErrors"), record(detail=TEXT, source=ID)]},
    "MailboxRun": MAILBOX_RUN,
    "MailboxRunPage": page_of("MailboxRun"),
    "MailboxRunStarted": record(run=ID, detail=TEXT),
    "Mailbox": MAILBOX,
    "MailboxPage": page_of("Mailbox"),
    "ApiToken": API_TOKEN,
    "NewApiToken": extended(API_TOKEN, token={**TEXT, "description": "the whole token: shown in this reply only"}),
    "ApiTokenPage": page_of("ApiToken"),
    "Share": SHARE,
    "NewShare": extended(
        SHARE, url=TEXT, token={**TEXT, "description": "shown in this reply only"},
        mail={**list_of(record(to=TEXT, sent=BOOLEAN, error=MAYBE_TEXT)),
              "description": "the link mailed to each of the recipients: whether the mail server took it, and why not"},
    ),
    "SharePage": page_of("Share"),
    "Log": LOG,
    "LogPage": page_of("Log"),
    "LogActions": record(actions=list_of(choice(*ACTIONS))),
    "Ban": BAN,
    "BanPage": page_of("Ban"),
    "OperatorOrganisation": OPERATOR_ORGANISATION,
    "NewOperatorOrganisation": extended(OPERATOR_ORGANISATION, "invitation", invitation=ref("Invitation")),
    "OperatorOrganisationPage": page_of("OperatorOrganisation"),
    "Folder": FOLDER,
    "FolderPage": page_of("Folder"),
    "MailStatus": MAIL_STATUS,
    "TestMail": record(sent=BOOLEAN, to=TEXT, error=MAYBE_TEXT, mail=ref("MailStatus")),
    "ApplianceSettings": APPLIANCE_SETTINGS,
    "Entry": ENTRY,
    "FolderListing": FOLDER_LISTING,
    "Uploaded": record(files=list_of(record(path=TEXT, size=COUNT))),
    "Path": record(path=TEXT),
    "DownloadLink": record(url=TEXT, expires_at=MOMENT),
    "SharedItem": record(
        name=MAYBE_TEXT, kind=choice("file", "folder"), size=MAYBE_COUNT, expires_at=MAYBE_MOMENT, upload_only=BOOLEAN,
        password_required=BOOLEAN, unlocked=BOOLEAN, downloads_left=MAYBE_COUNT, shared_by=MAYBE_TEXT,
    ),
    "SharedAccess": record(access=TEXT, expires_at=MOMENT),
    "SharedFolder": record(path=TEXT, entries=list_of(ref("Entry"))),
    "SharedUploaded": record(files=list_of(record(name=TEXT, size=COUNT))),
}  # fmt: skip


# -- what each operation answers -----------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    """One reply of an operation: what it means, and its body (a component's name or a
    schema, in `media`), or none."""

    description: str
    body: str | dict | None = None
    media: tuple[str, ...] = (JSON,)


def ok(body: str, description: str = "OK") -> dict[str, Reply]:
    return {"200": Reply(description, body)}


def created(body: str, description: str = "Created") -> dict[str, Reply]:
    return {"201": Reply(description, body)}


NO_CONTENT = {"204": Reply("Done: no body")}
DOWNLOAD = {
    "200": Reply("The file", {"type": "string", "contentMediaType": "application/octet-stream"},
                 ("application/octet-stream",)),
    "206": Reply("The range asked for (Content-Range)", {"type": "string"}, ("application/octet-stream",)),
    "304": Reply("Not modified: the client's copy (If-None-Match, If-Modified-Since) is current"),
    "412": Reply("The file changed since the version If-Match or If-Unmodified-Since names", "Error"),
    "416": Reply("The range is outside the file (Content-Range: bytes */size)", "Error"),
}  # fmt: skip
WRITES = {  # of the files
    "409": Reply("A folder in the way is not empty", "Error"),
    "507": Reply("The profile's quota (bytes or files) would be exceeded", "Error"),
}
LINK_ENDED = {"410": Reply("The link expired, was revoked or reached its download limit", "Error")}
TUS_VERSION = {"412": Reply("No or another Tus-Resumable version (Tus-Version says which)", "Error")}
TUS_APPEND = {
    **TUS_VERSION,
    "409": Reply("Upload-Offset is not where the upload is", "Error"),
    "410": Reply("The upload expired or was finished", "Error"),
    "415": Reply("The body is not application/offset+octet-stream", "Error"),
    "507": WRITES["507"],
}

OUTPUTS: dict[str, dict[str, Reply]] = {
    "PortalApi.token": {
        **ok("SignedIn", "Signed in: the session's tokens and who signed in"),
        "401": Reply(
            "Sign-in refused, with code: invalid_credentials (one answer whether the account exists or "
            "not), banned (retry_after and Retry-After: the seconds until the ban ends), payment_missing "
            "(an ended trial too), organisation_deleted, account_disabled, account_expired, "
            "protocol_not_allowed, address_not_allowed, tls_required, files_refused, unavailable",
            "Unauthorized",
        ),
    },
    "PortalApi.refresh": ok("TokenPair", "A new pair: the refresh token sent is spent"),
    "PortalApi.logout": ok("Detail", "Signed out"),
    "PortalApi.reset": ok("Detail", "The same answer whether the address has an account or not"),
    "PortalApi.reset_confirm": ok("Detail", "The password is set"),
    "PortalApi.change_password": ok("PasswordChanged", "Changed: this session's new tokens (the others end)"),
    "PortalApi.initialized": ok("Initialized"),
    "PortalApi.setup": created("SignedIn", "The organisation and its first admin, signed in"),
    "PortalApi.overview": ok("Overview"),
    "PortalApi.information": ok("Information"),
    "PortalApi.organisation": ok("Organisations", "The caller's organisation (a list of one, as the console reads it)"),
    "PortalApi.organisation_item": ok("Organisation"),
    "PortalApi.organisation_logo": ok("Organisation", "The organisation with its new logo, or without one"),
    "PortalApi.branding": ok("Branding", "A subdomain's branding (off for an unknown one)"),
    "PortalApi.branding_logo": {
        "200": Reply("The logo", {"type": "string"}, ("image/png", "image/jpeg", "image/svg+xml")),
    },
    "FilesApi.listing": ok("FolderListing", "The folder's entries, folders first"),
    "FilesApi.delete": {**NO_CONTENT, **WRITES},
    "FilesApi.download": DOWNLOAD,
    "FilesApi.download_link": ok("DownloadLink", "A URL that downloads the file without sign-in until expires_at"),
    "FilesApi.upload": {**created("Uploaded", "The files saved"), **WRITES},
    "FilesApi.mkdir": {**created("Path", "The folder made"), **WRITES},
    "FilesApi.rename": {**ok("Path", "The new path"), **WRITES},
    "TusApi.create": {
        "201": Reply("Created: Location names the upload"),
        "413": Reply("Upload-Length is more than Tus-Max-Size", "Error"),
        **TUS_VERSION,
        "507": WRITES["507"],
    },
    "TusApi.append": {"204": Reply("Appended: Upload-Offset says where the upload is now"), **TUS_APPEND},
    "TusApi.terminate": {"204": Reply("The upload and its bytes are gone"), **TUS_APPEND},
    "TusApi.overridden": {"204": Reply("As PATCH or DELETE"), **TUS_APPEND},
    "ProfilesApi.listing": ok("ProfilePage"),
    "ProfilesApi.create": created("NewProfile", "The profile; without a password also what became of its invitation"),
    "ProfilesApi.item": ok("Profile"),
    "ProfilesApi.change": ok("Profile"),
    "ProfilesApi.invite": {"202": Reply("Invited: whether the mail server took the invitation", "Invitation")},
    "ProfilesApi.delete": NO_CONTENT,
    "SourcesApi.listing": ok("SourcePage"),
    "SourcesApi.create": created("Source"),
    "SourcesApi.item": ok("Source"),
    "SourcesApi.change": ok("Source"),
    "SourcesApi.delete": NO_CONTENT,
    "SourcesApi.check": ok("Source", "The source as its check found it (status, last_error)"),
    "SourcesApi.authorize": ok("SourceSignIn", "Where to send the browser, and where the provider sends it back"),
    "SourcesApi.callback": {
        **ok("Source", "The source signed in and checked"),
        "400": Reply(
            "Refused: {field: [messages]}, or {detail} (with the source when the provider refused)",
            "SourceSignInRefused",
        ),
    },
    "MailboxesApi.listing": ok("MailboxPage"),
    "MailboxesApi.create": created("Mailbox"),
    "MailboxesApi.item": ok("Mailbox"),
    "MailboxesApi.change": ok("Mailbox"),
    "MailboxesApi.delete": NO_CONTENT,
    "MailboxesApi.run": {"202": Reply("The run started", "MailboxRunStarted")},
    "MailboxesApi.runs": ok("MailboxRunPage", "The mailbox's runs, newest first"),
    "TokensApi.listing": ok("ApiTokenPage"),
    "TokensApi.create": created("NewApiToken", "The token, with its secret (the only time it is shown)"),
    "TokensApi.item": ok("ApiToken"),
    "TokensApi.revoke": NO_CONTENT,
    "LogsApi.listing": ok("LogPage", "Newest first"),
    "LogsApi.actions": ok("LogActions"),
    "LogsApi.export": {"200": Reply("The rows as CSV, with a header line", {"type": "string"}, ("text/csv",))},
    "BansApi.listing": ok("BanPage"),
    "BansApi.lift": NO_CONTENT,
    "SharesApi.listing": ok("SharePage"),
    "SharesApi.create": created("NewShare", "The link, with its URL and token (the only time they are shown)"),
    "SharesApi.item": ok("Share"),
    "SharesApi.change": ok("Share"),
    "SharesApi.revoke": NO_CONTENT,
    "SharedApi.metadata": {**ok("SharedItem"), **LINK_ENDED},
    "SharedApi.unlock": {
        **ok("SharedAccess", "A value for ?access= that opens the link until expires_at"),
        **LINK_ENDED,
    },
    "SharedApi.files": {**ok("SharedFolder"), **LINK_ENDED},
    "SharedApi.download": {**DOWNLOAD, **LINK_ENDED},
    "SharedApi.upload": {
        **created("SharedUploaded", "The files saved, under the names they got"),
        **LINK_ENDED,
        "507": WRITES["507"],
    },
    "OperatorApi.listing": ok("OperatorOrganisationPage"),
    "OperatorApi.create": created(
        "NewOperatorOrganisation",
        "The organisation, on trial, with its first admin; without a password also what became of the admin's "
        "invitation",
    ),
    "OperatorApi.item": ok("OperatorOrganisation"),
    "OperatorApi.change": ok("OperatorOrganisation"),
    "OperatorApi.measure_storage": ok("OperatorOrganisation", "The organisation with its storage measured now"),
    "OperatorApi.folders": ok("FolderPage"),
    "OperatorApi.release_folder": NO_CONTENT,
    "OperatorApi.mail": ok("MailStatus", "Where outbound mail goes, the last delivery and the last error"),
    "OperatorApi.mail_test": ok("TestMail", "Whether the mail server took the test mail, and why not"),
    "OperatorApi.appliance_settings": ok("ApplianceSettings"),
    "OperatorApi.change_appliance_settings": ok("ApplianceSettings", "The settings as they apply from now on"),
    "OperatorApi.logs": ok("LogPage", "Newest first"),
}
