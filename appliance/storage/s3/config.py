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
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import Field as Bounds
from pydantic import WithJsonSchema

from ...declarations import MAX_STRING, Declaration, Hint, defaults, in_order, read, rule, schema, shown
from ...errors import ApplianceError, Invalid
from ...text import control_problem
from ...threads import Threads
from ..paths import split_path
from . import credentials
from .client import Bucket, S3Sources

SEALED = ("secret_key", "oauth")  # kept sealed in a stored config: never taken from it as given
OAUTH_STORED = ("authorize_url", "token_url", "client_id", "scope", "role_arn", "sts_endpoint")
OAUTH_HINT = "config.oauth must be an object: authorize_url, token_url, client_id, client_secret, ..."


def _text(label: str, *then) -> object:
    """A text field of a config (`label`: its name as told, config.<name>), stripped: at
    most 1024 characters, none of them a control character."""

    def check(value: str) -> str:
        if len(value) > 1024:
            raise Invalid(f"{label} must be text.")
        if problem := control_problem(value, label):
            raise Invalid(problem)
        return value.strip()

    return Annotated[str, Bounds(max_length=MAX_STRING), Hint(f"{label} must be text."), rule(check), *then]


def _matching(pattern: str, message: str, *, empty: bool = False):
    """A rule: the text is all of `pattern` (`empty`: or nothing)."""

    def check(value: str) -> str:
        if not (empty and not value) and not re.fullmatch(pattern, value):
            raise Invalid(message)
        return value

    return rule(check)


def _endpoint(value: str) -> str:
    value = value.rstrip("/")
    if not value:
        return value
    url = urlsplit(value)
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
        raise Invalid(
            "config.endpoint must be the S3 service's URL, such as https://s3.example.com:9000 "
            "(http or https, a host, an optional port, nothing else); leave it empty for AWS."
        )
    return value


def _prefix(value: str) -> str:
    try:
        if ".." not in value.split("/"):
            return "/".join(split_path(value))
    except ApplianceError:
        pass
    raise Invalid("config.prefix must be a key prefix such as team/files ('/' between names, no '..').")


def _secret(label: str, hint: str, *then) -> object:
    """A secret as given: at most 1024 characters, none of them a control character."""

    def check(value: str) -> str:
        if len(value) > 1024:
            raise Invalid(hint)
        if problem := control_problem(value, label):
            raise Invalid(problem)
        return value

    return Annotated[str, Bounds(max_length=MAX_STRING), Hint(hint), rule(check), *then]


def _given(value: str) -> str:
    if not value:
        raise Invalid("config.secret_key must be the access key's secret.")
    return value


def _client_id(value: str) -> str:
    if not value:
        raise Invalid("Give the client id the provider gave this appliance as config.oauth.client_id.")
    return value


class OAuthSettings(Declaration):
    """config.oauth of an S3 source that signs in with OpenID Connect; the URLs are checked
    against where connections may go when the source is saved (S3Config)."""

    authorize_url: _text("config.oauth.authorize_url") = ""
    token_url: _text("config.oauth.token_url") = ""
    client_id: _text("config.oauth.client_id", rule(_client_id)) = ""
    client_secret: _secret(
        "config.oauth.client_secret", "config.oauth.client_secret must be text (empty for a public client)."
    ) = ""  # fmt: skip
    scope: _text(
        "config.oauth.scope",
        rule(lambda scope: scope or "openid"),
        _matching(r"[\x21\x23-\x5b\x5d-\x7e]+( [\x21\x23-\x5b\x5d-\x7e]+)*",
                  "config.oauth.scope must be scope names separated by spaces, such as openid offline_access."),
    ) = ""  # fmt: skip
    role_arn: _text(
        "config.oauth.role_arn",
        _matching(r"arn:[\w+=/,.@:-]{4,2040}",
                  "config.oauth.role_arn must be a role's ARN (arn:aws:iam::123456789012:role/files), or empty.",
                  empty=True),
    ) = ""  # fmt: skip
    sts_endpoint: _text("config.oauth.sts_endpoint", rule(lambda url: url.rstrip("/"))) = ""


class S3Settings(Declaration):
    """What an admin gives of an S3 source's config (a field left out keeps its value)."""

    region: _text(
        "config.region",
        rule(lambda region: region or "us-east-1"),
        _matching(r"[a-z0-9][a-z0-9-]{0,62}", "config.region must be a region name such as us-east-1."),
    ) = ""  # fmt: skip
    endpoint: _text("config.endpoint", rule(_endpoint)) = ""
    bucket: _text(
        "config.bucket",
        _matching(r"[A-Za-z0-9][A-Za-z0-9._-]{1,254}",
                  "Give the bucket's name as config.bucket (letters, digits, '.', '-' and '_')."),
    ) = ""  # fmt: skip
    prefix: _text("config.prefix", rule(_prefix)) = ""
    path_style: Annotated[bool, Hint("config.path_style must be true or false.")] = False
    verify_tls: Annotated[bool, Hint("config.verify_tls must be true or false.")] = True
    auth: Annotated[
        Literal["keys", "oauth2"],
        Hint('config.auth must be "keys" (an access key) or "oauth2" (sign in with OpenID Connect).'),
    ] = "keys"
    oauth: Annotated[
        dict | None, Hint(OAUTH_HINT), WithJsonSchema(schema(OAuthSettings, creating=False, nullable=True, defaults=True))
    ] = None  # fmt: skip
    access_key: _text("config.access_key") = ""
    secret_key: _secret("config.secret_key", "config.secret_key must be the access key's secret.", rule(_given)) = ""


