"""The days and months a query names (domain.dates)."""

from __future__ import annotations

import datetime as dt

import pytest

from memory_pipeline.domain.dates import Period, named_periods


def day(y: int, m: int, d: int) -> Period:
    start = dt.datetime(y, m, d, tzinfo=dt.UTC)
    return Period(start, start + dt.timedelta(days=1))


def month(y: int, m: int) -> Period:
    start = dt.datetime(y, m, 1, tzinfo=dt.UTC)
    end = dt.datetime(y + m // 12, m % 12 + 1, 1, tzinfo=dt.UTC)
    return Period(start, end)


@pytest.mark.parametrize(
    "query, expected",
    [
        ("What did Maria donate on 3 June, 2023?", [day(2023, 6, 3)]),
        ("what painting did she show on October 13, 2023", [day(2023, 10, 13)]),
        ("which book on 8th December, 2023?", [day(2023, 12, 8)]),
        ("the forest picture of December 1,2023", [day(2023, 12, 1)]),
        ("notes of 2023-06-03 and of 2023-06-04", [day(2023, 6, 3), day(2023, 6, 4)]),
        ("the 3rd of june 2023", [day(2023, 6, 3)]),
        ("What did Maria donate in December 2023?", [month(2023, 12)]),
        ("Sept 2022 and dec, 2021", [month(2022, 9), month(2021, 12)]),
        ("the 2023-02 invoices", [month(2023, 2)]),
        ("29 February 2024 was a leap day", [day(2024, 2, 29)]),
        ("June 3, 2023 and again June 3, 2023", [day(2023, 6, 3)]),
    ],
)
def test_days_and_months_are_read_in_the_order_they_appear(query, expected):
    assert named_periods(query) == expected


@pytest.mark.parametrize(
    "query",
    [
        "when did Melanie go camping in June?",  # a month without a year
        "what happened in 2023",  # a year alone singles nothing out
        "what did I do last week",
        "31 June 2023",  # no such day
        "29 February 2023",
        "2023-13",
        "may I ask about the report",
        "",
    ],
)
def test_a_query_naming_no_day_or_month_names_nothing(query):
    assert named_periods(query) == []


def test_a_day_is_one_utc_calendar_day():
    (period,) = named_periods("on 31 December 2023")
    assert period.start == dt.datetime(2023, 12, 31, tzinfo=dt.UTC)
    assert period.end == dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
