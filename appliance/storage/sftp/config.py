"""A remote SFTP source's config as an admin gives it, checked and made ready to store:
the host allowed, the connection, the host key, the sign-in and the folder are tried
before it is saved; the host key's fingerprint is pinned then when not given; the
password and private key are sealed (encrypted at rest) and never shown."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field as Bounds
from twisted.conch.ssh import keys

from ...declarations import MAX_STRING, Declaration, Hint, defaults, in_order, read, rule, shown
from ...errors import ApplianceError, Invalid, Unreached
from ...text import control_problem
from .client import Remote, RemoteProblem, RemoteSources, normalise_fingerprint


def _printable(label: str, *, most: int | None = None, hint: str, required: bool = False):
    """A rule of a text field: no control character (`required`: not blank; `most`: at most so
    many characters, else `hint`)."""

    def check(value: str) -> str:
        if (required and not value.strip()) or (most is not None and len(value) > most):
            raise Invalid(hint)
        if problem := control_problem(value, label):
            raise Invalid(problem)
        return value

    return rule(check)


def _private_key(value: str) -> str:
    """A private key in OpenSSH or PEM format, as stored ("" for none)."""
    if not value.strip():
        return ""
    try:
        if keys.Key.fromString(value.strip().encode()).isPublic():
            raise keys.BadKeyError("public")
    except (keys.BadKeyError, keys.EncryptedKeyError, ValueError):
        raise Invalid(
            "config.private_key is not a private key in OpenSSH or PEM format "
            "(keys protected by a passphrase are not supported)."
        ) from None
    return value.strip() + "\n"


def _fingerprint(value: str | None) -> str | None:
    try:
        return normalise_fingerprint(value) if value else value
    except Invalid as e:
        raise Invalid(e.message) from None  # the whole sentence, not the field's short form


HOST_HINT = "Give the remote server's host name or address as config.host."
USERNAME_HINT = "Give the user to sign in as on the remote server as config.username."
PATH_HINT = "config.path must be a folder on the remote server (empty: the user's login folder)."
FINGERPRINT_HINT = "Give the host key's SHA256 fingerprint as ssh-keygen -lf shows it (SHA256:...)."


class SftpSettings(Declaration):
    """What an admin gives of a remote SFTP source's config (a field left out keeps its value)."""

    host: Annotated[
        str, Bounds(max_length=MAX_STRING), Hint(HOST_HINT), _printable("config.host", hint=HOST_HINT, required=True)
    ] = ""  # fmt: skip
    port: Annotated[int, Bounds(ge=1, le=65535), Hint("config.port must be a port number (1-65535).")] = 22
    username: Annotated[
        str, Bounds(max_length=MAX_STRING), Hint(USERNAME_HINT),
        _printable("config.username", hint=USERNAME_HINT, required=True),
    ] = ""  # fmt: skip
    path: Annotated[
        str, Bounds(max_length=MAX_STRING), Hint(PATH_HINT), _printable("config.path", most=4096, hint=PATH_HINT)
    ] = ""  # fmt: skip
    password: Annotated[
        str, Bounds(max_length=MAX_STRING), Hint("config.password must be text."),
        _printable("config.password", most=1000, hint="config.password must be text."),
    ] = ""  # fmt: skip
    private_key: Annotated[
        str, Bounds(max_length=65_536), Hint("config.private_key must be text."), rule(_private_key)
    ] = ""  # fmt: skip
    host_key_fingerprint: Annotated[
        str | None, Bounds(max_length=MAX_STRING), Hint(FINGERPRINT_HINT), rule(_fingerprint)
    ] = None  # fmt: skip


class SftpSettingsReply(shown(SftpSettings, leave=("password", "private_key"))):
    """An SFTP source's config as the API shows it: the secrets only as given or not."""

    host_key_fingerprint: str  # pinned when the source is saved
    has_password: bool
    has_private_key: bool


class SftpConfig:
    """The config check of sftp sources (registry.SourceConfig)."""

    def __init__(self, sources: RemoteSources):
        self._sources = sources

    async def clean(self, config: dict, old: dict) -> dict:
        """The stored config, after a successful connection to the server; Invalid with
        the problems under "config" otherwise. `old`: the source's config before (a field
        not given keeps its value, a secret stays sealed), {} for a new source."""
        kept = {name: old[name] for name in ("host", "port", "username", "path") if name in old}
        values, problems = read(SftpSettings, {**defaults(SftpSettings), **kept, **config}, creating=True)
        stored = {k: old[k] for k in ("password_encrypted", "private_key_encrypted") if old.get(k)}
        password = key = ""
        sources = self._sources
        if "password" in config:
            password = values.get("password", "")
            stored.pop("password_encrypted", None)
        elif stored.get("password_encrypted"):
            password = sources.open(stored["password_encrypted"])
        if "private_key" in config:
            key = values.get("private_key", "")
            stored.pop("private_key_encrypted", None)
        elif stored.get("private_key_encrypted"):
            key = sources.open(stored["private_key_encrypted"])
        if not password and not key and not problems.keys() - {"host_key_fingerprint"}:
            problems["password"] = ["Give the remote account's config.password or config.private_key."]
        host, port, path = values.get("host", ""), values.get("port", 22), values.get("path", "")
        fingerprint = values.get("host_key_fingerprint")
        if fingerprint is None and (host, port) == (old.get("host"), old.get("port")):
            fingerprint = old.get("host_key_fingerprint", "")  # unchanged server: keep the pinned key
        errors = in_order(SftpSettings, problems)
        if errors:
            raise Invalid(errors[0], {"config": errors})
        username = values["username"]
        remote = Remote(
            host.strip(), port, username, password, key, fingerprint or "", path.strip(), sources.allow_loopback
        )
        try:
            seen = await sources.check(remote)
        except RemoteProblem as e:
            raise (Unreached if e.unreached else Invalid)(e.message, {"config": [e.message]}) from None
        except ApplianceError as e:  # a host refused by the safety check, or one that does not resolve
            raise Invalid(e.message, {"config": [e.message]}) from None
        stored.update(host=remote.host, port=port, username=username, path=remote.path, host_key_fingerprint=seen)
        if password:
            stored["password_encrypted"] = sources.seal(password)
        if key:
            stored["private_key_encrypted"] = sources.seal(key)
        return stored
