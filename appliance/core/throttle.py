"""Brute-force defence shared by every protocol: slowing, then banning.

Each failed sign-in raises a score per address and per username that decays
over time. The answer to a failure is delayed by an amount that grows with the
score, so guessing is slow while a person who mistypes once barely notices.
An address that keeps failing is banned for a while, longer on each repeat
offence; its connections are refused before any password is checked. Usernames
are slowed but never banned, so an attacker cannot lock a real user out. The
clock is injected so tests need not sleep.
"""

from __future__ import annotations

from dataclasses import dataclass

from twisted.internet import task

FREE_FAILURES = 3  # failures answered without delay
MAX_DELAY = 10.0  # seconds
HALF_LIFE = 300.0  # seconds for a score to halve
BAN_THRESHOLD = 10.0  # an address scoring this many recent failures is banned
BAN_BASE = 300.0  # the first ban lasts five minutes...
BAN_GROWTH = 4  # ...each repeat offence four times longer...
BAN_MAX = 86400.0  # ...up to a day
OFFENCE_MEMORY = 86400.0  # offences older than this are forgotten


@dataclass(frozen=True)
class Ban:
    address: str
    until: float
    offences: int
    usernames: tuple[str, ...]  # who was being guessed, for the admin view


class LoginThrottle:
    def __init__(self, clock):
        self._clock = clock
        self._scores: dict[str, tuple[float, float]] = {}  # key -> (score, when)
        self._bans: dict[str, Ban] = {}
        self._offences: dict[str, tuple[int, float]] = {}  # address -> (count, last)
        self._recent_names: dict[str, list[str]] = {}  # address -> usernames tried lately

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

    def record_failure(self, username: str, address: str) -> Ban | None:
        """Count a failure; return the ban it caused, if it caused one."""
        now = self._clock.seconds()
        for key in ("u:" + username.lower(), "a:" + address):
            self._scores[key] = (self._score(key) + 1.0, now)
        names = self._recent_names.setdefault(address, [])
        if username and username.lower() not in names:
            names.append(username.lower())
            del names[:-20]
        if len(self._scores) > 100_000:  # bound memory under a spray of names
            self._forget_faded()
        # a small tolerance: ten failures in quick succession score 9.99 after decay
        if self._score("a:" + address) >= BAN_THRESHOLD - 0.05 and self.banned(address) is None:
            return self._ban(address, now)
        return None

    def _ban(self, address: str, now: float) -> Ban:
        count, last = self._offences.get(address, (0, 0.0))
        if now - last > OFFENCE_MEMORY:
            count = 0
        count += 1
        self._offences[address] = (count, now)
        length = min(BAN_MAX, BAN_BASE * BAN_GROWTH ** (count - 1))
        ban = Ban(address, now + length, count, tuple(self._recent_names.get(address, ())))
        self._bans[address] = ban
        self._scores.pop("a:" + address, None)  # the ban is the punishment; start afresh after it
        return ban

    def record_success(self, username: str, address: str) -> None:
        self._scores.pop("u:" + username.lower(), None)

    def banned(self, address: str) -> Ban | None:
        """The ban on this address now in force, if any."""
        ban = self._bans.get(address)
        if ban is None:
            return None
        if ban.until <= self._clock.seconds():
            del self._bans[address]
            return None
        return ban

    def bans(self) -> list[Ban]:
        """Bans in force, soonest to end first."""
        return sorted((b for a in list(self._bans) if (b := self.banned(a))), key=lambda b: b.until)

    def unban(self, address: str) -> bool:
        self._scores.pop("a:" + address, None)
        return self._bans.pop(address, None) is not None

    def _forget_faded(self) -> None:
        self._scores = {k: v for k, v in self._scores.items() if self._score(k) >= 0.5}
        self._recent_names = {a: n for a, n in self._recent_names.items() if self._score("a:" + a) >= 0.5}

    async def pause(self, seconds: float) -> None:
        if seconds > 0:
            await task.deferLater(self._clock, seconds, lambda: None)
