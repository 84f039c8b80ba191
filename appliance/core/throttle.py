"""Slows repeated sign-in failures, per address and per username.

Each failure raises a score that decays over time; the answer to a failed
attempt is delayed by an amount that grows with the score, so guessing is slow
while a person who mistypes once barely notices. The clock is injected so tests
need not sleep.
"""

from __future__ import annotations

from twisted.internet import task

FREE_FAILURES = 3  # failures answered without delay
MAX_DELAY = 10.0  # seconds
HALF_LIFE = 300.0  # seconds for a score to halve


class LoginThrottle:
    def __init__(self, clock):
        self._clock = clock
        self._scores: dict[str, tuple[float, float]] = {}  # key -> (score, when)

    def _score(self, key: str) -> float:
        score, when = self._scores.get(key, (0.0, 0.0))
        if not score:
            return 0.0
        return score * 0.5 ** ((self._clock.seconds() - when) / HALF_LIFE)

    def failures(self, username: str, address: str) -> float:
        return max(self._score("u:" + username.lower()), self._score("a:" + address))

    def delay(self, username: str, address: str) -> float:
        """Seconds to hold back the answer to the next failure of this pair."""
        excess = self.failures(username, address) - FREE_FAILURES
        if excess < 0:
            return 0.0
        return min(MAX_DELAY, 0.5 * 2**excess)

    def record_failure(self, username: str, address: str) -> None:
        now = self._clock.seconds()
        for key in ("u:" + username.lower(), "a:" + address):
            self._scores[key] = (self._score(key) + 1.0, now)
        if len(self._scores) > 100_000:  # bound memory under a spray of names
            self._forget_faded()

    def record_success(self, username: str, address: str) -> None:
        self._scores.pop("u:" + username.lower(), None)

    def _forget_faded(self) -> None:
        self._scores = {k: v for k, v in self._scores.items() if self._score(k) >= 0.5}

    async def pause(self, seconds: float) -> None:
        if seconds > 0:
            await task.deferLater(self._clock, seconds, lambda: None)
