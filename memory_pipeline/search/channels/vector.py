"""The vector channel: chunks nearest the query's vector, re-scored by their best paragraph window."""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field

from memory_pipeline.domain.calibration import Calibration
from memory_pipeline.search.channels.base import ChannelQuery, ChannelResult, query_vector_for
from memory_pipeline.storage.profiles_store import (
    Serving,
    ServingRead,
    StoredProfile,
    candidate_in,
    serving_in,
)
from memory_pipeline.storage.vector_store import EXACT_MAX_ROWS, VectorHit, nearest_chunks

VECTOR_CANDIDATES = 50
# The HNSW scan fetches this many chunks by chunk vector; their paragraph windows re-score them
# and the best VECTOR_CANDIDATES go to fusion, so a chunk whose one turn matches can climb past
# chunks that match only on average (the larger pool won on LoCoMo: benchmarks/README.md).
# hnsw.ef_search is already 100 (vector_store.MIN_EF_SEARCH), so the pool costs only its rows.
VECTOR_RESCORE_POOL = 100
# Memories whose last serving profile the channel remembers (``VectorChannel``).
REMEMBERED_MEMORIES = 64


@dataclass
class VectorResult(ChannelResult):
    """``status``: "ok", or "unavailable: <reason>" (keyword and graph answer alone);
    ``windows``: each candidate's best paragraph window, which its snippet centres on;
    ``calibration``: the serving profile's, read in the same round trip as the profile, which
    grades the results (``domain.grades``), and ``profile`` the serving profile itself (what
    later steps compare stored vectors under); both None when the channel had no vector."""

    status: str = "ok"
    windows: dict[str, int] = field(default_factory=dict)
    calibration: Calibration | None = None
    profile: StoredProfile | None = None


def vector_channel(conn, q: ChannelQuery) -> VectorResult:
    serving = (
        serving_in(conn, q.memory)
        if q.candidate is None
        else candidate_in(conn, q.candidate, q.memory)
    )
    vector, status = query_vector_for(serving.profile, serving.state, q)
    if vector is None or serving.profile is None:
        return VectorResult(status=status)
    return _result(_nearest(conn, q, serving, vector), status, serving)


def exact_scan(serving: Serving) -> bool:
    """A small memory's rows are compared exactly: cheaper than a graph of mostly other memories."""
    return serving.rows is not None and serving.rows <= EXACT_MAX_ROWS


def _nearest(
    conn, q: ChannelQuery, serving: Serving, vector, read: ServingRead | None = None
) -> list[VectorHit]:
    assert serving.profile is not None
    return nearest_chunks(
        conn,
        serving.profile,
        q.memory,
        vector,
        limit=VECTOR_RESCORE_POOL,
        kinds=q.filters.kinds,
        since=q.filters.since,
        until=q.filters.until,
        by_windows=True,
        exact=exact_scan(serving),
        # The candidates' rows come with them, in the same statement (one round trip fewer).
        with_rows=VECTOR_CANDIDATES if q.with_rows else 0,
        serving=read,
    )[:VECTOR_CANDIDATES]


def _result(found: list[VectorHit], status: str, serving: Serving) -> VectorResult:
    return VectorResult(
        hits=[(h.chunk_id, 1.0 - h.distance) for h in found],
        rows={h.chunk_id: h.row for h in found if h.row is not None},
        status=status,
        windows={h.chunk_id: h.window for h in found if h.window is not None},
        calibration=serving.calibration,
        profile=serving.profile,
    )


class VectorChannel:
    """The channel, remembering the serving profile each memory's last search read, so the next
    search need not wait for that read before its statement: it embeds the query and runs the
    statement as the profile was, reading the profile again in the same round trip. When what
    shaped the statement changed since (the profile or its generation, the generation's state,
    the memory crossing ``EXACT_MAX_ROWS``), the search starts over from the new reading; so
    what it returns is always what ``vector_channel`` returns, one round trip sooner."""

    def __init__(self) -> None:
        self._last: OrderedDict[str, Serving] = OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, conn, q: ChannelQuery) -> VectorResult:
        if q.candidate is not None:  # the quality guard's generation: read as it is
            return vector_channel(conn, q)
        with self._lock:
            last = self._last.get(q.memory)
        serving = None
        if last is not None and last.profile is not None:
            vector, status = query_vector_for(last.profile, last.state, q)
            if vector is not None:
                read = ServingRead(q.memory)
                found = _nearest(conn, q, last, vector, read)
                assert read.serving is not None
                if _same_statement(read.serving, last):
                    self._remember(q.memory, read.serving)
                    return _result(found, status, read.serving)
                serving = read.serving  # read in that round trip: start over from it
        if serving is None:
            serving = serving_in(conn, q.memory)
        self._remember(q.memory, serving)
        vector, status = query_vector_for(serving.profile, serving.state, q)
        if vector is None or serving.profile is None:
            return VectorResult(status=status)
        return _result(_nearest(conn, q, serving, vector), status, serving)

    def _remember(self, memory: str, serving: Serving) -> None:
        with self._lock:
            self._last[memory] = serving
            self._last.move_to_end(memory)
            while len(self._last) > REMEMBERED_MEMORIES:
                self._last.popitem(last=False)


def _same_statement(now: Serving, then: Serving) -> bool:
    """Whether a statement run under ``then`` is the one ``now`` would run, and its answer
    what ``query_vector_for`` would let through."""
    return (
        now.profile == then.profile
        and now.state == then.state
        and (exact_scan(now) == exact_scan(then))
    )
