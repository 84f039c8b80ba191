"""Sources as admins see and change them. A local source is a folder under the
data dir's own folder for the organisation or under the configured [sources]
local_roots, never another organisation's folder, so a tenant's admin cannot
reach the host's disk. A remote SFTP source is checked (host allowed, connection,
host key, sign-in, folder) before it is saved; its host key fingerprint is
pinned then when not given; its password and private key are encrypted at rest
and never shown. An S3 source is checked the same way (endpoint host allowed,
endpoint reachable, credentials accepted, bucket there and listable); its secret
key is encrypted at rest and never shown.

An S3 source may sign in with OpenID Connect instead of keys (config.auth "oauth2"):
it is saved without a check, in the status "authorize", until an admin signs in
with the provider in the browser (`authorize`, then `finish_sign_in` when the
console's /admin/sources/callback page hands back the code and state: OAuth2
authorization code with PKCE S256). The provider's refresh token is then kept
sealed in the config and never shown; at connection time it is exchanged for
temporary keys (core/files/s3_credentials.py)."""

from __future__ import annotations

import ipaddress
import os
import re
import secrets
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

from twisted.conch.ssh import keys

from ..errors import ApplianceError, Invalid, NotFound
from ..models import Source, from_iso, to_iso
from ..storage.paths import split_path
from ..storage.s3 import credentials as oauth
from ..storage.s3.client import Bucket
from ..storage.sftp.client import Remote, RemoteProblem, normalise_fingerprint
from ..store import Store, queries
from ..store import sign_ins as sign_in_queries
from ..store import sources as source_queries
from . import validation
from .audit import AuditLog
from .auth import Account
from .changes import Field, describe_change
from .local_folders import LocalFolders


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
        self, store: Store, threads, files, settings, data_dir: Path, clock, folders: LocalFolders, audit: AuditLog
    ):  # fmt: skip
        self._store = store
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

    async def delete(self, account: Account, source_id: int, address: str) -> None:
        """Delete a source, unless it is the organisation's default or profiles or mailboxes
        use it: they would lose their files without a word (their source was set to none)."""
        existing = await self.get(account, source_id)
        found = await self._store.run(source_queries.delete_unused_source, account.organisation.id, existing.id)
        if found is not None:
            default, profiles, mailboxes = found
            raise Invalid(DEFAULT_DELETE if default else in_use(profiles, mailboxes))
        await self._told(account, address, f"{account.profile.username} deleted the source {existing.name}")

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
        await self._audit.change(account, "web", address, "source", "", message)

    async def _allowed_path(self, account: Account, raw) -> str:
        """The stored path: relative to the data dir for the organisation's own folder.
        Never another organisation's folder, one inside it or one holding it (LocalFolders),
        nor the data dir's own files (database, keys) outside the organisation's folder."""
        if not isinstance(raw, str) or not raw.strip() or "\x00" in raw:
            raise Invalid("Give the folder's path.", {"config": ["Give the folder's path as config.path."]})
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
        values: dict = {}
        errors: dict[str, list[str]] = {}
        if "name" in body or existing is None:
            try:
                values["name"] = validation.name(str(body.get("name", "")), "name")
            except Invalid as e:
                errors.update(e.fields)
        kind = body.get("type", existing.type if existing else "local")
        if kind not in ("local", "sftp", "s3"):
            errors["type"] = ["A source's type is local, sftp or s3."]
        elif existing is not None and kind != existing.type:
            errors["type"] = ["The type of a source cannot be changed: create a new source."]
        if "read_only" in body:
            if not isinstance(body["read_only"], bool):
                errors["read_only"] = ["Must be true or false."]
            else:
                values["read_only"] = body["read_only"]
        if "default" in body:
            if not isinstance(body["default"], bool):
                errors["default"] = ["Must be true or false."]
            elif body["default"]:
                values["default"] = True  # not a column: the route makes the source the default
            elif existing is not None and existing.id == account.organisation.default_source_id:
                errors["default"] = [DEFAULT_UNSET]
        if ("config" in body or existing is None) and "type" not in errors:
            config = body.get("config") if isinstance(body.get("config"), dict) else {}
            try:
                if kind == "sftp":
                    values["config"] = await self._sftp_config(config, existing)
                elif kind == "s3":
                    values["config"] = await self._s3_config(config, existing)
                else:
                    values["config"] = {"path": await self._allowed_path(account, config.get("path"))}
            except Invalid as e:
                errors.update(e.fields or {"config": [e.message]})
        if errors:
            raise Invalid("Some fields are not valid.", errors)
        if "name" in values and await self._store.run(
            source_queries.name_taken, account.organisation.id, values["name"], existing.id if existing else None
        ):
            raise Invalid("That name is taken.", {"name": ["Another source has this name."]})
        if existing is None:
            values.update(type=kind, org_id=account.organisation.id, created_at=to_iso(self._now()))
        return values

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
            try:
                seen = await self._files.remote.check(self._files.remote.remote(source))
            except ApplianceError as e:
                problem = e.message
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

    async def _sftp_config(self, config: dict, existing: Source | None) -> dict:
        """A remote SFTP source's stored config, after a successful connection to it."""
        old = existing.config if existing is not None and existing.type == "sftp" else {}
        errors: list[str] = []
        host = config.get("host", old.get("host", ""))
        if not isinstance(host, str) or not host.strip():
            errors.append("Give the remote server's host name or address as config.host.")
        elif problem := validation.control_problem(host, "config.host"):
            errors.append(problem)
        port = config.get("port", old.get("port", 22))
        if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
            errors.append("config.port must be a port number (1-65535).")
        username = config.get("username", old.get("username", ""))
        if not isinstance(username, str) or not username.strip():
            errors.append("Give the user to sign in as on the remote server as config.username.")
        elif problem := validation.control_problem(username, "config.username"):
            errors.append(problem)
        path = config.get("path", old.get("path", ""))
        if not isinstance(path, str) or len(path) > 4096:
            errors.append("config.path must be a folder on the remote server (empty: the user's login folder).")
        elif problem := validation.control_problem(path, "config.path"):
            errors.append(problem)
        stored = {k: old[k] for k in ("password_encrypted", "private_key_encrypted") if old.get(k)}
        password = key = ""
        secrets = self._files.remote
        if "password" in config:
            if not isinstance(config["password"], str) or len(config["password"]) > 1000:
                errors.append("config.password must be text.")
            elif problem := validation.control_problem(config["password"], "config.password"):
                errors.append(problem)
            else:
                password = config["password"]
                stored.pop("password_encrypted", None)
        elif stored.get("password_encrypted"):
            password = secrets.open(stored["password_encrypted"])
        if "private_key" in config:
            if not isinstance(config["private_key"], str):
                errors.append("config.private_key must be text.")
            elif config["private_key"].strip():
                try:
                    parsed = keys.Key.fromString(config["private_key"].strip().encode())
                    if parsed.isPublic():
                        raise keys.BadKeyError("public")
                    key = config["private_key"].strip() + "\n"
                except (keys.BadKeyError, keys.EncryptedKeyError, ValueError):
                    errors.append(
                        "config.private_key is not a private key in OpenSSH or PEM format "
                        "(keys protected by a passphrase are not supported)."
                    )
            stored.pop("private_key_encrypted", None)
        elif stored.get("private_key_encrypted"):
            key = secrets.open(stored["private_key_encrypted"])
        if not password and not key and not errors:
            errors.append("Give the remote account's config.password or config.private_key.")
        fingerprint = config.get("host_key_fingerprint")
        if fingerprint:
            try:
                fingerprint = normalise_fingerprint(str(fingerprint))
            except Invalid as e:
                errors.append(e.message)
        elif fingerprint is None and (host, port) == (old.get("host"), old.get("port")):
            fingerprint = old.get("host_key_fingerprint", "")  # unchanged server: keep the pinned key
        else:
            fingerprint = ""  # pinned on the first connection below
        if errors:
            raise Invalid(errors[0], {"config": errors})
        remote = Remote(host.strip(), port, username, password, key, fingerprint, path.strip(), secrets.allow_loopback)
        try:
            seen = await secrets.check(remote)
        except RemoteProblem as e:
            raise Invalid(e.message, {"config": [e.message]}) from None
        except ApplianceError as e:  # a host refused by the safety check, or one that does not resolve
            raise Invalid(e.message, {"config": [e.message]}) from None
        stored.update(host=remote.host, port=port, username=username, path=remote.path, host_key_fingerprint=seen)
        if password:
            stored["password_encrypted"] = secrets.seal(password)
        if key:
            stored["private_key_encrypted"] = secrets.seal(key)
        return stored

    async def _s3_config(self, config: dict, existing: Source | None) -> dict:
        """An S3 source's stored config, after a successful check of its bucket."""
        old = existing.config if existing is not None and existing.type == "s3" else {}
        errors: list[str] = []

        def text(name: str, default: str = "") -> str:
            value = config.get(name, old.get(name, default))
            if not isinstance(value, str) or len(value) > 1024:
                errors.append(f"config.{name} must be text.")
                return default
            if problem := validation.control_problem(value, f"config.{name}"):
                errors.append(problem)
                return default
            return value.strip()

        def flag(name: str, default: bool) -> bool:
            value = config.get(name, old.get(name, default))
            if not isinstance(value, bool):
                errors.append(f"config.{name} must be true or false.")
                return default
            return value

        region = text("region", "us-east-1") or "us-east-1"
        if not re.fullmatch(r"[a-z0-9][a-z0-9-]{0,62}", region):
            errors.append("config.region must be a region name such as us-east-1.")
        endpoint = text("endpoint").rstrip("/")
        if endpoint:
            url = urlsplit(endpoint)
            try:
                url.port  # noqa: B018 - raises for a bad port
                bad_port = False
            except ValueError:
                bad_port = True
            if (
                url.scheme not in ("http", "https")
                or not url.hostname
                or bad_port
                or url.username
                or url.password
                or url.path not in ("", "/")
                or url.query
                or url.fragment
            ):
                errors.append(
                    "config.endpoint must be the S3 service's URL, such as https://s3.example.com:9000 "
                    "(http or https, a host, an optional port, nothing else); leave it empty for AWS."
                )
        bucket = text("bucket")
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{1,254}", bucket):
            errors.append("Give the bucket's name as config.bucket (letters, digits, '.', '-' and '_').")
        prefix = text("prefix")
        try:
            prefix = "/".join(split_path(prefix)) if ".." not in prefix.split("/") else None
        except ApplianceError:
            prefix = None
        if prefix is None:
            errors.append("config.prefix must be a key prefix such as team/files ('/' between names, no '..').")
            prefix = ""
        path_style = flag("path_style", False)
        verify_tls = flag("verify_tls", True)
        auth = config.get("auth", old.get("auth", "keys"))
        if auth not in ("keys", "oauth2"):
            errors.append('config.auth must be "keys" (an access key) or "oauth2" (sign in with OpenID Connect).')
        elif auth == "oauth2":  # nothing to check before an admin signs in: saved as it is
            settings = self._oauth_config(config.get("oauth"), old, errors)
            if errors:
                raise Invalid(errors[0], {"config": errors})
            urls = [endpoint or f"https://s3.{region}.amazonaws.com", settings["token_url"]]
            urls += [settings["sts_endpoint"]] if settings["sts_endpoint"] else []
            for url in urls:
                try:
                    await self._threads.work(oauth.check_host, url, self._files.s3.destinations,
                                            self._files.s3.allow_loopback)  # fmt: skip
                except ApplianceError as e:
                    raise Invalid(e.message, {"config": [e.message]}) from None
            return {"endpoint": endpoint, "region": region, "bucket": bucket, "prefix": prefix, "path_style": path_style,
                    "verify_tls": verify_tls, "auth": "oauth2", "oauth": settings}  # fmt: skip
        access_key = text("access_key")
        if not access_key:
            errors.append("Give the access key as config.access_key.")
        s3 = self._files.s3
        stored = {k: old[k] for k in ("secret_key_encrypted",) if old.get(k)}
        secret = ""
        if "secret_key" in config:
            if (
                not isinstance(config["secret_key"], str)
                or not config["secret_key"]
                or len(config["secret_key"]) > 1024
            ):
                errors.append("config.secret_key must be the access key's secret.")
            elif problem := validation.control_problem(config["secret_key"], "config.secret_key"):
                errors.append(problem)
            else:
                secret = config["secret_key"]
        elif stored.get("secret_key_encrypted"):
            secret = s3.open(stored["secret_key_encrypted"], "secret key of this source")
        else:
            errors.append("Give the access key's secret as config.secret_key.")
        if errors:
            raise Invalid(errors[0], {"config": errors})
        target = Bucket(
            endpoint or f"https://s3.{region}.amazonaws.com",
            region,
            bucket,
            prefix,
            access_key,
            secret,
            path_style,
            verify_tls,
            s3.allow_loopback,
        )
        try:
            await s3.check(target)
        except ApplianceError as e:
            raise Invalid(e.message, {"config": [e.message]}) from None
        return {
            "endpoint": endpoint,
            "region": region,
            "bucket": bucket,
            "prefix": prefix,
            "access_key": access_key,
            "secret_key_encrypted": s3.seal(secret),
            "path_style": path_style,
            "verify_tls": verify_tls,
        }

    def _oauth_config(self, given, old: dict, errors: list[str]) -> dict:
        """config.oauth of an S3 source that signs in with OpenID Connect, as stored (secrets sealed).
        The saved sign-in is kept while the provider and client stay the same."""
        before = old.get("oauth") or {} if old.get("auth") == "oauth2" else {}
        if given is None:
            given = {}
        if not isinstance(given, dict):
            errors.append("config.oauth must be an object: authorize_url, token_url, client_id, client_secret, ...")
            return {}
        allow_loopback = self._files.s3.allow_loopback

        def text(name: str, default: str = "", limit: int = 1024) -> str:
            value = given.get(name, before.get(name, default))
            if not isinstance(value, str) or len(value) > limit:
                errors.append(f"config.oauth.{name} must be text.")
                return default
            if problem := validation.control_problem(value, f"config.oauth.{name}"):
                errors.append(problem)
                return default
            return value.strip()

        def url(name: str, required: bool) -> str:
            value = text(name)
            if not value and not required:
                return ""
            problem = url_problem(value, allow_loopback)
            if problem:
                errors.append(f"config.oauth.{name} {problem}")
            return value

        stored = {
            "authorize_url": url("authorize_url", True),
            "token_url": url("token_url", True),
            "client_id": text("client_id"),
            "scope": text("scope") or "openid",
            "role_arn": text("role_arn"),
            "sts_endpoint": url("sts_endpoint", False).rstrip("/"),
        }
        if not stored["client_id"]:
            errors.append("Give the client id the provider gave this appliance as config.oauth.client_id.")
        if not re.fullmatch(r"[\x21\x23-\x5b\x5d-\x7e]+( [\x21\x23-\x5b\x5d-\x7e]+)*", stored["scope"]):
            errors.append("config.oauth.scope must be scope names separated by spaces, such as openid offline_access.")
        if stored["role_arn"] and not re.fullmatch(r"arn:[\w+=/,.@:-]{4,2040}", stored["role_arn"]):
            errors.append(
                "config.oauth.role_arn must be a role's ARN (arn:aws:iam::123456789012:role/files), or empty."
            )
        if "client_secret" in given:
            secret = given["client_secret"]
            if not isinstance(secret, str) or len(secret) > 1024:
                errors.append("config.oauth.client_secret must be text (empty for a public client).")
            elif problem := validation.control_problem(secret, "config.oauth.client_secret"):
                errors.append(problem)
            elif secret:
                stored["client_secret_encrypted"] = self._files.s3.seal(secret)
        elif before.get("client_secret_encrypted"):
            stored["client_secret_encrypted"] = before["client_secret_encrypted"]
        same_client = all(stored[k] == before.get(k) for k in ("authorize_url", "token_url", "client_id")) and (
            stored.get("client_secret_encrypted") == before.get("client_secret_encrypted")
        )
        if same_client and before.get("refresh_token_encrypted"):
            stored.update(refresh_token_encrypted=before["refresh_token_encrypted"], grant=before.get("grant", ""))
        return stored

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


