"""Sources as admins see and change them. A local source is a folder under the
data dir's own folder for the organisation or under the configured [sources]
local_roots, never another organisation's folder, so a tenant's admin cannot
reach the host's disk (that check is here, as it depends on LocalFolders). A
remote SFTP or S3 source's config is checked by its backend before it is saved
(storage/sftp/config.py, storage/s3/config.py, reached through the registry):
secrets are encrypted at rest and never shown.

An S3 source may sign in with OpenID Connect instead of keys (config.auth "oauth2"):
it is saved without a check, in the status "authorize", until an admin signs in
with the provider in the browser (`authorize`, then `finish_sign_in` when the
console's /admin/sources/callback page hands back the code and state: OAuth2
authorization code with PKCE S256). The provider's refresh token is then kept
sealed in the config and never shown; at connection time it is exchanged for
temporary keys (storage/s3/credentials.py)."""

from __future__ import annotations

import os
import secrets
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field as Bounds
from pydantic import WithJsonSchema

from ..declarations import (
    ID,
    MAX_STRING,
    Declaration,
    Hint,
    Shown,
    defaults,
    in_order,
    read,
    refuse,
    rule,
    schema,
    shown,
)
from ..errors import ApplianceError, Invalid, NotFound, RateLimited, Unavailable, Unreached
from ..models import Source, from_iso, to_iso
from ..storage.registry import SourceConfig
from ..storage.s3 import credentials as oauth
from ..storage.s3.config import S3Settings, S3SettingsReply
from ..storage.sftp.config import SftpSettings, SftpSettingsReply
from ..store import Store, queries
from ..store import sign_ins as sign_in_queries
from ..store import sources as source_queries
from . import validation
from .audit import AuditLog
from .auth import Account
from .changes import Field, describe_change
from .local_folders import LocalFolders, overlap
from .ratelimit import UNREACHED_PER_ORGANISATION, RateLimiter, wait_in_words

FILES_CHOICES = ("keep", "delete")
KEEP_INSTEAD = "Delete the source and keep its files instead."
PATH_HINT = "Give the folder's path as config.path."


class LocalSettings(Declaration):
    """What an admin gives of a local source's config: its folder (see `_allowed_path`)."""

    path: Annotated[str, Bounds(max_length=MAX_STRING), Hint(PATH_HINT)] = ""


# each type of source's config, as its check (`_LocalConfig`, the backends' config.py) reads it
SETTINGS: dict[str, type[Declaration]] = {"local": LocalSettings, "s3": S3Settings, "sftp": SftpSettings}
# config as the API takes it (and the console's source forms are made from): the fields of every
# type's config, of which a source's type reads its own, named in x-source-types
CONFIG = {
    "type": "object",
    "description": "The settings of the source's type (x-source-types names them). One left out keeps its value; "
                   "on a new source, its default.",
    "properties": {name: field for settings in SETTINGS.values()
                   for name, field in schema(settings, creating=False, defaults=True)["properties"].items()},
    "x-source-types": {kind: list(settings.model_fields) for kind, settings in SETTINGS.items()},
}  # fmt: skip
FLAG = Annotated[bool, Hint("Must be true or false.")]


class SourceFields(Declaration):
    """What an admin gives of a source (a new one: its name at least; its type is local unless given)."""

    name: Annotated[str, Bounds(max_length=MAX_STRING), Hint("Enter a name."), rule(validation.name)]
    type: Annotated[Literal[tuple(SETTINGS)], Hint("A source's type is local, sftp or s3.")] = "local"
    read_only: FLAG = False
    default: Annotated[
        bool,
        Bounds(description="true: the organisation's default source, which new profiles get (true makes it so; "
               "an organisation always has one, so false on it is refused)"),
        Hint("Must be true or false."),
    ] = False  # fmt: skip
    config: Annotated[dict, Hint("Give the source's settings as an object."), WithJsonSchema(CONFIG)] = {}


