"""Sources as admins see and change them. A local source is a folder under the
data dir's own folder for the organisation or under the configured [sources]
local_roots, never another organisation's folder, so a tenant's admin cannot
reach the host's disk. A remote SFTP source is checked (host allowed, connection,
host key, sign-in, folder) before it is saved; its host key fingerprint is
pinned then when not given; its password and private key are encrypted at rest
and never shown. An S3 source is checked the same way (endpoint host allowed,
endpoint reachable, credentials accepted, bucket there and listable); its secret
key is encrypted at rest and never shown."""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

from twisted.conch.ssh import keys

from ..errors import ApplianceError, Invalid, NotFound
from ..models import Source, to_iso
from ..store import Store, queries
from ..store import sources as source_queries
from . import validation
from .auth import Account
from .files.remote_s3 import Bucket
from .files.remote_sftp import Remote, RemoteProblem, normalise_fingerprint
from .files.tree import split_path


def view(source: Source) -> dict:
    config = {"path": source.config.get("path", "")}
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
        )
    return {
        "id": source.id,
        "name": source.name,
        "type": source.type,
        "config": config,
        "read_only": source.read_only,
        "status": source.status,
        "last_error": source.last_error,
    }


def folder_problem(path: Path) -> str | None:
    if not path.is_dir():
        return f"The folder {path} does not exist."
    if not os.access(path, os.W_OK | os.X_OK):
        return f"The appliance cannot write to {path}."
    return None


class SourceAdmin:
    def __init__(self, store: Store, threads, files, settings, data_dir: Path, clock):
        self._store = store
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

    async def _allowed_path(self, account: Account, raw) -> str:
        """The stored path: relative to the data dir for the organisation's own folder."""
        if not isinstance(raw, str) or not raw.strip() or "\x00" in raw:
            raise Invalid("Give the folder's path.", {"config": ["Give the folder's path as config.path."]})
        own = (self._data_dir / "files" / account.organisation.subdomain).resolve()
        wanted = Path(raw.strip())
        candidate = (own / wanted).resolve() if not wanted.is_absolute() else Path(os.path.realpath(wanted))
        roots = [Path(os.path.realpath(r)) for r in self._settings.sources.local_roots]
        others = await self._store.run(source_queries.other_organisations, account.organisation.id)
        foreign = [(self._data_dir / "files" / sub).resolve() for sub in others]
        if any(candidate == f or candidate.is_relative_to(f) for f in foreign):
            message = "That folder belongs to another organisation."
            raise Invalid(message, {"config": [message]})
        if candidate == own or candidate.is_relative_to(own):
            return str(candidate.relative_to(self._data_dir.resolve()))
        if any(candidate == r or candidate.is_relative_to(r) for r in roots):
            return str(candidate)
        allowed = ", ".join(str(r) for r in roots) or "none configured"
        message = (
            "Local sources must be inside the organisation's own folder or a folder the operator allowed "
            f"([sources] local_roots: {allowed})."
        )
        raise Invalid(message, {"config": [message]})

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

    async def check(self, account: Account, source: Source) -> Source:
        """Try the source and store what was found."""
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
        elif source.type == "s3":
            problem = None
            try:
                await self._files.s3.check(self._files.s3.bucket(source))
            except ApplianceError as e:
                problem = e.message
        else:
            path = self._files.source_root(source)
            problem = await self._threads.work(folder_problem, path)
        await self._store.run(
            source_queries.update_source,
            account.organisation.id,
            source.id,
            {
                **found,
                "status": "error" if problem else "ok",
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
        port = config.get("port", old.get("port", 22))
        if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
            errors.append("config.port must be a port number (1-65535).")
        username = config.get("username", old.get("username", ""))
        if not isinstance(username, str) or not username.strip() or any(ord(c) < 32 for c in username):
            errors.append("Give the user to sign in as on the remote server as config.username.")
        path = config.get("path", old.get("path", ""))
        if not isinstance(path, str) or "\x00" in path or len(path) > 4096:
            errors.append("config.path must be a folder on the remote server (empty: the user's login folder).")
        stored = {k: old[k] for k in ("password_encrypted", "private_key_encrypted") if old.get(k)}
        password = key = ""
        secrets = self._files.remote
        if "password" in config:
            if not isinstance(config["password"], str) or len(config["password"]) > 1000:
                errors.append("config.password must be text.")
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
            if not isinstance(value, str) or len(value) > 1024 or any(ord(c) < 32 for c in value):
                errors.append(f"config.{name} must be text.")
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
        access_key = text("access_key")
        if not access_key:
            errors.append("Give the access key as config.access_key.")
        path_style = flag("path_style", False)
        verify_tls = flag("verify_tls", True)
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
