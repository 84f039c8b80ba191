"""Plain records the store materialises and the core passes around."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

PERMISSIONS = ("list", "download", "upload", "overwrite", "delete", "rename", "mkdir")
PROTOCOLS = ("sftp", "ftp", "web")
ORG_STATUSES = ("trial", "active", "payment_missing", "deleted")
# Every action an audit log row may carry: the audit log refuses any other, and the
# logs screen's Action filter offers exactly these (GET logs/actions/)
ACTIONS = (
    "login", "login_failed", "upload", "download", "delete", "rename", "mkdir", "share", "share_access",
    "password_changed", "ban", "unban", "profile", "source", "token", "mailbox", "organisation",
    "organisation_created", "organisation_logo", "billing", "settings",
)  # fmt: skip
# Every protocol an audit log row may name (the users' three, and the appliance's own ways)
LOG_PROTOCOLS = (*PROTOCOLS, "api", "mail", "system")


def utcnow() -> datetime:
    return datetime.now(UTC)


def to_iso(moment: datetime | None) -> str | None:
    """The one timestamp format in the database: sortable UTC ISO-8601."""
    if moment is None:
        return None
    # isoformat, not strftime: %Y drops the leading zeros of a year before 1000
    return moment.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def from_iso(text: str | None) -> datetime | None:
    if not text:
        return None
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


@dataclass(frozen=True)
class Organisation:
    id: int
    name: str
    subdomain: str
    status: str
    trial_ends_at: str | None
    branding: bool
    branding_logo: str | None
    branding_colour: str | None
    user_terms: str
    default_source_id: int | None
    created_at: str
    require_tls: bool = False  # refuse passwords over plain-text FTP for every member


@dataclass(frozen=True)
class Source:
    id: int
    org_id: int
    name: str
    type: str
    config: dict
    read_only: bool
    status: str
    last_error: str


@dataclass(frozen=True)
class Profile:
    id: int
    org_id: int
    username: str
    email: str
    password_hash: str
    is_admin: bool
    is_superuser: bool
    active: bool
    source_id: int | None
    home: str
    permissions: tuple[str, ...]
    protocols: tuple[str, ...]
    ssh_keys: tuple[str, ...] = ()
    ip_allow: tuple[str, ...] = ()
    quota_bytes: int | None = None
    quota_files: int | None = None
    expires_at: str | None = None
    last_login: str | None = None
    created_at: str = ""
    require_tls: bool | None = None  # None: as the organisation says


@dataclass(frozen=True)
class LogEntry:
    org_id: int | None
    protocol: str
    action: str
    message: str
    profile_id: int | None = None
    username: str = ""
    path: str = ""
    bytes: int | None = None
    remote_address: str = ""
    created_at: str = field(default_factory=lambda: to_iso(utcnow()))


@dataclass(frozen=True)
class Mailbox:
    id: int
    org_id: int
    name: str
    host: str
    port: int
    security: str  # "tls" | "starttls" | "none"
    verify_tls: bool
    username: str
    password_encrypted: str
    folder: str
    source_id: int | None
    target_folder: str
    keep: str  # "attachments" | "message"
    after: str  # "seen" | "move" | "delete"
    move_to: str
    interval_minutes: int
    enabled: bool
    uid_validity: int | None
    last_uid: int | None


@dataclass(frozen=True)
class Share:
    """A link to a file or folder of a profile (the token itself is never stored)."""

    id: int
    org_id: int
    profile_id: int
    path: str  # inside the profile's home
    is_folder: bool
    expires_at: str | None
    password_hash: str | None
    max_downloads: int | None
    downloads: int
    upload_only: bool
    revoked: bool
    created_at: str
    created_by: str  # the sharing profile's username
