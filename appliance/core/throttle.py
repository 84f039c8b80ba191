"""Brute-force defence shared by every protocol: slowing, then banning.

A failure tries a *target*: a username, or a share link's password. A target is
*known* when it exists (a profile, a link) and then belongs to one organisation;
a name with no account behind it is *unknown*. Three scores count failures, each
halving every five minutes, so old mistakes fade:

- **per target, from anywhere** (``u:``): only slows. The answer to the next failure
  on that name is held back longer and longer. A name attacked from many addresses
  (a botnet) is slowed everywhere but never banned, so nobody can lock a real user
  out of their account from elsewhere; a success clears it.
- **per address and known target** (``p:``): one person mistyping behind an office
  NAT, or one attacker guessing one account. At BAN_THRESHOLD the *pair* is banned:
  that address may not try that username (or link) for a while. Everyone else behind
  the address, and the same user from anywhere else, is untouched.
- **per address** (``a:``): every failure on an unknown name counts, and a failure on
  a known target counts the first time that target fails from the address lately (so
  spraying many names, existing or not, adds up; one person's repeats do not). At
  BAN_THRESHOLD the whole *address* is banned: its connections are refused before any
  password is checked.

Delays use the largest of the scores that apply, so a guess at a known name and at an
unknown one are slowed alike (the delays do not tell which names exist). Bans last
BAN_BASE, longer on each repeat offence of the same address or pair, up to BAN_MAX.
Addresses in ``[security] trusted_networks`` are never banned as a whole and do not
slow each other; failures from them still count per target and per pair, so guessing
one account from inside still gets that pair banned.

What this reveals: a guesser can tell, after BAN_THRESHOLD failures on one name, whether
only that name or the whole address was banned, and so whether the name exists. Each such
probe costs a ban, and the delays before it look the same for both kinds of name.

Every ban remembers what was tried (with each known target's organisation), so the
admins of those organisations can see and lift it (AuthService.bans_for, .lift) and
the operator sees all. The clock is injected so tests need not sleep.
"""

from __future__ import annotations

from dataclasses import dataclass

from twisted.internet import task

from .addresses import IPV6_PREFIX, client_key, in_networks, networks

FREE_FAILURES = 3  # failures answered without delay
MAX_DELAY = 10.0  # seconds
HALF_LIFE = 300.0  # seconds for a score to halve
BAN_THRESHOLD = 10.0  # an address, or an address and name, scoring this many recent failures is banned
BAN_BASE = 300.0  # the first ban lasts five minutes...
BAN_GROWTH = 4  # ...each repeat offence four times longer...
BAN_MAX = 86400.0  # ...up to a day
OFFENCE_MEMORY = 86400.0  # offences older than this are forgotten
KNOWN_TRIED = 50  # known targets remembered per address, for the admin view
UNKNOWN_TRIED = 20  # unknown names remembered per address


@dataclass(frozen=True)
class Target:
    """What a failure tried: a username, or a share link (``share:<id>``)."""

    key: str  # the throttle's name for it: "user:<lower-case username>" or "share:<id>"
    org_id: int | None  # the organisation it belongs to; None: no such account
    label: str  # in words, for the admin view: "alice", "the share link to /a.pdf of alice"

    @property
    def known(self) -> bool:
        return self.org_id is not None


@dataclass(frozen=True)
class Ban:
    address: str
    until: float
    offences: int
    target: Target | None  # None: the whole address; else only this target from it
    tried: tuple[Target, ...]  # what was being guessed from the address

    @property
    def organisations(self) -> frozenset[int]:
        """The organisations this ban concerns: whose names or links were guessed."""
        return frozenset(t.org_id for t in self.tried if t.org_id is not None)

    @property
    def usernames(self) -> tuple[str, ...]:
        return tuple(t.key[len("user:") :] for t in self.tried if t.key.startswith("user:"))


