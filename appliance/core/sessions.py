"""Web sessions: short-lived access tokens and single-use refresh tokens (HS256 JWTs).

Every token carries exp, iat, jti, token_type, user_id and sid, the session: the
sign-in it comes from, kept through refreshes. The decoder accepts HS256 only. A
refresh token works once (it is rotated); a used, revoked or expired one is
refused. Signing out ends the session: its refresh tokens are revoked and its
access tokens refused at once (a set of ended sessions kept in memory, backed by
the database so it survives a restart for as long as their access tokens live). Tokens issued before the profile's last password change,
or for a profile now deleted, are refused too; every request reads the profile again
and asks the access policy (core/access.py), so an admin's change holds at once.

Download links: a signed `access` value (core/signed.py, as share links use) that
lets a plain browser request download one file of one profile for a minute, so the
browser can stream it to disk without the Bearer header.
"""

from __future__ import annotations

import dataclasses
import secrets
from datetime import UTC, datetime, timedelta

import jwt

from ..errors import AuthenticationFailed, PermissionDenied
from ..models import from_iso, to_iso
from ..store import Store, queries
from ..store import sessions as session_queries
from . import signed
from .access import AccessPolicy, Account, Refusal

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


class TokenRefused(TokenInvalid):
    """The access policy refuses the profile of a valid token now: the refusal's
    message and code (HTTP: an organisation's refusal is a 403, a profile's a 401)."""

    def __init__(self, refusal: Refusal, token_type: str = "access"):
        super().__init__(refusal.message, token_type)
        self.refusal = refusal
        self.code = refusal.code


