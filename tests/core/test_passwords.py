"""bcrypt checks, and the cache of recent successful checks."""

from __future__ import annotations

import pytest
import pytest_twisted

from appliance.core.passwords import Passwords, VerifiedCache, validate
from appliance.errors import Invalid


class CountingThreads:
    """Runs work inline and counts it (bcrypt is what the cache must save)."""

    def __init__(self):
        self.calls = 0

    async def work(self, fn, *args):
        self.calls += 1
        return fn(*args)


@pytest_twisted.ensureDeferred
async def test_a_success_is_cached_until_the_password_changes():
    threads = CountingThreads()
    passwords = Passwords(threads, rounds=4)
    hashed = await passwords.hash("correct horse 1")
    threads.calls = 0
    assert await passwords.verify("correct horse 1", hashed)
    assert await passwords.verify("correct horse 1", hashed)
    assert threads.calls == 1  # the second check cost no bcrypt
    assert not await passwords.verify("wrong password", hashed)
    assert not await passwords.verify("wrong password", hashed)
    assert threads.calls == 3  # failures always pay
    new_hash = await passwords.hash("correct horse 2")
    threads.calls = 0
    assert not await passwords.verify("correct horse 1", new_hash)  # old password, new hash
    assert threads.calls == 1


def test_the_cache_holds_no_password_and_expires():
    now = [0.0]
    cache = VerifiedCache(size=2, ttl=10, clock=lambda: now[0])
    cache.remember("secret-one", "$2b$hash1")
    assert all(b"secret-one" not in digest for digest, _ in cache._entries.values())
    assert cache.hit("secret-one", "$2b$hash1")
    assert not cache.hit("secret-two", "$2b$hash1")
    now[0] = 11
    assert not cache.hit("secret-one", "$2b$hash1")
    for i in range(3):
        cache.remember("p", f"h{i}")
    assert len(cache._entries) == 2 and not cache.hit("p", "h0")


def test_password_rules():
    with pytest.raises(Invalid, match="at least 8"):
        validate("short")
    with pytest.raises(Invalid, match="at most 72 bytes"):
        validate("é" * 40)
    validate("x" * 72)
