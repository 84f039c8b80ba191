"""The one sign-in every protocol goes through.

`admit` takes a new connection (bans, connection limits) and returns its Ticket, or
refuses it with the text to send before hanging up. `sign_in` checks the password
(bcrypt, in a thread) or the SSH key, then the access policy (core/access.py), then
opens the live session (SFTP/FTP: the profile's files; the web: its tokens), marks
the connection's ticket signed in, and writes exactly ONE audit row with the final
outcome: "signed in" only once nothing can refuse any more.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import ApplianceError, AuthenticationFailed, Unavailable
from ..models import LogEntry, Profile, to_iso
from ..store import Store, queries
from .access import ALWAYS_ENCRYPTED, PLAIN_TEXT_FAILED, AccessPolicy, AccessRefused, Account, tls_refusal
from .audit import PROTOCOL_NAMES, AuditLog, clean
from .auth import BAD_CREDENTIALS, INVALID_CREDENTIALS, MAX_USERNAME, AuthService, key_blob, user_key, user_target
from .connections import ConnectionLimits, Ticket
from .passwords import Passwords, profile_scope

RESTARTING = "The appliance is restarting; try again in a minute."
GONE_DURING_SIGN_IN = "The connection closed during sign-in."
FILES_REFUSED = "files_refused"  # the code of a sign-in refused because the files could not be opened
UNAVAILABLE = "unavailable"  # the code of a sign-in refused while the appliance restarts


@dataclass(frozen=True)
class LiveSession:
    """A signed-in profile's session: its files (SFTP, FTP) or its web tokens."""

    account: Account
    files: Any = None  # core.files.FileSession
    tokens: dict[str, str] | None = None