class LoginThrottle:
    def __init__(self, clock, trusted_networks=(), ipv6_prefix: int = IPV6_PREFIX):
        self._clock = clock
        self._trusted = networks(trusted_networks)
        self._ipv6_prefix = ipv6_prefix
        self._scores: dict[str, tuple[float, float]] = {}  # key -> (score, when)
        self._bans: dict[tuple[str, str | None], Ban] = {}  # (address, target key or None) -> ban
        self._offences: dict[tuple[str, str | None], tuple[int, float]] = {}  # -> (count, last)
        self._known: dict[str, dict[str, Target]] = {}  # address -> known targets tried lately
        self._unknown: dict[str, dict[str, Target]] = {}  # address -> unknown names tried lately

    def trusted(self, address: str) -> bool:
        """Whether the address is in [security] trusted_networks (never banned as a whole)."""
        return in_networks(address.split("/")[0], self._trusted)

    def client(self, address: str) -> str:
        """Who `address` is counted and banned as: itself for IPv4, its /64 (`[security]
        ipv6_prefix`) for IPv6 (addresses.client_key). Every method below takes either."""
        return client_key(address, self._ipv6_prefix)

    def _score(self, key: str) -> float:
        score, when = self._scores.get(key, (0.0, 0.0))
        if not score:
            return 0.0
        return score * 0.5 ** ((self._clock.seconds() - when) / HALF_LIFE)

    def _add(self, key: str, now: float) -> float:
        score = self._score(key) + 1.0
        self._scores[key] = (score, now)
        return score

    def failures(self, key: str, address: str) -> float:
        """The score that slows the next failure of this name from this address."""
        key, address = key.lower(), self.client(address)
        scores = [self._score("u:" + key), self._score(f"p:{address} {key}")]
        if not self.trusted(address):
            scores.append(self._score("a:" + address))
        return max(scores)

    def delay(self, key: str, address: str) -> float:
        """Seconds to hold back the answer to the next failure of this pair."""
        excess = self.failures(key, address) - FREE_FAILURES
        if excess < 0:
            return 0.0
        return min(MAX_DELAY, 0.5 * 2 ** min(excess, 64))  # a score in the thousands must not overflow

    def record_failure(self, target: Target, address: str) -> Ban | None:
        """Count a failure; return the ban it caused, if it caused one."""
        now = self._clock.seconds()
        address = self.client(address)
        trusted = self.trusted(address)
        self._add("u:" + target.key, now)
        ban = None
        if target.known:
            pair = f"p:{address} {target.key}"
            new_here = self._score(pair) < 0.5  # a spray adds a name; a repeat does not
            # a small tolerance: ten failures in quick succession score 9.99 after decay
            if self._add(pair, now) >= BAN_THRESHOLD - 0.05 and self.banned(address, target.key) is None:
                ban = self._ban(address, target, now)
            remembered = self._known.setdefault(address, {})
            remembered.pop(target.key, None)
            remembered[target.key] = target
            while len(remembered) > KNOWN_TRIED:
                del remembered[next(iter(remembered))]
        else:
            new_here = True
            remembered = self._unknown.setdefault(address, {})
            remembered.pop(target.key, None)
            remembered[target.key] = target
            while len(remembered) > UNKNOWN_TRIED:
                del remembered[next(iter(remembered))]
        if new_here and not trusted:
            score = self._add("a:" + address, now)
            if score >= BAN_THRESHOLD - 0.05 and self.banned(address) is None:
                ban = self._ban(address, None, now)
        if len(self._scores) > 100_000:  # bound memory under a spray of names
            self._forget_faded()
        return ban

    def _ban(self, address: str, target: Target | None, now: float) -> Ban:
        which = (address, target.key if target else None)
        count, last = self._offences.get(which, (0, 0.0))
        if now - last > OFFENCE_MEMORY:
            count = 0
        count += 1
        self._offences[which] = (count, now)
        length = min(BAN_MAX, BAN_BASE * BAN_GROWTH ** (count - 1))
        if target is None:
            tried = (*self._known.pop(address, {}).values(), *self._unknown.pop(address, {}).values())
            self._scores.pop("a:" + address, None)  # the ban is the punishment; start afresh after it
        else:
            tried = (target,)
            self._scores.pop(f"p:{address} {target.key}", None)
        ban = Ban(address, now + length, count, target, tried)
        self._bans[which] = ban
        return ban

    def record_success(self, key: str, address: str) -> None:
        key, address = key.lower(), self.client(address)
        self._scores.pop("u:" + key, None)
        self._scores.pop(f"p:{address} {key}", None)

    def banned(self, address: str, key: str | None = None) -> Ban | None:
        """The ban now in force on the whole address or, given a target's key, on that
        target from the address (the address ban first), if any."""
        address = self.client(address)
        for which in ((address, None), (address, key.lower())) if key else ((address, None),):
            ban = self._bans.get(which)
            if ban is None:
                continue
            if ban.until <= self._clock.seconds():
                del self._bans[which]
                continue
            return ban
        return None

    def bans(self) -> list[Ban]:
        """Bans in force, soonest to end first."""
        now = self._clock.seconds()
        for which in [w for w, b in self._bans.items() if b.until <= now]:
            del self._bans[which]
        return sorted(self._bans.values(), key=lambda b: (b.until, b.address))

    def unban(self, address: str, key: str | None = None) -> bool:
        """Lift the ban on the whole address (key None) or on one target from it."""
        address = self.client(address)
        if key is None:
            self._scores.pop("a:" + address, None)
        else:
            self._scores.pop(f"p:{address} {key.lower()}", None)
        ban = self._bans.pop((address, key.lower() if key else None), None)
        return ban is not None and ban.until > self._clock.seconds()

    def _forget_faded(self) -> None:
        now = self._clock.seconds()
        self._scores = {k: v for k, v in self._scores.items() if self._score(k) >= 0.5}
        busy = {k[2:].split(" ", 1)[0] for k in self._scores if k.startswith(("a:", "p:"))}
        self._known = {a: t for a, t in self._known.items() if a in busy}
        self._unknown = {a: t for a, t in self._unknown.items() if a in busy}
        self._offences = {w: o for w, o in self._offences.items() if now - o[1] <= OFFENCE_MEMORY}

    async def pause(self, seconds: float) -> None:
        if seconds > 0:
            await task.deferLater(self._clock, seconds, lambda: None)
