"""The one rate limiter (core/ratelimit.py) on an injected clock: windows slide,
Retry-After is exact, a refused take counts nothing, memory stays bounded."""

from __future__ import annotations

import pytest
from twisted.internet import task

from appliance.core.ratelimit import RateLimiter, Rule
from appliance.errors import RateLimited

THREE_A_MINUTE = Rule("test events", 3, 60)
ONE_AN_HOUR = Rule("rare events", 1, 3600)


def test_a_window_slides_and_retry_after_says_when_the_next_fits():
    clock = task.Clock()
    limiter = RateLimiter(clock)
    for second in (0, 10, 20):
        clock.advance(second - clock.seconds())
        assert limiter.take((THREE_A_MINUTE, "a")) == 0
    assert limiter.take((THREE_A_MINUTE, "a")) == 40  # the event at 0 leaves the window at 60
    assert limiter.take((THREE_A_MINUTE, "b")) == 0  # another key has its own count
    clock.advance(40)
    assert limiter.take((THREE_A_MINUTE, "a")) == 0
    assert limiter.take((THREE_A_MINUTE, "a")) == 10


def test_a_refused_take_counts_nothing_under_any_rule():
    clock = task.Clock()
    limiter = RateLimiter(clock)
    assert limiter.take((ONE_AN_HOUR, "x")) == 0
    for _ in range(5):  # refused by ONE_AN_HOUR: THREE_A_MINUTE's key must stay untouched
        assert limiter.take((THREE_A_MINUTE, "y"), (ONE_AN_HOUR, "x")) == 3600
    assert limiter.take((THREE_A_MINUTE, "y"), amount=3) == 0
    assert limiter.retry_after((THREE_A_MINUTE, "y")) == 60
    assert limiter.take((THREE_A_MINUTE, "z"), amount=4) == 60  # more than a window ever holds


def test_require_raises_rate_limited_with_retry_after():
    clock = task.Clock()
    limiter = RateLimiter(clock)
    limiter.require("Too many.", (ONE_AN_HOUR, "x"))
    clock.advance(600)
    with pytest.raises(RateLimited) as refused:
        limiter.require("Too many.", (ONE_AN_HOUR, "x"))
    assert refused.value.retry_after == 3000
    assert refused.value.message == "Too many. Try again in 50 minutes."


def test_a_flood_of_new_keys_stays_bounded():
    clock = task.Clock()
    limiter = RateLimiter(clock, max_keys=100)
    for n in range(1000):
        limiter.take((THREE_A_MINUTE, f"key{n}"))
        clock.advance(1)
    assert len(limiter) <= 100
    assert limiter.take((THREE_A_MINUTE, "key999"), amount=3) == 59  # the freshest are kept
