"""An S3 source's config as an admin gives it, checked and made ready to store: the
endpoint host allowed, the endpoint reachable, the credentials accepted, the bucket
there and listable; the secret key is sealed (encrypted at rest) and never shown.

An S3 source that signs in with OpenID Connect (config.auth "oauth2") is saved without
a check: there is nothing to try before an admin signs in with the provider (see
core/source_admin.py authorize); only its hosts are checked against where connections
may go."""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

from ...errors import ApplianceError, Invalid
from ...text import control_problem
from ...threads import Threads
from ..paths import split_path
from . import credentials
from .client import Bucket, S3Sources


def _text(given: dict, old: dict, prefix: str, name: str, default: str, errors: list[str]) -> str:
    """A text field of a config (`old`'s value when not given), stripped; `default` and a
    problem added to `errors` when it is no text, too long or holds a control character."""
    value = given.get(name, old.get(name, default))
    if not isinstance(value, str) or len(value) > 1024:
        errors.append(f"{prefix}{name} must be text.")
        return default
    if problem := control_problem(value, f"{prefix}{name}"):
        errors.append(problem)
        return default
    return value.strip()


class S3Config:
    """The config check of s3 sources (registry.SourceConfig)."""

    def __init__(self, sources: S3Sources, threads: Threads):
        self._sources = sources
        self._threads = threads

    async def clean(self, config: dict, old: dict) -> dict:
        """The stored config, after a successful check of its bucket (an OAuth2 one: saved as it
        is, checked once an admin has signed in); Invalid with the problems under "config"
        otherwise. `old`: the source's config before, {} for a new source."""
        errors: list[str] = []

        def text(name: str, default: str = "") -> str:
            return _text(config, old, "config.", name, default, errors)

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
            settings = self._oauth(config.get("oauth"), old, errors)
            if errors:
                raise Invalid(errors[0], {"config": errors})
            urls = [endpoint or f"https://s3.{region}.amazonaws.com", settings["token_url"]]
            urls += [settings["sts_endpoint"]] if settings["sts_endpoint"] else []
            for url in urls:
                try:
                    await self._threads.work(credentials.check_host, url, self._sources.destinations,
                                            self._sources.allow_loopback)  # fmt: skip
                except ApplianceError as e:
                    raise Invalid(e.message, {"config": [e.message]}) from None
            return {"endpoint": endpoint, "region": region, "bucket": bucket, "prefix": prefix, "path_style": path_style,
                    "verify_tls": verify_tls, "auth": "oauth2", "oauth": settings}  # fmt: skip
        access_key = text("access_key")
        if not access_key:
            errors.append("Give the access key as config.access_key.")
        s3 = self._sources
        stored = {k: old[k] for k in ("secret_key_encrypted",) if old.get(k)}
        secret = ""
        if "secret_key" in config:
            if (
                not isinstance(config["secret_key"], str)
                or not config["secret_key"]
                or len(config["secret_key"]) > 1024
            ):
                errors.append("config.secret_key must be the access key's secret.")
            elif problem := control_problem(config["secret_key"], "config.secret_key"):
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

    def _oauth(self, given, old: dict, errors: list[str]) -> dict:
        """config.oauth of an S3 source that signs in with OpenID Connect, as stored (secrets sealed).
        The saved sign-in is kept while the provider and client stay the same."""
        before = old.get("oauth") or {} if old.get("auth") == "oauth2" else {}
        if given is None:
            given = {}
        if not isinstance(given, dict):
            errors.append("config.oauth must be an object: authorize_url, token_url, client_id, client_secret, ...")
            return {}
        allow_loopback = self._sources.allow_loopback

        def text(name: str, default: str = "") -> str:
            return _text(given, before, "config.oauth.", name, default, errors)

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
            elif problem := control_problem(secret, "config.oauth.client_secret"):
                errors.append(problem)
            elif secret:
                stored["client_secret_encrypted"] = self._sources.seal(secret)
        elif before.get("client_secret_encrypted"):
            stored["client_secret_encrypted"] = before["client_secret_encrypted"]
        same_client = all(stored[k] == before.get(k) for k in ("authorize_url", "token_url", "client_id")) and (
            stored.get("client_secret_encrypted") == before.get("client_secret_encrypted")
        )
        if same_client and before.get("refresh_token_encrypted"):
            stored.update(refresh_token_encrypted=before["refresh_token_encrypted"], grant=before.get("grant", ""))
        return stored


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
