"""bcrypt hashing and checking, always on the work pool, never on the reactor."""

from __future__ import annotations

import functools
import hashlib
import hmac
import os
import time
from collections import OrderedDict
from pathlib import Path

import bcrypt

from ..errors import Invalid
from ..threads import Threads

MIN_LENGTH = 12  # a sign-in password's (every protocol's, and the operator's)
LINK_MIN_LENGTH = 8  # a share link's password: handed to its recipients with the link
MAX_BYTES = 72  # bcrypt's limit: longer passwords would be silently truncated
MIN_DISTINCT = 5  # characters a sign-in password has at least: not "aaaaaaaaaaaa" nor "121212121212"
COMMON_FILE = Path(__file__).with_name("data") / "common-passwords.txt"


@functools.cache
def common_passwords() -> frozenset[str]:
    """The list of common passwords (data/common-passwords.txt), read once."""
    with open(COMMON_FILE, encoding="utf-8") as f:
        return frozenset(line.rstrip("\n") for line in f if line.strip() and not line.startswith("#"))


def _core(password: str) -> str:
    """The password without the digits and signs around it ("Password2024!" -> "password")."""
    return password.lower().strip("0123456789!@#$%^&*()-_=+[]{};:'\",.<>/?`~|\\ ")


def _refused(message: str) -> Invalid:
    return Invalid(message, {"password": [message]})


def validate(password: str) -> None:
    """Refuse a sign-in password that is short, common, or one bcrypt cannot hold
    faithfully: at least MIN_LENGTH characters, MIN_DISTINCT different ones, not on the
    list of common passwords, nor one of them with digits and signs around it, nor one
    that begins with a common one making two thirds of it."""
    validate_link(password, MIN_LENGTH)
    if len(set(password)) < MIN_DISTINCT:
        raise _refused(f"That password repeats a few characters: use at least {MIN_DISTINCT} different ones.")
    common = common_passwords()
    lowered, core = password.lower(), _core(password)
    # a common one, one with digits and signs around it, or one that is mostly a common one
    # with a few characters more ("1234567890123")
    mostly = range(len(lowered) - 1, max(5, -(-2 * len(lowered) // 3)) - 1, -1)
    if lowered in common or (len(core) >= 4 and core in common) or any(lowered[:n] in common for n in mostly):
        raise _refused(
            "That password is on the list of common passwords attackers try first: choose another "
            "(a few unrelated words make a strong one)."
        )


def validate_link(password: str, minimum: int = LINK_MIN_LENGTH) -> None:
    """Refuse a password shorter than `minimum` or longer than bcrypt holds (a share link's)."""
    if len(password) < minimum:
        raise Invalid(
            f"The password must be at least {minimum} characters.",
            {"password": [f"Use at least {minimum} characters."]},
        )
    if len(password.encode()) > MAX_BYTES:
        raise _refused(f"The password must be at most {MAX_BYTES} bytes.")


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

    async def hash(self, password: str, check=validate) -> str:
        """The bcrypt hash of a password `check` allows (a sign-in password's rules unless
        told otherwise: a share link passes `validate_link`)."""
        check(password)
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
