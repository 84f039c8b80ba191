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


class VerifiedCache:
    """Remembers recent successful checks so scripts that reconnect every minute do
    not pay bcrypt each time. It keeps a keyed hash of the password (HMAC under a
    random key that never leaves this process), never the password; an entry holds
    only while the stored bcrypt hash is the one it was checked against, so any
    password change drops it. Failures are never cached."""

    def __init__(self, size: int = 10_000, ttl: float = 3600.0, clock=time.monotonic):
        self._key = os.urandom(32)
        self._size = size
        self._ttl = ttl
        self._clock = clock
        self._entries: OrderedDict[str, tuple[bytes, float]] = OrderedDict()

    def _digest(self, password: str, hashed: str) -> bytes:
        return hmac.new(self._key, hashed.encode() + b"\0" + password.encode(), hashlib.sha256).digest()

    def hit(self, password: str, hashed: str) -> bool:
        entry = self._entries.get(hashed)
        if entry is None:
            return False
        digest, when = entry
        if self._clock() - when > self._ttl:
            del self._entries[hashed]
            return False
        return hmac.compare_digest(digest, self._digest(password, hashed))

    def remember(self, password: str, hashed: str) -> None:
        self._entries[hashed] = (self._digest(password, hashed), self._clock())
        self._entries.move_to_end(hashed)
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)


class Passwords:
    def __init__(self, threads: Threads, rounds: int = 12, cache: VerifiedCache | None = None):
        self._threads = threads
        self._rounds = rounds
        self._cache = cache if cache is not None else VerifiedCache()
        # Checked against when the user is unknown, so both cases cost the same.
        self._dummy = bcrypt.hashpw(b"dummy password", bcrypt.gensalt(rounds)).decode()

    async def hash(self, password: str) -> str:
        validate(password)
        salt = bcrypt.gensalt(self._rounds)
        return (await self._threads.work(bcrypt.hashpw, password.encode(), salt)).decode()

    async def verify(self, password: str, hashed: str | None) -> bool:
        """True if `password` matches; with no hash, spend the same time and say no."""
        candidate = password.encode()[:MAX_BYTES]
        if not hashed:
            await self._threads.work(bcrypt.checkpw, candidate, self._dummy.encode())
            return False
        if self._cache.hit(password, hashed):
            return True
        try:
            ok = await self._threads.work(bcrypt.checkpw, candidate, hashed.encode())
        except ValueError:  # a corrupt hash in the database: refuse, do not crash
            return False
        if ok:
            self._cache.remember(password, hashed)
        return ok
