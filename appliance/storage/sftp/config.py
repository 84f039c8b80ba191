"""A remote SFTP source's config as an admin gives it, checked and made ready to store:
the host allowed, the connection, the host key, the sign-in and the folder are tried
before it is saved; the host key's fingerprint is pinned then when not given; the
password and private key are sealed (encrypted at rest) and never shown."""

from __future__ import annotations

from twisted.conch.ssh import keys

from ...errors import ApplianceError, Invalid, Unreached
from ...text import control_problem
from .client import Remote, RemoteProblem, RemoteSources, normalise_fingerprint


class SftpConfig:
    """The config check of sftp sources (registry.SourceConfig)."""

    def __init__(self, sources: RemoteSources):
        self._sources = sources

    async def clean(self, config: dict, old: dict) -> dict:
        """The stored config, after a successful connection to the server; Invalid with
        the problems under "config" otherwise. `old`: the source's config before (a field
        not given keeps its value, a secret stays sealed), {} for a new source."""
        errors: list[str] = []
        host = config.get("host", old.get("host", ""))
        if not isinstance(host, str) or not host.strip():
            errors.append("Give the remote server's host name or address as config.host.")
        elif problem := control_problem(host, "config.host"):
            errors.append(problem)
        port = config.get("port", old.get("port", 22))
        if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
            errors.append("config.port must be a port number (1-65535).")
        username = config.get("username", old.get("username", ""))
        if not isinstance(username, str) or not username.strip():
            errors.append("Give the user to sign in as on the remote server as config.username.")
        elif problem := control_problem(username, "config.username"):
            errors.append(problem)
        path = config.get("path", old.get("path", ""))
        if not isinstance(path, str) or len(path) > 4096:
            errors.append("config.path must be a folder on the remote server (empty: the user's login folder).")
        elif problem := control_problem(path, "config.path"):
            errors.append(problem)
        stored = {k: old[k] for k in ("password_encrypted", "private_key_encrypted") if old.get(k)}
        password = key = ""
        sources = self._sources
        if "password" in config:
            if not isinstance(config["password"], str) or len(config["password"]) > 1000:
                errors.append("config.password must be text.")
            elif problem := control_problem(config["password"], "config.password"):
                errors.append(problem)
            else:
                password = config["password"]
                stored.pop("password_encrypted", None)
        elif stored.get("password_encrypted"):
            password = sources.open(stored["password_encrypted"])
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
            key = sources.open(stored["private_key_encrypted"])
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
        remote = Remote(host.strip(), port, username, password, key, fingerprint, path.strip(), sources.allow_loopback)
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
