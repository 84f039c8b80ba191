"""bcrypt hashing and checking, always on the work pool, never on the reactor."""

from __future__ import annotations

import hashlib
import hmac
import os
import time
from collections import OrderedDict

import bcrypt

from ..errors import Invalid
from ..threads import Threads

MIN_LENGTH = 8
MAX_BYTES = 72  # bcrypt's limit: longer passwords would be silently truncated


def validate(password: str) -> None:
    """Refuse passwords bcrypt cannot hold faithfully or that are too short."""
    if len(password) < MIN_LENGTH:
        raise Invalid(
            f"The password must be at least {MIN_LENGTH} characters.",
            {"password": [f"Use at least {MIN_LENGTH} characters."]},
        )
    if len(password.encode()) > MAX_BYTES:
        raise Invalid(
            f"The password must be at most {MAX_BYTES} bytes.",
            {"password": [f"Use at most {MAX_BYTES} bytes."]},
        )


# Scripts reconnect every minute or so; a quarter of an hour covers them without
# keeping a success around for long after its last use.
CACHE_SIZE = 4096
CACHE_TTL = 15 * 60.0


def profile_scope(profile_id: int) -> str:
    """The cache scope of a profile's sign-in password."""
    return f"profile:{profile_id}"


def share_scope(share_id: int) -> str:
    """The cache scope of a share link's password."""
    return f"share:{share_id}"


class VerifiedCache:
    """Remembers recent successful checks so scripts that reconnect every minute do
    not pay bcrypt each time.

    An entry is an HMAC-SHA256, under a random key that never leaves this process,
    of (scope, stored bcrypt hash, password): it holds neither the password nor the
    hash, and cannot be turned back into either. Since the stored hash is part of
    the key, any password change makes old entries unreachable; `forget(scope)`
    also drops them at once. Bounded (least recently used goes first) and expiring.
    Only successes are remembered: failures always pay bcrypt."""

    def __init__(self, size: int = CACHE_SIZE, ttl: float = CACHE_TTL, clock=time.monotonic):
        self._key = os.urandom(32)
        self._size = size
        self._ttl = ttl
        self._clock = clock
        self._entries: OrderedDict[bytes, tuple[str, float]] = OrderedDict()  # digest -> (scope, when checked)

    def __len__(self) -> int:
        return len(self._entries)

    def digests(self) -> list[bytes]:
        """What is kept of each remembered sign-in (the HMAC), oldest first: never a password or a hash."""
        return list(self._entries)

    def _digest(self, scope: str, password: str, hashed: str) -> bytes:
        message = b"".join(
            len(part).to_bytes(4, "big") + part for part in (scope.encode(), hashed.encode(), password.encode())
        )
        return hmac.new(self._key, message, hashlib.sha256).digest()

    def hit(self, scope: str, password: str, hashed: str) -> bool:
        """Whether this password was found right for this scope and hash within the last `ttl` seconds."""
        digest = self._digest(scope, password, hashed)
        entry = self._entries.get(digest)
        if entry is None:
            return False
        if self._clock() - entry[1] > self._ttl:
            del self._entries[digest]
            return False
        self._entries.move_to_end(digest)
        return True

    def remember(self, scope: str, password: str, hashed: str) -> None:
        digest = self._digest(scope, password, hashed)
        self._entries[digest] = (scope, self._clock())
        self._entries.move_to_end(digest)
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)

    def forget(self, scope: str) -> None:
        """Drop every entry of `scope` (its password changed, or it was deleted)."""
        for digest in [d for d, (s, _) in self._entries.items() if s == scope]:
            del self._entries[digest]


class Passwords:
    """bcrypt on the work pool. `check` is bcrypt's checkpw unless a test counts its calls."""

    def __init__(self, threads: Threads, rounds: int = 12, cache: VerifiedCache | None = None, check=bcrypt.checkpw):
        self._threads = threads
        self._rounds = rounds
        self._cache = cache if cache is not None else VerifiedCache()
        self.check = check
        # Checked against when the user is unknown, so both cases cost the same.
        self._dummy = bcrypt.hashpw(b"dummy password", bcrypt.gensalt(rounds)).decode()

    @property
    def cache(self) -> VerifiedCache:
        """The remembered successful checks (how many, what is kept of them)."""
        return self._cache

    async def hash(self, password: str) -> str:
        validate(password)
        salt = bcrypt.gensalt(self._rounds)
        return (await self._threads.bulk(bcrypt.hashpw, password.encode(), salt)).decode()

    async def verify(self, password: str, hashed: str | None, *, scope: str | None = None) -> bool:
        """True if `password` matches; with no hash, spend the same time and say no.

        With a `scope` (`profile_scope(id)`, `share_scope(id)`) a success is remembered
        and a repeat of it within the cache's lifetime costs no bcrypt."""
        candidate = password.encode()[:MAX_BYTES]
        if not hashed:
            await self._threads.bulk(self.check, candidate, self._dummy.encode())
            return False
        if scope is not None and self._cache.hit(scope, password, hashed):
            return True
        try:
            ok = await self._threads.bulk(self.check, candidate, hashed.encode())
        except ValueError:  # a corrupt hash in the database: refuse, do not crash
            return False
        if ok and scope is not None:
            self._cache.remember(scope, password, hashed)
        return ok

    def forget(self, scope: str) -> None:
        """Drop remembered successes of `scope`: call it when its password changes."""
        self._cache.forget(scope)
