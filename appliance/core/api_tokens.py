"""API tokens for automation: `apl_<prefix>_<secret>`, shown once, stored as a
SHA-256 of the secret (a high-entropy secret needs no slow hash), with scopes,
an expiry and a last-used time; a token acts as the admin who made it."""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import secrets
from datetime import UTC, datetime

from ..errors import Invalid, NotFound, PermissionDenied
from ..models import from_iso, to_iso
from ..store import Store
from ..store import api_tokens as token_queries
from . import validation
from .access import AccessPolicy, Account
from .audit import AuditLog
from .authority import require_authority_over_owner
from .sessions import TokenInvalid, TokenRefused

SCOPES = ("files", "admin")
PREFIX = "apl_"


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class ApiTokens:
    def __init__(self, store: Store, clock, audit: AuditLog, policy: AccessPolicy | None = None):
        self._store = store
        self._clock = clock
        self._audit = audit
        self._policy = policy or AccessPolicy(store, clock)

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self._clock.seconds(), UTC)

    async def create(self, account: Account, body: dict, address: str) -> dict:
        """Validate, make and audit a new token: the row, with the whole token (the only time it is shown)."""
        errors: dict[str, list[str]] = {}
        name = body.get("name")
        if not isinstance(name, str) or not name.strip():
            errors["name"] = ["Name the token (what uses it)."]
        elif len(name.strip()) > 200:
            errors["name"] = ["Use at most 200 characters."]
        elif validation.hidden_characters(name):
            errors["name"] = [validation.HIDDEN_HINT]
        scopes = body.get("scopes", list(SCOPES))
        if not isinstance(scopes, list) or not scopes or any(s not in SCOPES for s in scopes):
            errors["scopes"] = [f"Choose from: {', '.join(SCOPES)}."]
        expires = body.get("expires_at")
        expires_at = None
        if expires:
            try:
                moment = validation.moment(expires, "expires_at")
                if moment <= self._now():
                    errors["expires_at"] = ["Choose a time in the future."]
                expires_at = to_iso(moment)
            except Invalid as e:
                errors.update(e.fields)
        if errors:
            raise Invalid("Some fields are not valid.", errors)
        prefix = secrets.token_hex(4)
        secret = secrets.token_urlsafe(32)
        token_id = await self._store.run(
            token_queries.insert_token,
            {
                "org_id": account.organisation.id,
                "name": name.strip(),
                "prefix": prefix,
                "secret_hash": _hash(secret),
                "scopes": [s for s in SCOPES if s in scopes],
                "created_by": account.profile.id,
                "expires_at": expires_at,
                "created_at": to_iso(self._now()),
            },
        )
        shown = await self._store.run(token_queries.get_token, account.organisation.id, token_id)
        await self._told(
            account, address, f"{account.profile.username} created the API token {shown['name']} ({prefix})"
        )
        return dict(shown, token=f"{PREFIX}{prefix}_{secret}")

    async def list(self, account: Account, search: str, limit: int, offset: int) -> tuple[int, list[dict]]:
        """The organisation's tokens; `search` finds them by name (any part) or by prefix
        (its start: `abcd`, `apl_abcd`, or a whole token pasted, whose secret is ignored)."""
        search = search.strip()
        prefix = search
        if search.startswith(PREFIX):
            prefix = search[len(PREFIX) :].split("_", 1)[0]
        return await self._store.run(token_queries.list_tokens, account.organisation.id, limit, offset, search, prefix)

    async def get(self, account: Account, token_id: int) -> dict:
        token = await self._store.run(token_queries.get_token, account.organisation.id, token_id)
        if token is None:
            raise NotFound("No such token.")
        return token

    async def revoke(self, account: Account, token_id: int, address: str) -> None:
        """Revoke one of the organisation's tokens (it signs nothing in from now on), audited:
        a change of its owner's, refused to whom may not change that profile."""
        token = await self.get(account, token_id)
        await require_authority_over_owner(self._store, account, token["created_by"])
        await self._store.run(token_queries.revoke_token, account.organisation.id, token_id)
        await self._told(
            account, address, f"{account.profile.username} revoked the API token {token['name']} ({token['prefix']})"
        )

    async def _told(self, account: Account, address: str, message: str) -> None:
        await self._audit.acted(account, "token", message, address=address)

    @staticmethod
    def looks_like(token: str) -> bool:
        return token.startswith(PREFIX)

    async def account(self, token: str, scope: str | None, address: str, encrypted: bool = True) -> Account:
        """The account a token acts for, if it is valid and has the scope, and the access
        policy lets its owner act now over the API (the web protocol) from `address`."""
        try:
            prefix, secret = token[len(PREFIX) :].split("_", 1)
        except ValueError:
            raise TokenInvalid("Token is invalid or expired") from None
        row = await self._store.run(token_queries.token_by_prefix, prefix)
        if row is None or not hmac.compare_digest(row["secret_hash"], _hash(secret)) or not self._usable(row):
            raise TokenInvalid("Token is invalid or expired")
        if scope is not None and scope not in row["scopes"]:
            raise PermissionDenied(f"This API token lacks the '{scope}' scope.")
        account = await self._policy.load(row["created_by"] or 0, row["org_id"])
        if account is None:
            raise TokenInvalid("The token's owner is gone")
        refused = self._policy.check(account, protocol="web", address=address, encrypted=encrypted)
        if refused is not None:
            raise TokenRefused(refused)
        await self._store.run(token_queries.touch_token, row["id"], to_iso(self._now()))
        return dataclasses.replace(account, token_id=row["id"], protocol="api")

    def _usable(self, row: dict) -> bool:
        """Whether a token signs anything in now: not revoked, not expired."""
        return not row["revoked"] and not (row["expires_at"] and from_iso(row["expires_at"]) <= self._now())

    async def still_usable(self, account: Account, token_id: int) -> bool:
        """Whether the token `token_id` of the account's organisation, made by its
        profile, still signs in (what a download link made through it still needs)."""
        row = await self._store.run(token_queries.get_token, account.organisation.id, token_id)
        return row is not None and row["created_by"] == account.profile.id and self._usable(row)
