"""The dashboard chart's bars: the last 30 days, 12 weeks from Monday or 12 months,
each labelled, up to the one holding today."""

from __future__ import annotations

import itertools
from datetime import date

import pytest

from appliance.core.dashboard import chart_bars


def test_days_end_today():
    bars, end = chart_bars(date(2026, 3, 2), "day")
    assert len(bars) == 30
    assert bars[-1] == (date(2026, 3, 2), "2 Mar") and bars[-2] == (date(2026, 3, 1), "1 Mar")
    assert bars[0] == (date(2026, 2, 1), "1 Feb") and end == date(2026, 3, 3)


def test_weeks_start_on_monday_across_a_new_year():
    bars, end = chart_bars(date(2026, 1, 1), "week")  # a Thursday
    assert len(bars) == 12
    assert bars[-1] == (date(2025, 12, 29), "29 Dec") and end == date(2026, 1, 5)
    assert all((b[0] - a[0]).days == 7 for a, b in itertools.pairwise(bars))
    assert all(start.weekday() == 0 for start, _ in bars)


@pytest.mark.parametrize(
    ("today", "first", "last", "end"),
    [
        (date(2026, 11, 22), (date(2025, 12, 1), "Dec 2025"), (date(2026, 11, 1), "Nov 2026"), date(2026, 12, 1)),
        (date(2026, 12, 31), (date(2026, 1, 1), "Jan 2026"), (date(2026, 12, 1), "Dec 2026"), date(2027, 1, 1)),
    ],
)
def test_months_are_the_last_twelve(today, first, last, end):
    bars, after = chart_bars(today, "month")
    assert len(bars) == 12 and bars[0] == first and bars[-1] == last and after == end