def remove_folder(folder: Path) -> tuple[dict, str | None]:
    """Remove a folder and everything in it, links as links (never followed): ({files,
    bytes} removed, None) or, where something could not be removed, what stopped it."""
    removed = {"files": 0, "bytes": 0}
    if not folder.exists():
        return removed, None
    for top, folders, names in os.walk(folder, topdown=False):
        for name in names + [f for f in folders if os.path.islink(os.path.join(top, f))]:
            path = os.path.join(top, name)
            try:
                found = os.lstat(path)
                os.unlink(path)
            except FileNotFoundError:
                continue
            except OSError as e:
                return removed, f"{path}: {e.strerror}"
            if stat.S_ISREG(found.st_mode):  # links and the like are removed, not counted
                removed["files"] += 1
                removed["bytes"] += found.st_size
        try:
            os.rmdir(top)
        except FileNotFoundError:
            pass
        except OSError as e:
            return removed, f"{top}: {e.strerror}"
    return removed, None


def _described(folder, theirs: bool) -> str:
    """A folder (local_folders.Folder) in words, never naming another organisation."""
    if theirs:
        return "another organisation's folder"
    if folder.source_id is not None:
        return f"the source {folder.source_name}'s folder"
    return "the organisation's own folder"


def shown_path(stored: str) -> str:
    """A local source's folder as an admin gives it (and as `_allowed_path` reads it back):
    inside the organisation's own folder relative to it, "." for that folder itself; a
    folder under [sources] local_roots absolute. It is stored relative to the data dir
    ("files/<subdomain>/..."), which the admin neither sees nor types: showing that
    form made every save of the form move the source into files/<subdomain>/files/..."""
    parts = Path(stored).parts
    if not stored or Path(stored).is_absolute() or parts[:1] != ("files",):
        return stored
    return "/".join(parts[2:]) or "."


# how a change of each field is told in the audit log (a config's fields flattened)
FIELDS = {
    "name": Field("name"),
    "read_only": Field("read-only", "bool"),
    "config.path": Field("folder"),
    "config.host": Field("host"),
    "config.port": Field("port", "number"),
    "config.username": Field("username"),
    "config.password_encrypted": Field("password", "secret"),
    "config.private_key_encrypted": Field("private key", "secret"),
    "config.host_key_fingerprint": Field("host key fingerprint"),
    "config.endpoint": Field("endpoint"),
    "config.region": Field("region"),
    "config.bucket": Field("bucket"),
    "config.prefix": Field("prefix"),
    "config.access_key": Field("access key"),
    "config.secret_key_encrypted": Field("secret key", "secret"),
    "config.path_style": Field("path-style addressing", "bool"),
    "config.verify_tls": Field("certificate check", "bool"),
    "config.auth": Field("authentication", "choice", {"keys": "access keys", "oauth2": "OAuth2 sign-in"}),
    "config.oauth.client_secret_encrypted": Field("OAuth2 client secret", "secret"),
    "config.oauth.refresh_token_encrypted": Field("OAuth2 sign-in", "secret"),
}


def _flat(values: dict, opened, prefix: str = "") -> dict:
    """{"config.host": ...}: a config's fields as keys of their own, sealed secrets
    opened (they are sealed anew on every save) so that only a new one differs."""
    flat = {}
    for key, value in values.items():
        if isinstance(value, dict) and key in ("config", "oauth"):
            flat.update(_flat(value, opened, f"{prefix}{key}."))
        elif key.endswith("_encrypted"):
            flat[prefix + key] = opened(value)
        else:
            flat[prefix + key] = shown_path(value) if prefix + key == "config.path" else value
    return flat