class SignIn:
    def __init__(
        self,
        store: Store,
        auth: AuthService,
        policy: AccessPolicy,
        passwords: Passwords,
        files,
        connections: ConnectionLimits,
        sessions,
        audit: AuditLog,
    ):
        self._store = store
        self._auth = auth
        self._policy = policy
        self._passwords = passwords
        self._files = files
        self._connections = connections
        self._sessions = sessions
        self._audit = audit

    def admit(
        self,
        address: str,
        protocol: str,
        *,
        drop: Callable[[], None] | None = None,
        end: Callable[[str], None] | None = None,
    ) -> Ticket:
        """A new connection from `address`: its Ticket, or ApplianceError with the text to
        send before hanging up (a banned address costs no password check; then the
        connection limits, core/connections.py)."""
        self._auth.refuse_if_banned(address)
        return self._connections.open(address, protocol, drop=drop, end=end)

    async def accepts_key(self, username: str, blob: bytes) -> bool:
        """Whether `blob` is one of the profile's keys (SSH's "may I use this key?")."""
        return await self._auth.accepts_key(username, blob)

    async def sign_in(
        self,
        username: str,
        *,
        protocol: str,
        address: str,
        password: str | None = None,
        public_key: bytes | None = None,
        encrypted: bool = False,
        ticket: Ticket | None = None,
    ) -> LiveSession:
        """The live session, or AuthenticationFailed (AccessRefused for the policy's
        reasons) / Unavailable with the message to show; audited once, either way.

        For `public_key` the caller has already verified the signature, proving the
        client holds the private key. `encrypted`: the credentials came over TLS (FTP
        after AUTH TLS, HTTPS); SFTP always is. `ticket`: the connection's, marked
        signed in with the files session.
        """
        username = username.strip()
        if self._auth.closing:
            raise AuthenticationFailed(RESTARTING, code=UNAVAILABLE)
        key = user_key(username)
        self._auth.refuse_if_banned(address, key)  # the address, or this address guessing this name
        profile = None
        if 0 < len(username) <= MAX_USERNAME and "\x00" not in username:
            profile = await self._store.run(queries.profile_by_username, username)
        account = await self._policy.account(profile) if profile is not None else None
        # over a plain-text channel every failure below answers alike (PLAIN_TEXT_FAILED)
        plain = not encrypted and protocol not in ALWAYS_ENCRYPTED
        failed = PLAIN_TEXT_FAILED.get(protocol, BAD_CREDENTIALS) if plain else BAD_CREDENTIALS
        if account is not None and account.organisation is not None:
            # Refused before the password is checked, so a plain-text channel never tells
            # whether a password is right; answered as a wrong password is, and counted as
            # one, so it tells neither that the name exists nor that it requires TLS (the
            # audit row says why, for its admins).
            refused = tls_refusal(profile, account.organisation, protocol, encrypted)
            if refused is not None:
                await self._failed(profile, username, protocol, address, "plain-text sign-in refused (TLS required)")
                await self._auth.wrong_secret(user_target(key, profile), address)
                raise AuthenticationFailed(failed, code=INVALID_CREDENTIALS)
        method = "key" if public_key is not None else "password"
        if not await self._proven(profile, password, public_key) or account is None or account.organisation is None:
            await self._failed(profile, username, protocol, address, f"wrong {method}")
            await self._auth.wrong_secret(user_target(key, profile), address)
            raise AuthenticationFailed(failed, code=INVALID_CREDENTIALS)

        refused = self._policy.check(account, protocol=protocol, address=address)
        if refused is not None:
            await self._failed(profile, username, protocol, address, refused.message)
            raise AccessRefused(refused)
        self._auth.succeeded(key, address)
        try:
            live = await self._open(account, protocol, address)
        except ApplianceError as e:
            await self._failed(profile, username, protocol, address, e.message)
            if isinstance(e, (Unavailable, AuthenticationFailed)):
                raise
            raise AuthenticationFailed(e.message, code=FILES_REFUSED) from None
        if ticket is not None:
            if ticket.closed:
                await self._failed(profile, username, protocol, address, GONE_DURING_SIGN_IN)
                raise AuthenticationFailed(GONE_DURING_SIGN_IN)
            ticket.authenticated(live.files, encrypted=encrypted or protocol in ALWAYS_ENCRYPTED)
        await self._signed_in(account, protocol, address, method)
        return live

    async def first_sign_in(self, profile_id: int, *, address: str) -> LiveSession:
        """The web session first-run setup opens for the admin it has just created (who
        chose the password a moment ago): counted and audited as every other sign-in."""
        account = await self._policy.load(profile_id)
        live = await self._open(account, "web", address)
        await self._signed_in(account, "web", address, "setup")
        return live

    async def _proven(self, profile: Profile | None, password: str | None, public_key: bytes | None) -> bool:
        if public_key is not None:
            return profile is not None and any(key_blob(k) == public_key for k in profile.ssh_keys)
        # a success is remembered (keyed hash only) so a script's next login skips bcrypt;
        # every check after it still runs on every login
        return await self._passwords.verify(
            password or "",
            profile.password_hash if profile else None,
            scope=profile_scope(profile.id) if profile else None,
        )

    async def _open(self, account: Account, protocol: str, address: str) -> LiveSession:
        """The session the sign-in is for: web tokens, or the profile's files."""
        if protocol == "web":
            return LiveSession(account, tokens=await self._sessions.issue(account.profile.id))
        return LiveSession(account, files=await self._files.session(account, protocol, address))

    async def _signed_in(self, account: Account, protocol: str, address: str, method: str) -> None:
        """The one row of a sign-in every check let through, and the last login."""
        profile = account.profile
        await self._store.run(queries.update_profile, profile.id, {"last_login": to_iso(self._policy.now())})
        await self._audit.record(
            LogEntry(
                org_id=account.organisation.id,
                profile_id=profile.id,
                username=profile.username,
                protocol=protocol,
                action="login",
                remote_address=address,
                message=f"{clean(profile.username)} signed in over "
                f"{PROTOCOL_NAMES.get(protocol, protocol)} from {address} ({method})",
            )
        )

    async def _failed(self, profile: Profile | None, username: str, protocol: str, address: str, why: str) -> None:
        """The one row of a refused sign-in, saying why."""
        await self._audit.record(
            LogEntry(
                org_id=profile.org_id if profile else None,
                profile_id=profile.id if profile else None,
                username=username[:MAX_USERNAME],
                protocol=protocol,
                action="login_failed",
                remote_address=address,
                message=f"Failed sign-in as {clean(username[:MAX_USERNAME])!r} over "
                f"{PROTOCOL_NAMES.get(protocol, protocol)} from {address}: {why}",
            )
        )
