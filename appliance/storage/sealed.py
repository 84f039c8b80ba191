"""The secrets in a remote source's config (passwords, keys), encrypted at rest with
the data dir's key: one place seals them and one opens them, with the one message
when they can no longer be opened."""

from __future__ import annotations

from ..errors import Unavailable


class SealedSecrets:
    def __init__(self, secrets):
        self._secrets = secrets  # the data dir's SecretBox (encrypt/decrypt)

    def seal(self, secret: str) -> str:
        """A secret as stored in a source's config."""
        return self._secrets.encrypt(secret)

    def open(self, sealed: str, what: str = "credentials of this source") -> str:
        """The secret; refused clearly when the data dir's key changed since it was sealed."""
        try:
            return self._secrets.decrypt(sealed)
        except Exception:  # noqa: BLE001 - a replaced secrets.key
            raise Unavailable(
                f"The stored {what} cannot be decrypted (was the data dir's secrets.key replaced?): "
                "an administrator must enter it again."
            ) from None

    def open_field(self, config: dict, field: str, what: str) -> str:
        """`config[field]` opened, or "" when the config has none."""
        return self.open(config[field], what) if config.get(field) else ""
