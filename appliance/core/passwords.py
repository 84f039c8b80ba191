"""bcrypt hashing and checking, always on the work pool, never on the reactor."""

from __future__ import annotations

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


class Passwords:
    def __init__(self, threads: Threads, rounds: int = 12):
        self._threads = threads
        self._rounds = rounds
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
        try:
            return await self._threads.work(bcrypt.checkpw, candidate, hashed.encode())
        except ValueError:  # a corrupt hash in the database: refuse, do not crash
            return False
