"""The date channel: chunks of the episodes that occurred on the days and months a query names."""

from __future__ import annotations

from memory_pipeline.domain.dates import named_periods
from memory_pipeline.search.channels.base import ChannelQuery, ChannelResult
from memory_pipeline.storage import search_store

DATE_CANDIDATES = 50


def names_a_date(q: ChannelQuery) -> bool:
    """Most queries name no date: the channel then needs no connection at all."""
    return bool(named_periods(q.query))


def date_channel(conn, q: ChannelQuery) -> ChannelResult:
    """The newest chunks of those episodes, all scored alike (``domain.dates``)."""
    periods = named_periods(q.query)
    if not periods:
        return ChannelResult()
    return ChannelResult(
        hits=search_store.date_candidates(conn, q.memory, periods, q.filters, limit=DATE_CANDIDATES)
    )