def view(source: Source, default_source_id: int | None) -> dict:
    """A source as the API shows it; `default`: new profiles get it (the organisation's default source)."""
    config = {"path": source.config.get("path", "")}
    if source.type == "local":
        config["path"] = shown_path(config["path"])
    if source.type == "sftp":
        config.update(
            host=source.config.get("host", ""),
            port=source.config.get("port", 22),
            username=source.config.get("username", ""),
            host_key_fingerprint=source.config.get("host_key_fingerprint", ""),
            has_password=bool(source.config.get("password_encrypted")),
            has_private_key=bool(source.config.get("private_key_encrypted")),
        )
    elif source.type == "s3":
        config = {k: source.config.get(k, "") for k in ("endpoint", "region", "bucket", "prefix", "access_key")}
        config.update(
            path_style=bool(source.config.get("path_style", False)),
            verify_tls=bool(source.config.get("verify_tls", True)),
            has_secret_key=bool(source.config.get("secret_key_encrypted")),
            auth=source.config.get("auth", "keys"),
        )
        if config["auth"] == "oauth2":
            given = source.config.get("oauth") or {}
            config["oauth"] = {k: given.get(k, "") for k in OAUTH_FIELDS}
            config["oauth"].update(
                has_client_secret=bool(given.get("client_secret_encrypted")),
                signed_in=bool(given.get("refresh_token_encrypted")),
            )
    return {
        "id": source.id,
        "name": source.name,
        "type": source.type,
        "config": config,
        "read_only": source.read_only,
        "status": source.status,
        "last_error": source.last_error,
        "default": source.id == default_source_id,
    }


DEFAULT_DELETE = (
    "This is the organisation's default source: new profiles get it. Make another source the default first."
)
DEFAULT_UNSET = (
    "This is the organisation's default source. To change that, make another source the default: "
    "an organisation always has one."
)


def in_use(profiles: int, mailboxes: int) -> str:
    """Why a source that profiles or mailboxes use is not deleted."""
    counted = ((profiles, "profile", "profiles"), (mailboxes, "mailbox", "mailboxes"))
    who = " and ".join(f"{n} {one if n == 1 else many}" for n, one, many in counted if n)
    return (
        f"{who} {'uses' if profiles + mailboxes == 1 else 'use'} this source. Give "
        f"{'it' if profiles + mailboxes == 1 else 'them'} another source first, so no one loses access to "
        "their files (deleting a source never deletes the files themselves)."
    )


OAUTH_FIELDS = ("authorize_url", "token_url", "client_id", "scope", "role_arn", "sts_endpoint")
SIGN_IN_TIME = timedelta(minutes=10)  # from the authorize URL to the code's return
AUTHORIZE = "authorize"  # the status of a source that waits for an admin to sign in with its provider
STATUSES = ("unknown", "ok", "error", AUTHORIZE)


class LocalSettingsReply(shown(LocalSettings)):
    """A local source's config as the API shows it: its folder as an admin gives it (`shown_path`)."""


# each type of source's config as the API shows it
SHOWN_SETTINGS: dict[str, type[Shown]] = {"local": LocalSettingsReply, "s3": S3SettingsReply, "sftp": SftpSettingsReply}


class SourceReply(shown(SourceFields)):
    """A source as the API shows it (`view`): what an admin gives of it, its config as its type
    shows it (secrets never), and what only the core sets."""

    id: ID
    config: LocalSettingsReply | SftpSettingsReply | S3SettingsReply
    status: Literal[STATUSES]
    last_error: str


def folder_problem(path: Path, create: bool = False) -> str | None:
    """What keeps the appliance from using a local source's folder, or None; `create`
    (a new source, or a new path): make a missing folder first. A check of a source in
    use never does, so an unmounted disk is reported, not papered over."""
    if create and not os.path.lexists(path):
        try:
            path.mkdir(mode=0o750, parents=True)
        except OSError as e:
            return f"The appliance cannot create the folder {path}: {e.strerror or e}."
    if os.path.lexists(path) and not path.is_dir():
        return f"{path} is not a folder."
    if not path.is_dir():
        return f"The folder {path} does not exist."
    if not os.access(path, os.W_OK | os.X_OK):
        return f"The appliance cannot write to {path}."
    return None