class Sessions:
    def __init__(self, store: Store, secret: bytes, clock, policy: AccessPolicy | None = None, token_usable=None):
        self._store = store
        self._secret = secret
        self._clock = clock
        self._policy = policy or AccessPolicy(store, clock)
        # (account, token id) -> whether that API token still signs in (ApiTokens.still_usable)
        self._token_usable = token_usable
        self._ended: dict[str, float] | None = None  # session id -> when its last access token expires

    async def _ended_sessions(self) -> dict[str, float]:
        if self._ended is None:
            rows = await self._store.run(session_queries.ended_sessions, to_iso(self._now()))
            if self._ended is None:  # another request loaded it meanwhile
                self._ended = {sid: from_iso(until).timestamp() for sid, until in rows.items()}
        return self._ended

    async def _refuse_ended(self, claims: dict, token_type: str) -> None:
        sid = claims.get("sid")
        if not isinstance(sid, str) or not sid:
            raise TokenInvalid("Token is invalid or expired", token_type)  # from before sessions had ids
        if sid in await self._ended_sessions():
            raise TokenInvalid("This session was signed out: sign in again", token_type)

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self._clock.seconds(), UTC)

    def _encode(
        self, profile_id: int, token_type: str, lifetime: timedelta, session_id: str
    ) -> tuple[str, str, datetime]:
        now = self._now()
        jti = secrets.token_hex(16)
        claims = {
            "token_type": token_type,
            "user_id": profile_id,
            "sid": session_id,
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

    async def issue(self, profile_id: int, session_id: str | None = None) -> dict[str, str]:
        """An access and a refresh token of `session_id` (None: a new session, a sign-in)."""
        session_id = session_id or secrets.token_hex(16)
        access, _, _ = self._encode(profile_id, "access", ACCESS_LIFETIME, session_id)
        refresh, jti, expires = self._encode(profile_id, "refresh", REFRESH_LIFETIME, session_id)
        await self._store.run(session_queries.remember_refresh, jti, profile_id, to_iso(expires), session_id)
        return {"access": access, "refresh": refresh}

    async def refresh(self, token: str, address: str | None = None, encrypted: bool = True) -> dict[str, str]:
        """A new pair for a refresh token, which is spent; refused when the access policy
        refuses the profile now (from `address`, over TLS or not)."""
        claims = self._decode(token, "refresh")
        profile_id = await self._store.run(session_queries.use_refresh, claims["jti"], to_iso(self._now()))
        if profile_id is None or profile_id != claims["user_id"]:
            raise TokenInvalid("Token is blacklisted", "refresh")
        await self._account(claims, "refresh", address, encrypted)
        session_id = claims.get("sid") if isinstance(claims.get("sid"), str) else None
        if session_id and session_id in await self._ended_sessions():
            raise TokenInvalid("This session was signed out: sign in again", "refresh")
        return await self.issue(profile_id, session_id)

    async def end(self, refresh: str | None = None, access: str | None = None) -> None:
        """Sign out: end the session of a refresh token (refused if not valid) and of an
        access token (ignored if not valid: it does not work anyway). Their other tokens,
        earlier or later in the same session, stop working at once too."""
        sessions = set()
        if refresh is not None:
            claims = self._decode(refresh, "refresh")
            await self._store.run(session_queries.revoke_refresh, claims["jti"])
            sessions.add(claims.get("sid"))
        if access is not None:
            try:
                sessions.add(self._decode(access, "access").get("sid"))
            except TokenInvalid:
                pass
        ended = await self._ended_sessions()
        now = self._clock.seconds()
        until = now + ACCESS_LIFETIME.total_seconds() + 60  # the last access token's life, and iat's leeway
        for session_id in sessions:
            if isinstance(session_id, str) and session_id:
                ended[session_id] = until
                await self._store.run(
                    session_queries.end_session, session_id, to_iso(datetime.fromtimestamp(until, UTC)),
                    to_iso(self._now()),
                )  # fmt: skip
        for session_id in [s for s, t in ended.items() if t < now]:
            del ended[session_id]

    async def account(self, token: str, address: str | None = None, encrypted: bool = True) -> Account:
        """The account an access token stands for, used from `address`: refused
        (AccessRefused) where a new sign-in would be, and once its session was signed out."""
        claims = self._decode(token, "access")
        await self._refuse_ended(claims, "access")
        account = await self._account(claims, "access", address, encrypted)
        return dataclasses.replace(account, session_id=claims["sid"])

    def download_access(self, account: Account, path: str) -> tuple[str, int]:
        """A value that downloads `path` (a normalised path of the profile's) as that
        profile for DOWNLOAD_LINK_SECONDS, and when it ends (seconds since the epoch); made
        in a web session, it ends with the session; made with an API token, it ends with the
        token (revoked or expired)."""
        until = int(self._clock.seconds()) + DOWNLOAD_LINK_SECONDS
        if account.session_id:
            subject = f"{account.profile.id}-{account.session_id}"
        elif account.token_id is not None:
            subject = f"{account.profile.id}-t{account.token_id}"
        else:
            subject = str(account.profile.id)
        return signed.sign(self._secret, DOWNLOAD_PURPOSE, subject, until, path), until

    async def download_account(
        self,
        access: str,
        path: str,
        signed_in: Account | None = None,
        address: str | None = None,
        encrypted: bool = True,
    ) -> Account:
        """The account a download link stands for, if it was made for this `path` and is
        still valid; `signed_in`: the caller's own account when the request carries one
        too, which must be the link's. Checked at use as its maker would be, from
        `address` (over TLS or not: `encrypted`): the access policy (the profile's IP
        allow-list, its organisation, its expiry), its web session not signed out, its
        API token not revoked or expired."""
        valid = signed.verify(self._secret, access, DOWNLOAD_PURPOSE, self._clock.seconds(), path)
        if valid is None:
            raise AuthenticationFailed(DOWNLOAD_LINK_INVALID)
        subject, until = valid
        profile_id, _, principal = subject.partition("-")
        if signed_in is not None and str(signed_in.profile.id) != profile_id:
            raise PermissionDenied("This download link was made for another user.")
        token_id = int(principal[1:]) if principal.startswith("t") and principal[1:].isdigit() else None
        session_id = principal if principal and token_id is None else None
        if session_id and session_id in await self._ended_sessions():
            raise AuthenticationFailed(DOWNLOAD_LINK_INVALID)  # its session was signed out
        claims = {"user_id": int(profile_id), "iat": until - DOWNLOAD_LINK_SECONDS}
        try:
            account = await self._account(claims, "access", address, encrypted)
        except TokenRefused:  # the policy's refusal: its own reason
            raise
        except TokenInvalid:  # the password changed since
            raise AuthenticationFailed(DOWNLOAD_LINK_INVALID) from None
        if token_id is not None and not (self._token_usable and await self._token_usable(account, token_id)):
            raise AuthenticationFailed(DOWNLOAD_LINK_INVALID)  # its API token was revoked or expired
        return account

    async def _account(
        self, claims: dict, token_type: str, address: str | None = None, encrypted: bool = True
    ) -> Account:
        account = await self._policy.load(claims["user_id"])
        if account is None:
            raise TokenInvalid("User not found", token_type)
        refused = self._policy.check(account, protocol="web", address=address, encrypted=encrypted)
        if refused is not None:
            raise TokenRefused(refused, token_type)
        changed = await self._store.run(queries.password_changed_at, account.profile.id)
        if changed and from_iso(changed).timestamp() > claims["iat"] + 1:
            raise TokenInvalid("Token is invalid or expired", token_type)  # the password changed since
        return dataclasses.replace(account, protocol="web")