def url_problem(value: str, allow_loopback: bool) -> str | None:
    """Why a provider's URL cannot be used, or None: https (http only for this host, when loopback is allowed)."""
    parts = urlsplit(value)
    try:
        parts.port  # noqa: B018 - raises for a bad port
    except ValueError:
        return "has a port that is not a number."
    if parts.scheme not in ("https", "http") or not parts.hostname:
        return "must be a URL such as https://login.example.com/oauth2/token."
    if parts.username or parts.password or parts.fragment:
        return "must not hold a user, password or #fragment."
    if parts.scheme == "http":
        loopback = parts.hostname == "localhost"
        try:
            loopback = loopback or ipaddress.ip_address(parts.hostname).is_loopback
        except ValueError:
            pass
        if not (loopback and allow_loopback):
            return "must use https (http only for a provider on this host, when [sources] allow_loopback is on)."
    return None


class SavedSignIns:
    """Where an S3 source's sign-in with its provider is kept (storage/s3/credentials.py
    WebIdentities writes through this: the storage never reaches the store)."""

    def __init__(self, store: Store):
        self._store = store

    async def save_refresh_token(self, source_id: int, grant: str, sealed: str) -> bool:
        return await self._store.run(sign_in_queries.save_refresh_token, source_id, grant, sealed)

    async def sign_in_refused(self, source_id: int, grant: str, reason: str, when: str) -> None:
        await self._store.run(sign_in_queries.sign_in_refused, source_id, grant, reason, when)