class SourceAdmin:
    def __init__(
        self, store: Store, threads, files, settings, data_dir: Path, clock, folders: LocalFolders, audit: AuditLog,
        limits: RateLimiter,
    ):  # fmt: skip
        self._store = store
        self._limits = limits
        self._audit = audit
        self._folders = folders
        self._threads = threads
        self._files = files
        self._settings = settings
        self._data_dir = Path(data_dir)
        self._clock = clock

    async def get(self, account: Account, source_id: int) -> Source:
        source = await self._store.run(queries.get_source, account.organisation.id, source_id)
        if source is None:
            raise NotFound("No such source.")
        return source

    # -- the admin's use cases: each validates, writes, audits and answers the source as shown

    async def listing(self, account: Account, search: str, limit: int, offset: int) -> tuple[int, list[dict]]:
        """(count, the page of sources) of `account`'s organisation; `search` finds them by name."""
        count, sources = await self._store.run(
            source_queries.list_sources, account.organisation.id, search, limit, offset
        )
        default = account.organisation.default_source_id
        return count, [view(source, default) for source in sources]

    async def item(self, account: Account, source_id: int) -> dict:
        return view(await self.get(account, source_id), account.organisation.default_source_id)

    async def create(self, account: Account, body: dict, address: str) -> dict:
        """Validate and save a new source, check it (a local one's folder is made), and
        make it the default when {"default": true} says so."""
        source_id, make_default = await self._insert(account, body)
        source = await self._check_saved(account, source_id)
        await self._told(account, address, f"{account.profile.username} created the source {source.name}")
        default = account.organisation.default_source_id
        if make_default:
            default = await self._make_default(account, source, address)
        return view(source, default)

    async def change(self, account: Account, source_id: int, body: dict, address: str) -> dict:
        """Change a source; {"default": true} makes it the organisation's default source.
        Only what really changes is written and told; the source is checked again."""
        existing = await self.get(account, source_id)
        make_default, changed = await self._write_change(account, existing, body)
        default = account.organisation.default_source_id
        if make_default and existing.id != default:
            default = await self._make_default(account, existing, address)
        if changed:
            await self._told(
                account, address, f"{account.profile.username} changed the source {existing.name}: {changed}"
            )
        return view(await self._check_saved(account, source_id, existing), default)

    async def delete(self, account: Account, source_id: int, address: str, files: str = "keep") -> None:
        """Delete a source, unless it is the organisation's default or profiles or mailboxes
        use it: they would lose their files without a word (their source was set to none).

        A local source's folder stays the organisation's until its files are gone (core/
        local_folders.py): `files` "keep" leaves them and keeps a folder outside the
        organisation's own one reserved for it; "delete" removes the folder with its files,
        refused where they are also another source's or the source is read-only."""
        if files not in FILES_CHOICES:
            message = 'Say what becomes of the files: "keep" (the default) or "delete".'
            raise Invalid(message, {"files": [message]})
        existing = await self.get(account, source_id)
        if existing.type != "local" or not existing.config.get("path"):
            await self._delete_row(account, existing, None)
            await self._told(account, address, f"{account.profile.username} deleted the source {existing.name}")
            return
        await self._folders.exclusively(lambda: self._delete_local(account, existing, files, address))

    async def _delete_local(self, account: Account, source: Source, files: str, address: str) -> None:
        """Delete a local source (under the folders lock): its row and, in the same
        transaction, its folder's reservation; then its files when asked, releasing the
        reservation only when the folder is gone."""
        stored = source.config["path"]
        folder = Path(os.path.realpath(self._data_dir / stored))
        own = Path(os.path.realpath(self._data_dir / "files" / account.organisation.subdomain))
        if files == "delete":
            await self._refuse_removal(account, source, folder, own)
        inside_own = folder == own or folder.is_relative_to(own)
        reserve = None  # a folder inside the organisation's own one is the organisation's already
        if not inside_own:
            reserve = {"path": stored, "source_name": source.name, "reserved_at": to_iso(self._now())}
        await self._delete_row(account, source, reserve)
        who = account.profile.username
        if files == "keep":
            kept = "kept for the organisation" if reserve else "left in the organisation's folder"
            await self._told(account, address, f"{who} deleted the source {source.name}; its files are {kept}")
            return
        removed, problem = await self._threads.work(remove_folder, folder)
        if problem is None:  # the organisation's reservations of what is gone are gone with it
            gone = [
                f.reserved["id"] for f in await self._folders.folders()
                if f.reserved and f.org_id == account.organisation.id and Path(f.path).is_relative_to(folder)
            ]  # fmt: skip
            await self._store.run(source_queries.forget_reserved, gone)
        counted = f"{removed['files']} files, {removed['bytes']} bytes"
        if problem is None:
            await self._told(account, address, f"{who} deleted the source {source.name} and its files ({counted})")
            return
        await self._told(
            account, address,
            f"{who} deleted the source {source.name}; removing its files stopped after {counted}: {problem}",
        )  # fmt: skip
        kept = "stays reserved for the organisation" if reserve else "stays in the organisation's folder"
        raise Unavailable(
            f"The source {source.name} was deleted, but not all its files could be removed ({problem}). "
            f"Its folder {shown_path(stored)} {kept}; the operator can remove what is left."
        )

    async def _refuse_removal(self, account: Account, source: Source, folder: Path, own: Path) -> None:
        """Refuse to remove a folder whose files are not only this source's: a read-only
        source, the organisation's own folder, a folder holding another source's (or a
        reserved one), or one another organisation's folder overlaps (made by hand)."""
        if source.read_only:
            raise Invalid(f"{source.name} is read-only: the appliance does not remove its files. {KEEP_INSTEAD}")
        for other in await self._folders.folders():
            theirs = other.org_id != account.organisation.id
            if other.source_id == source.id or (other.reserved and not theirs):
                continue  # its own folder, or one the organisation kept: its files are the organisation's
            holds = other.path == str(folder) or Path(other.path).is_relative_to(folder)
            if holds or (theirs and overlap(other.path, str(folder))):
                raise Invalid(
                    f"The folder {shown_path(source.config['path'])} holds {_described(other, theirs)}: its files "
                    f"are not only {source.name}'s, so they are not removed. {KEEP_INSTEAD}"
                )

    async def _delete_row(self, account: Account, source: Source, reserve: dict | None) -> None:
        found = await self._store.run(
            source_queries.delete_unused_source, account.organisation.id, source.id, reserve
        )  # fmt: skip
        if found is not None:
            default, profiles, mailboxes = found
            raise Invalid(DEFAULT_DELETE if default else in_use(profiles, mailboxes))

    async def check(self, account: Account, source_id: int) -> dict:
        """Try the source now and keep what was found (its status, its last error)."""
        checked = await self._check(account, await self.get(account, source_id))
        return view(checked, account.organisation.default_source_id)

    async def _make_default(self, account: Account, source: Source, address: str) -> int:
        """New profiles (and mailboxes without a source) get this source from now on."""
        await self._store.run(source_queries.set_default_source, account.organisation.id, source.id)
        await self._told(
            account, address, f"{account.profile.username} made {source.name} the organisation's default source"
        )
        return source.id

    async def _told(self, account: Account, address: str, message: str) -> None:
        await self._audit.acted(account, "source", message, address=address)

    async def _allowed_path(self, account: Account, raw: str) -> str:
        """The stored path: relative to the data dir for the organisation's own folder.
        Never another organisation's folder, one inside it or one holding it (LocalFolders),
        nor the data dir's own files (database, keys) outside the organisation's folder."""
        if not raw.strip() or "\x00" in raw:
            raise Invalid("Give the folder's path.", {"config": [PATH_HINT]})
        data, own, candidate = await self._threads.work(self._real_paths, account.organisation.subdomain, raw.strip())
        await self._folders.refuse_taken(account.organisation.id, candidate)
        if candidate == own or candidate.is_relative_to(own):
            return str(candidate.relative_to(data))
        if candidate == data or candidate.is_relative_to(data) or data.is_relative_to(candidate):
            message = (
                "That folder is the appliance's data dir, inside it or holds it (its database, keys and every "
                "organisation's files). Choose a folder inside the organisation's own folder or under [sources] "
                "local_roots, outside the data dir."
            )
            raise Invalid(message, {"config": [message]})
        roots = [Path(os.path.realpath(r)) for r in self._settings.sources.local_roots]
        if any(candidate == r or candidate.is_relative_to(r) for r in roots):
            return str(candidate)
        allowed = ", ".join(str(r) for r in roots) or "none configured"
        message = (
            "Local sources must be inside the organisation's own folder or a folder the operator allowed "
            f"([sources] local_roots: {allowed})."
        )
        raise Invalid(message, {"config": [message]})

    def _real_paths(self, subdomain: str, wanted: str) -> tuple[Path, Path, Path]:
        """(data dir, the organisation's own folder, the wanted folder), real paths (on the work pool):
        a relative folder is inside the organisation's own one."""
        data = Path(os.path.realpath(self._data_dir))
        own = Path(os.path.realpath(data / "files" / subdomain))
        return data, own, Path(os.path.realpath(own / wanted))

    async def _insert(self, account: Account, body: dict) -> tuple[int, bool]:
        """Validate and insert a new source: (its id, whether it should become the default).
        A local one is checked and written under the folders lock."""

        async def write() -> tuple[int, bool]:
            values = await self.values(account, body)
            make_default = values.pop("default", False)
            return await self._store.run(queries.insert_source, values), make_default

        if body.get("type", "local") == "local":
            return await self._folders.exclusively(write)
        return await write()

    def describe_change(self, existing: Source, values: dict) -> str:
        """What `values` (from `values()`) change on `existing`, in words ("" when nothing)."""

        def opened(sealed) -> str:
            try:
                return self._files.remote.open(sealed) if sealed else ""
            except Exception:  # noqa: BLE001 - a key that changed: tell it as changed
                return sealed

        old = _flat({"name": existing.name, "read_only": existing.read_only, "config": existing.config}, opened)
        new = _flat(values, opened)
        # a config is given whole: a key it no longer has is now empty
        new.update({key: None for key in old if key.startswith("config.") and "config" in values and key not in new})
        return describe_change(old, new, FIELDS)

    async def _write_change(self, account: Account, existing: Source, body: dict) -> tuple[bool, str]:
        """Validate and write a change: (whether it should become the default, what
        changed in words, "" when nothing). A local folder is checked and written under
        the folders lock."""

        async def write() -> tuple[bool, str]:
            values = await self.values(account, body, existing)
            make_default = values.pop("default", False)
            changed = self.describe_change(existing, values)
            if changed:
                await self._store.run(source_queries.update_source, account.organisation.id, existing.id, values)
            return make_default, changed

        if existing.type == "local" and "config" in body:
            return await self._folders.exclusively(write)
        return await write()

    async def values(self, account: Account, body: dict, existing: Source | None = None) -> dict:
        values, errors = read(SourceFields, body, creating=existing is None)
        kind = values.pop("type", existing.type if existing else "local")
        if existing is not None and kind != existing.type:
            errors["type"] = ["The type of a source cannot be changed: create a new source."]
        if values.get("default") is False:
            del values["default"]  # not a column: true, and the route makes the source the default
            if existing is not None and existing.id == account.organisation.default_source_id:
                errors["default"] = [DEFAULT_UNSET]
        if ("config" in body or existing is None) and not {"type", "config"} & errors.keys():
            if kind != "local":
                self._may_reach(account)
            try:
                values["config"] = await self._config_check(account, kind).clean(
                    values.get("config", {}), existing.config if existing is not None else {}
                )
            except Invalid as e:
                if isinstance(e, Unreached):
                    self._unreached(account)
                errors.update(e.fields or {"config": [e.message]})
        refuse(errors)
        if "name" in values and await self._store.run(
            source_queries.name_taken, account.organisation.id, values["name"], existing.id if existing else None
        ):
            raise Invalid("That name is taken.", {"name": ["Another source has this name."]})
        if existing is None:
            values.update(type=kind, org_id=account.organisation.id, created_at=to_iso(self._now()))
        return values

    def _may_reach(self, account: Account) -> None:
        """Refuse (RateLimited) a check of a remote source while the organisation's checks
        that reached no server on the appliance's own networks are over their limit."""
        wait = self._limits.retry_after((UNREACHED_PER_ORGANISATION, str(account.organisation.id)))
        if wait:
            raise RateLimited(
                f"Too many checks of remote sources found no server lately ({UNREACHED_PER_ORGANISATION.count} an "
                f"hour): check the hosts and ports. Try again {wait_in_words(wait)}.",
                wait,
            )

    def _unreached(self, account: Account) -> None:
        self._limits.take((UNREACHED_PER_ORGANISATION, str(account.organisation.id)))

    def _config_check(self, account: Account, kind: str) -> SourceConfig:
        """How a config of this type is checked: the backend's own (storage/<type>/config.py,
        through the registry); a local folder's here (`_allowed_path`), as which folder this
        organisation may use depends on the other organisations' sources (LocalFolders)."""
        if kind == "local":
            return _LocalConfig(self, account)
        check = self._files.backends.config(kind)
        if check is None:
            message = f"Sources of type {kind} are not available on this appliance."
            raise Invalid(message, {"type": [message]})
        return check

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self._clock.seconds(), UTC)

    async def _check_saved(self, account: Account, source_id: int, before: Source | None = None) -> Source:
        """Check a source just created (`before` None) or changed: a local source's
        folder is made when it is missing and new (created, or the path changed)."""
        source = await self.get(account, source_id)
        return await self._check(account, source, create=before is None or before.config != source.config)

    async def _check(self, account: Account, source: Source, create: bool = False) -> Source:
        """Try the source and store what was found; `create`: a new local source's folder
        (or the new folder of a changed one) is made when it is missing."""
        found: dict = {}
        if source.type == "sftp":
            problem = None
            self._may_reach(account)
            try:
                seen = await self._files.remote.check(self._files.remote.remote(source))
            except ApplianceError as e:
                problem = e.message
                if getattr(e, "unreached", False):
                    self._unreached(account)
            else:
                if not source.config.get("host_key_fingerprint"):
                    found["config"] = {**source.config, "host_key_fingerprint": seen}
        elif source.type == "s3" and waits_for_sign_in(source):
            problem = oauth.NOT_SIGNED_IN
        elif source.type == "s3":
            problem = None
            try:
                bucket = self._files.s3.bucket(source)
                if bucket.credentials is not None:  # a check tries the saved sign-in itself, not keys kept from it
                    bucket.credentials.forget()
                await self._files.s3.check(bucket)
            except ApplianceError as e:
                problem = e.message
        else:
            path = self._files.source_root(source)
            problem = await self._threads.work(folder_problem, path, create)
        await self._store.run(
            source_queries.update_source,
            account.organisation.id,
            source.id,
            {
                **found,
                "status": (AUTHORIZE if waits_for_sign_in(source) else "error") if problem else "ok",
                "last_error": problem or "",
                "checked_at": to_iso(self._now()),
            },
        )
        return await self.get(account, source.id)

    # -- signing in with a source's OAuth2 provider -----------------------------------------------

    async def authorize(self, account: Account, source_id: int, redirect_uri: str) -> str:
        """The provider's authorize URL for this source, with a new state and PKCE challenge
        kept for SIGN_IN_TIME (for this admin, this source and this redirect URI only)."""
        source = await self.get(account, source_id)
        if source.type != "s3" or source.config.get("auth") != "oauth2":
            raise Invalid("This source does not sign in with a provider (its config.auth is not oauth2).")
        settings = source.config.get("oauth") or {}
        state, verifier = oauth.new_state(), oauth.new_verifier()
        now = self._now()
        await self._store.run(
            sign_in_queries.add_sign_in,
            {
                "state_hash": oauth.state_hash(state),
                "org_id": account.organisation.id,
                "source_id": source.id,
                "profile_id": account.profile.id,
                "code_verifier": verifier,
                "redirect_uri": redirect_uri,
                "expires_at": to_iso(now + SIGN_IN_TIME),
                "created_at": to_iso(now),
            },
        )
        return oauth.authorize_url(
            settings.get("authorize_url", ""),
            settings.get("client_id", ""),
            redirect_uri,
            settings.get("scope") or "openid",
            state,
            verifier,
        )

    async def finish_sign_in(self, account: Account, body: dict, address: str) -> dict:
        """The provider sent the admin back with `code` and `state` (or `error`): exchange the code
        (with the PKCE verifier), keep the refresh token sealed, check the source; audited."""
        state = body.get("state")
        if not isinstance(state, str) or not state or len(state) > 512:
            raise Invalid("The provider sent no state back: start the sign-in again from the source's page.",
                          {"state": ["This field is required."]})  # fmt: skip
        pending = await self._store.run(sign_in_queries.take_sign_in, oauth.state_hash(state))
        unknown = "This sign-in is unknown or was used already: start it again from the source's page."
        if pending is None or pending["org_id"] != account.organisation.id:
            raise Invalid(unknown, {"state": [unknown]})
        if pending["profile_id"] != account.profile.id:
            message = "Another administrator started this sign-in: start your own from the source's page."
            raise Invalid(message, {"state": [message]})
        if from_iso(pending["expires_at"]) <= self._now():
            message = "The sign-in took longer than 10 minutes: start it again from the source's page."
            raise Invalid(message, {"state": [message]})
        source = await self.get(account, pending["source_id"])
        if source.type != "s3" or source.config.get("auth") != "oauth2":
            raise Invalid("This source no longer signs in with a provider.")
        if body.get("error"):
            error = oauth.provider_error(str(body["error"])[:100], str(body.get("error_description") or ""))
            raise Invalid(error.message, {"detail": error.message, "source": source.id})
        code = body.get("code")
        if not isinstance(code, str) or not code or len(code) > 4096:
            raise Invalid("The provider sent no code back.", {"code": ["This field is required."]})
        settings = dict(source.config.get("oauth") or {})
        secret = (
            self._files.s3.open(settings["client_secret_encrypted"], f"client secret of the source {source.name!r}")
            if settings.get("client_secret_encrypted")
            else ""
        )
        form = {"grant_type": "authorization_code", "code": code, "redirect_uri": pending["redirect_uri"],
                "code_verifier": pending["code_verifier"]}  # fmt: skip
        try:
            tokens = await self._threads.net(oauth.token_request, settings.get("token_url", ""), form,
                                             settings.get("client_id", ""), secret, self._files.s3.destinations,
                                             self._files.s3.allow_loopback)  # fmt: skip
        except oauth.ProviderError as e:
            raise Invalid(e.message, {"detail": e.message, "source": source.id}) from None
        refresh = tokens.get("refresh_token")
        if not isinstance(refresh, str) or not refresh:
            message = (
                "The provider gave no refresh token, which the appliance needs to reach the bucket later: allow "
                "refresh tokens for this client at the provider (often the scope offline_access) and sign in again."
            )
            raise Invalid(message, {"detail": message, "source": source.id})
        settings.update(refresh_token_encrypted=self._files.s3.seal(refresh), grant=secrets.token_hex(8))
        await self._store.run(source_queries.update_source, account.organisation.id, source.id,
                              {"config": {**source.config, "oauth": settings}})  # fmt: skip
        checked = await self._check(account, await self.get(account, source.id))
        await self._told(
            account, address, f"{account.profile.username} signed the source {source.name} in with its provider"
        )
        return view(checked, account.organisation.default_source_id)