class OAuthSettingsReply(shown(OAuthSettings, leave=("client_secret",))):
    """config.oauth as the API shows it: the client secret only as given or not, and whether an
    admin has signed in (the provider's refresh token is never shown)."""

    has_client_secret: bool
    signed_in: bool


class S3SettingsReply(shown(S3Settings, leave=("secret_key", "oauth"))):
    """An S3 source's config as the API shows it: the secret key only as given or not."""

    has_secret_key: bool
    oauth: OAuthSettingsReply = None  # only when auth is oauth2


class S3Config:
    """The config check of s3 sources (registry.SourceConfig)."""

    def __init__(self, sources: S3Sources, threads: Threads):
        self._sources = sources
        self._threads = threads

    async def clean(self, config: dict, old: dict) -> dict:
        """The stored config, after a successful check of its bucket (an OAuth2 one: saved as it
        is, checked once an admin has signed in); Invalid with the problems under "config"
        otherwise. `old`: the source's config before, {} for a new source: a field left out
        keeps its value there; a secret is checked only when given (the sealed one is kept)."""
        kept = {name: old[name] for name in S3Settings.model_fields if name in old and name not in SEALED}
        given = {**defaults(S3Settings), **kept, **config}
        if "secret_key" not in config:
            del given["secret_key"]
        values, problems = read(S3Settings, given, creating=True)
        if values.get("auth") == "oauth2":  # nothing to check before an admin signs in: saved as it is
            settings = self._oauth(values.get("oauth"), old, problems)
            return await self._saved_for_sign_in(values, settings, in_order(S3Settings, problems))
        s3 = self._sources
        if not values.get("access_key"):
            problems.setdefault("access_key", []).append("Give the access key as config.access_key.")
        secret = values.get("secret_key", "")
        if "secret_key" not in config:
            if old.get("secret_key_encrypted"):
                secret = s3.open(old["secret_key_encrypted"], "secret key of this source")
            else:
                problems["secret_key"] = ["Give the access key's secret as config.secret_key."]
        errors = in_order(S3Settings, problems)
        if errors:
            raise Invalid(errors[0], {"config": errors})
        region = values["region"]
        stored = {name: values[name] for name in ("endpoint", "region", "bucket", "prefix", "access_key")}
        target = Bucket(
            values["endpoint"] or f"https://s3.{region}.amazonaws.com",
            region,
            values["bucket"],
            values["prefix"],
            values["access_key"],
            secret,
            values["path_style"],
            values["verify_tls"],
            s3.allow_loopback,
        )
        try:
            await s3.check(target)
        except ApplianceError as e:
            raise Invalid(e.message, {"config": [e.message]}) from None
        return {
            **stored,
            "secret_key_encrypted": s3.seal(secret),
            "path_style": values["path_style"],
            "verify_tls": values["verify_tls"],
        }

    async def _saved_for_sign_in(self, values: dict, settings: dict, errors: list[str]) -> dict:
        """The stored config of an S3 source that signs in with a provider, once its hosts are
        ones connections may go to."""
        if errors:
            raise Invalid(errors[0], {"config": errors})
        endpoint, region = values["endpoint"], values["region"]
        urls = [endpoint or f"https://s3.{region}.amazonaws.com", settings["token_url"]]
        urls += [settings["sts_endpoint"]] if settings["sts_endpoint"] else []
        for url in urls:
            try:
                await self._threads.work(credentials.check_host, url, self._sources.destinations,
                                         self._sources.allow_loopback)  # fmt: skip
            except ApplianceError as e:
                raise Invalid(e.message, {"config": [e.message]}) from None
        return {"endpoint": endpoint, "region": region, "bucket": values["bucket"], "prefix": values["prefix"],
                "path_style": values["path_style"], "verify_tls": values["verify_tls"], "auth": "oauth2",
                "oauth": settings}  # fmt: skip

    def _oauth(self, given: dict | None, old: dict, problems: dict[str, list[str]]) -> dict:
        """config.oauth of an S3 source that signs in with OpenID Connect, as stored (secrets
        sealed); its problems go to problems["oauth"]. A field left out keeps its value, and
        the saved sign-in is kept while the provider and client stay the same."""
        if "oauth" in problems:  # not an object
            return {}
        before = old.get("oauth") or {} if old.get("auth") == "oauth2" else {}
        given = given or {}
        kept = {name: before[name] for name in OAuthSettings.model_fields if name in before}
        values, found = read(OAuthSettings, {**defaults(OAuthSettings), **kept, **given}, creating=True)
        for name, required in (("authorize_url", True), ("token_url", True), ("sts_endpoint", False)):
            if name in values and (values[name] or required):
                if problem := url_problem(values[name], self._sources.allow_loopback):
                    found.setdefault(name, []).append(f"config.oauth.{name} {problem}")
        if found:
            problems.setdefault("oauth", []).extend(in_order(OAuthSettings, found))
        stored = {name: values.get(name, "") for name in OAUTH_STORED}
        if "client_secret" in given:
            if values.get("client_secret"):
                stored["client_secret_encrypted"] = self._sources.seal(values["client_secret"])
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
