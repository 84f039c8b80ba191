"""Web sessions: short-lived access tokens and single-use refresh tokens (HS256 JWTs).

Every token carries exp, iat, jti, token_type and user_id. The decoder accepts
HS256 only. A refresh token works once (it is rotated); a used, revoked or
expired one is refused. Tokens issued before the profile's last password change,
or for a profile now deleted, disabled, expired or without web access, are refused
too (every request reads the profile again, so an admin's change holds at once).

Download links: a signed `access` value (core/signed.py, as share links use) that
lets a plain browser request download one file of one profile for a minute, so the
browser can stream it to disk without the Bearer header.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta

import jwt

from ..errors import AuthenticationFailed, PermissionDenied
from ..models import from_iso, to_iso
from ..store import Store, queries
from ..store import sessions as session_queries
from . import signed
from .auth import Account, address_allowed

ACCESS_LIFETIME = timedelta(minutes=15)
DOWNLOAD_LINK_SECONDS = 60
DOWNLOAD_PURPOSE = "file-download"
DOWNLOAD_LINK_INVALID = "This download link is not valid for this file, or it has expired: download it again."
REFRESH_LIFETIME = timedelta(days=7)
ALGORITHM = "HS256"


class TokenInvalid(AuthenticationFailed):
    """A bad, expired, wrong-type or revoked token (HTTP answers 401 token_not_valid)."""

    def __init__(self, message: str, token_type: str = "access"):
        super().__init__(message)
        self.token_type = token_type


class Sessions:
    def __init__(self, store: Store, secret: bytes, clock):
        self._store = store
        self._secret = secret
        self._clock = clock

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self._clock.seconds(), UTC)

    def _encode(self, profile_id: int, token_type: str, lifetime: timedelta) -> tuple[str, str, datetime]:
        now = self._now()
        jti = secrets.token_hex(16)
        claims = {
            "token_type": token_type,
            "user_id": profile_id,
            "jti": jti,
            "iat": int(now.timestamp()),
            "exp": int((now + lifetime).timestamp()),
        }
        return jwt.encode(claims, self._secret, algorithm=ALGORITHM), jti, now + lifetime

    def _decode(self, token: str, token_type: str) -> dict:
        try:
            claims = jwt.decode(
                token,
                self._secret,
                algorithms=[ALGORITHM],
                options={"require": ["exp", "iat", "jti", "token_type", "user_id"]},
                leeway=0,
            )
        except jwt.ExpiredSignatureError:
            raise TokenInvalid("Token is invalid or expired", token_type) from None
        except jwt.PyJWTError:
            raise TokenInvalid("Token is invalid or expired", token_type) from None
        if claims["token_type"] != token_type:
            raise TokenInvalid("Token has wrong type", token_type)
        if claims["iat"] > self._clock.seconds() + 60:
            raise TokenInvalid("Token is invalid or expired", token_type)
        return claims

    async def issue(self, profile_id: int) -> dict[str, str]:
        access, _, _ = self._encode(profile_id, "access", ACCESS_LIFETIME)
        refresh, jti, expires = self._encode(profile_id, "refresh", REFRESH_LIFETIME)
        await self._store.run(session_queries.remember_refresh, jti, profile_id, to_iso(expires))
        return {"access": access, "refresh": refresh}

    async def refresh(self, token: str, address: str | None = None) -> dict[str, str]:
        """A new pair for a refresh token, which is spent; refused from an `address`
        the profile's IP allow-list does not (or no longer) allow."""
        claims = self._decode(token, "refresh")
        profile_id = await self._store.run(session_queries.use_refresh, claims["jti"], to_iso(self._now()))
        if profile_id is None or profile_id != claims["user_id"]:
            raise TokenInvalid("Token is blacklisted", "refresh")
        await self._account(claims, "refresh", address)
        return await self.issue(profile_id)

    async def revoke(self, token: str) -> None:
        claims = self._decode(token, "refresh")
        await self._store.run(session_queries.revoke_refresh, claims["jti"])

    async def account(self, token: str, address: str | None = None) -> Account:
        """The account an access token stands for (organisation refusals are the caller's),
        used from `address`: refused where the profile's IP allow-list does not (or no
        longer) allow it, as a new sign-in would be."""
        return await self._account(self._decode(token, "access"), "access", address)

    def download_access(self, account: Account, path: str) -> tuple[str, int]:
        """A value that downloads `path` (a normalised path of the profile's) as that
        profile for DOWNLOAD_LINK_SECONDS, and when it ends (seconds since the epoch)."""
        until = int(self._clock.seconds()) + DOWNLOAD_LINK_SECONDS
        return signed.sign(self._secret, DOWNLOAD_PURPOSE, account.profile.id, until, path), until

    async def download_account(self, access: str, path: str, signed_in: Account | None = None) -> Account:
        """The account a download link stands for, if it was made for this `path` and is
        still valid; `signed_in`: the caller's own account when the request carries one
        too, which must be the link's."""
        valid = signed.verify(self._secret, access, DOWNLOAD_PURPOSE, self._clock.seconds(), path)
        if valid is None:
            raise AuthenticationFailed(DOWNLOAD_LINK_INVALID)
        subject, until = valid
        if signed_in is not None and str(signed_in.profile.id) != subject:
            raise PermissionDenied("This download link was made for another user.")
        claims = {"user_id": int(subject), "iat": until - DOWNLOAD_LINK_SECONDS}
        try:
            return await self._account(claims, "access")  # disabled, or the password changed since: refused
        except TokenInvalid:
            raise AuthenticationFailed(DOWNLOAD_LINK_INVALID) from None

    async def _account(self, claims: dict, token_type: str, address: str | None = None) -> Account:
        profile = await self._store.run(queries.get_profile_by_id, claims["user_id"])
        if profile is None or not profile.active:
            raise TokenInvalid("User not found or inactive", token_type)
        expires = from_iso(profile.expires_at)
        if expires is not None and expires <= self._now():
            raise TokenInvalid("User account has expired", token_type)
        if "web" not in profile.protocols:
            raise TokenInvalid("Web access is not enabled for this account", token_type)
        if address is not None and not address_allowed(address, profile.ip_allow):
            raise TokenInvalid(f"Your account may not be used from {address}", token_type)
        changed = await self._store.run(queries.password_changed_at, profile.id)
        if changed and from_iso(changed).timestamp() > claims["iat"] + 1:
            raise TokenInvalid("Token is invalid or expired", token_type)  # the password changed since
        organisation = await self._store.run(queries.get_organisation, profile.org_id)
        source = None
        if profile.source_id is not None:
            source = await self._store.run(queries.get_source, profile.org_id, profile.source_id)
        return Account(profile, organisation, source)