def waits_for_sign_in(source: Source) -> bool:
    """An S3 source that signs in with a provider and has no saved sign-in yet."""
    oauth_settings = source.config.get("oauth") or {}
    return source.config.get("auth") == "oauth2" and not oauth_settings.get("refresh_token_encrypted")


class _LocalConfig:
    """A local source's config check (registry.SourceConfig) for one organisation's admin."""

    def __init__(self, admin: SourceAdmin, account: Account):
        self._admin = admin
        self._account = account

    async def clean(self, config: dict, old: dict) -> dict:
        values, problems = read(LocalSettings, {**defaults(LocalSettings), **config}, creating=True)
        if problems:
            raise Invalid("Give the folder's path.", {"config": in_order(LocalSettings, problems)})
        return {"path": await self._admin._allowed_path(self._account, values["path"])}


class SavedSignIns:
    """Where an S3 source's sign-in with its provider is kept (storage/s3/credentials.py
    WebIdentities writes through this: the storage never reaches the store)."""

    def __init__(self, store: Store):
        self._store = store

    async def save_refresh_token(self, source_id: int, grant: str, sealed: str) -> bool:
        return await self._store.run(sign_in_queries.save_refresh_token, source_id, grant, sealed)

    async def sign_in_refused(self, source_id: int, grant: str, reason: str, when: str) -> None:
        await self._store.run(sign_in_queries.sign_in_refused, source_id, grant, reason, when)
