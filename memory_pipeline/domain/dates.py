"""The calendar days and months a query names, for the ``date`` search channel.

A question about a moment names the time of the episode that answers it (its ``occurred_at``),
which no chunk's text holds. Recognised: a day (``3 June 2023``, ``June 3, 2023``,
``2023-06-03``) or a month (``June 2023``, ``2023-06``), in English month names; a year alone,
a month without a year and relative dates are not periods. Days are calendar days in UTC; a
date that does not exist names nothing.
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from typing import NamedTuple

_MONTHS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
MONTH_NUMBERS = {
    **{name: i for i, name in enumerate(_MONTHS, 1)},
    **{name[:3]: i for i, name in enumerate(_MONTHS, 1)},
    "sept": 9,
}
_MONTH = "(?P<month>" + "|".join(sorted(MONTH_NUMBERS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>\d{4})"
# Longest forms first: "June 3, 2023" must not be read as the month "June" alone.
_FORMS = (
    ("day", re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s*{_YEAR}\b", re.IGNORECASE)),
    ("day", re.compile(rf"\b{_MONTH}\s+{_DAY},?\s*{_YEAR}\b", re.IGNORECASE)),
    ("day", re.compile(r"\b(?P<year>\d{4})-(?P<month>\d{2})-(?P<day>\d{2})\b")),
    ("month", re.compile(rf"\b{_MONTH},?\s+{_YEAR}\b", re.IGNORECASE)),
    ("month", re.compile(r"\b(?P<year>\d{4})-(?P<month>\d{2})\b(?!-\d)")),
)


class Period(NamedTuple):
    """[start, end) in UTC."""

    start: dt.datetime
    end: dt.datetime


def _period(kind: str, match: re.Match) -> Period | None:
    month_text = match.group("month").lower()
    month = int(month_text) if month_text.isdigit() else MONTH_NUMBERS[month_text]
    year = int(match.group("year"))
    try:
        if kind == "day":
            start = dt.datetime(year, month, int(match.group("day")), tzinfo=dt.UTC)
            return Period(start, start + dt.timedelta(days=1))
        start = dt.datetime(year, month, 1, tzinfo=dt.UTC)
    except ValueError:  # no such day or month
        return None
    return Period(start, start + dt.timedelta(days=calendar.monthrange(year, month)[1]))


def named_periods(query: str) -> list[Period]:
    """The days and months ``query`` names (module docstring), in the order they appear, each
    once; a stretch of text counts for its longest reading only."""
    found: list[tuple[int, Period]] = []
    taken: list[tuple[int, int]] = []
    for kind, pattern in _FORMS:
        for match in pattern.finditer(query):
            if any(match.start() < end and start < match.end() for start, end in taken):
                continue
            taken.append(match.span())
            period = _period(kind, match)
            if period is not None:
                found.append((match.start(), period))
    return list(dict.fromkeys(period for _, period in sorted(found)))
