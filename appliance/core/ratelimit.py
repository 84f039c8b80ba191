"""Rate limits on what requests make the appliance do to others: the mail it sends
(password resets, invitations, share links), so nobody can use it to flood an
inbox or the mail server.

One limiter, many rules: a rule allows `count` events per `window` seconds for
each key (a client address, an email address, an account). Windows slide: each
event is remembered until it is `window` seconds old. The clock is injected so
tests need not sleep. In memory: a restart forgets the counts, which costs an
attacker a restart of the appliance they cannot cause.
"""

from __future__ import annotations

import math
from collections import OrderedDict, deque
from dataclasses import dataclass

from ..errors import RateLimited

MAX_KEYS = 100_000  # keys remembered at most; a flood of new keys forgets the stalest first


@dataclass(frozen=True)
class Rule:
    name: str  # what is counted, for the key and for log lines
    count: int  # events allowed per window...
    window: float  # ...of this many seconds


HOUR = 3600.0
# password/reset/: the only limit it answers 429 for is the client's address, counted on
# every request whatever the address asked for, so a 429 tells nothing about accounts;
# the limits per typed address and per account skip the mail silently.
RESETS_PER_CLIENT = Rule("password reset requests from one address", 10, HOUR)
RESETS_PER_EMAIL = Rule("password reset mails to one address", 3, HOUR)
RESETS_PER_ACCOUNT = Rule("password reset mails for one account", 3, HOUR)
# invitations: the admin knows the profile, so a 429 tells nothing new
INVITES_PER_PROFILE = Rule("invitations to one profile", 3, HOUR)
INVITES_PER_ADMIN = Rule("invitations sent by one admin", 50, HOUR)
INVITES_PER_EMAIL = Rule("invitations to one address", 10, HOUR)
# the operator's test mails (one per click; a few to try a changed [smtp])
TEST_MAILS_PER_OPERATOR = Rule("test mails sent by one operator", 10, HOUR)
# share links mailed to recipients
SHARE_MAILS_PER_ACCOUNT = Rule("share link mails sent by one account", 100, HOUR)
SHARE_MAILS_PER_RECIPIENT = Rule("share link mails to one address", 10, HOUR)
# Per recipient domain as well: many addresses of one domain are one mail server (and
# often, with a catch-all, one inbox) that the appliance must not flood.
RESETS_PER_DOMAIN = Rule("password reset mails to one domain", 30, HOUR)
INVITES_PER_DOMAIN = Rule("invitations to one domain", 100, HOUR)
SHARE_MAILS_PER_DOMAIN = Rule("share link mails to one domain", 50, HOUR)
# checks of remote sources that found no server at an address on the appliance's own
# networks (one answer whatever the port's state: storage/sftp/client.py `unreached`):
# an organisation's admins cannot walk the appliance's networks port by port
UNREACHED_PER_ORGANISATION = Rule("source checks that reached no server, of one organisation", 20, HOUR)
# Providers that ignore dots in a mailbox's name (j.doe@ and jdoe@ are one inbox) and
# their other names for the same mailboxes.
DOTS_IGNORED = {"gmail.com": "gmail.com", "googlemail.com": "gmail.com"}


def inbox(email: str) -> str:
    """The inbox an address reaches, as limits count it: case folded, the `+tag` of
    the mailbox's name dropped (victim+1@ is victim@), and for the providers that
    ignore them the dots too; so one inbox is never 25 addresses."""
    local, at, domain = email.strip().casefold().rpartition("@")
    if not at:
        return email.strip().casefold()
    local = local.split("+", 1)[0]
    domain = domain.rstrip(".")
    if domain in DOTS_IGNORED:
        local, domain = local.replace(".", ""), DOTS_IGNORED[domain]
    return f"{local}@{domain}"


def recipient_limits(per_inbox: Rule, per_domain: Rule, email: str) -> list[tuple[Rule, str]]:
    """The (rule, key) pairs a mail to `email` counts against: its inbox and its domain."""
    address = inbox(email)
    return [(per_inbox, address), (per_domain, address.rpartition("@")[2])]


def wait_in_words(seconds: int) -> str:
    """'in 5 minutes', 'in 30 seconds': when to try again, for a message."""
    if seconds >= 90:
        minutes = math.ceil(seconds / 60)
        return f"in {minutes} minutes"
    return f"in {seconds} second{'s' if seconds != 1 else ''}"


class RateLimiter:
    def __init__(self, clock, max_keys: int = MAX_KEYS):
        self._clock = clock
        self._max_keys = max_keys
        self._events: OrderedDict[tuple[str, str], deque[float]] = OrderedDict()  # (rule, key) -> times
        self._windows: dict[str, float] = {}  # rule name -> its window

    def __len__(self) -> int:
        """How many (rule, key) pairs are tracked (at most max_keys)."""
        return len(self._events)

    def _recent(self, rule: Rule, key: str, now: float) -> deque[float]:
        events = self._events.get((rule.name, key))
        if events is None:
            return deque()
        while events and events[0] <= now - rule.window:
            events.popleft()
        return events

    def _wait(self, rule: Rule, key: str, amount: int, now: float) -> int:
        """Seconds until `amount` more events of `key` fit in `rule` (0: they fit now)."""
        events = self._recent(rule, key, now)
        if amount > rule.count:
            return math.ceil(rule.window)
        excess = len(events) + amount - rule.count
        if excess <= 0:
            return 0
        return max(1, math.ceil(events[excess - 1] + rule.window - now))

    def retry_after(self, *limits: tuple[Rule, str], amount: int = 1) -> int:
        """Seconds until `amount` events fit under every (rule, key); 0: now. Counts nothing."""
        now = self._clock.seconds()
        return max((self._wait(rule, key, amount, now) for rule, key in limits), default=0)

    def take(self, *limits: tuple[Rule, str], amount: int = 1) -> int:
        """Count `amount` events under every (rule, key) if all have room, and return 0;
        otherwise count nothing and return the seconds until they would fit."""
        wait = self.retry_after(*limits, amount=amount)
        if wait:
            return wait
        now = self._clock.seconds()
        for rule, key in limits:
            self._windows[rule.name] = rule.window
            events = self._events.get((rule.name, key))
            if events is None:
                events = self._events[(rule.name, key)] = deque()
                if len(self._events) > self._max_keys:
                    self._forget(now)
            else:
                self._events.move_to_end((rule.name, key))
            events.extend([now] * amount)
        return 0

    def require(self, message: str, *limits: tuple[Rule, str], amount: int = 1) -> None:
        """`take`, or raise RateLimited: `message` followed by when to try again."""
        wait = self.take(*limits, amount=amount)
        if wait:
            raise RateLimited(f"{message} Try again {wait_in_words(wait)}.", wait)

    def _forget(self, now: float) -> None:
        """Drop keys with no event left in their window, then the stalest if still too many."""
        for name, key in list(self._events):
            events = self._events[(name, key)]
            if not events or events[-1] <= now - self._windows[name]:
                del self._events[(name, key)]
        while len(self._events) > self._max_keys:
            self._events.popitem(last=False)
