"""bcrypt checks, and the cache of recent successful checks."""

from __future__ import annotations

import pytest
import pytest_twisted

from appliance.core.passwords import Passwords, VerifiedCache, validate, validate_link
from appliance.errors import Invalid


class CountingThreads:
    """Runs work inline and counts it (bcrypt is what the cache must save)."""

    def __init__(self):
        self.calls = 0

    async def bulk(self, fn, *args):
        self.calls += 1
        return fn(*args)


@pytest_twisted.ensureDeferred
async def test_a_success_is_cached_until_the_password_changes():
    threads = CountingThreads()
    passwords = Passwords(threads, rounds=4)
    hashed = await passwords.hash("correct horse 1")
    threads.calls = 0
    assert await passwords.verify("correct horse 1", hashed, scope="profile:1")
    assert await passwords.verify("correct horse 1", hashed, scope="profile:1")
    assert threads.calls == 1  # the second check cost no bcrypt
    assert await passwords.verify("correct horse 1", hashed, scope="profile:2")
    assert threads.calls == 2  # another profile's entry is its own
    assert not await passwords.verify("wrong password", hashed, scope="profile:1")
    assert not await passwords.verify("wrong password", hashed, scope="profile:1")
    assert threads.calls == 4  # failures always pay
    new_hash = await passwords.hash("correct horse 2")
    threads.calls = 0
    assert not await passwords.verify("correct horse 1", new_hash, scope="profile:1")  # old password, new hash
    assert threads.calls == 1
    passwords.forget("profile:1")
    assert await passwords.verify("correct horse 1", hashed, scope="profile:1")  # forgotten: bcrypt again
    assert threads.calls == 2


@pytest_twisted.ensureDeferred
async def test_without_a_scope_nothing_is_cached():
    threads = CountingThreads()
    passwords = Passwords(threads, rounds=4)
    hashed = await passwords.hash("correct horse 1")
    threads.calls = 0
    assert await passwords.verify("correct horse 1", hashed)
    assert await passwords.verify("correct horse 1", hashed)
    assert threads.calls == 2


def test_the_cache_holds_no_password_or_hash_and_expires():
    now = [0.0]
    cache = VerifiedCache(size=2, ttl=10, clock=lambda: now[0])
    cache.remember("profile:1", "secret-one", "$2b$hash1")
    assert all(b"secret-one" not in d and b"hash1" not in d for d in cache.digests())
    assert "secret-one" not in repr(cache.digests()) and "hash1" not in repr(cache.digests())
    assert cache.hit("profile:1", "secret-one", "$2b$hash1")
    assert not cache.hit("profile:1", "secret-two", "$2b$hash1")
    assert not cache.hit("profile:2", "secret-one", "$2b$hash1")
    assert not cache.hit("profile:1", "secret-one", "$2b$hash2")
    now[0] = 11
    assert not cache.hit("profile:1", "secret-one", "$2b$hash1")
    assert len(cache) == 0  # the expired entry went


def test_the_cache_is_bounded_least_recently_used_first():
    cache = VerifiedCache(size=2, ttl=10, clock=lambda: 0.0)
    cache.remember("profile:0", "p", "h")
    cache.remember("profile:1", "p", "h")
    assert cache.hit("profile:0", "p", "h")  # used: profile 1 is now the oldest
    cache.remember("profile:2", "p", "h")
    assert len(cache) == 2
    assert cache.hit("profile:0", "p", "h") and cache.hit("profile:2", "p", "h")
    assert not cache.hit("profile:1", "p", "h")


def test_password_rules():
    """A sign-in password: 12 characters at least, 5 different ones, not a common one
    (nor one with digits and signs around it), at most bcrypt's 72 bytes. A share link's:
    8 characters at least."""
    for short in ("short", "password", "eleven-char"):
        with pytest.raises(Invalid, match="at least 12"):
            validate(short)
    with pytest.raises(Invalid, match="at most 72 bytes"):
        validate("é" * 40)
    for repeated in ("x" * 72, "121212121212", "abcabcabcabc"):
        with pytest.raises(Invalid, match="different ones"):
            validate(repeated)
    for common in ("password1234", "Password2024!", "!!sunshine!!2026", "qwertyuiop123", "1234567890123"):
        with pytest.raises(Invalid, match="list of common passwords"):
            validate(common)
    for fine in ("correct-horse-battery", "admin-password-1", "x" * 60 + "abcd1234", "tuesday-kiln-ocean"):
        validate(fine)
    validate_link("link-pass")  # a share link's password
    with pytest.raises(Invalid, match="at least 8"):
        validate_link("short")
