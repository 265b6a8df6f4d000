"""The vector channel: chunks nearest the query's vector, re-scored by their best paragraph window."""

from __future__ import annotations

from dataclasses import dataclass, field

from memory_pipeline.domain.calibration import Calibration
from memory_pipeline.search.channels.base import ChannelQuery, ChannelResult, query_vector_for
from memory_pipeline.storage.profiles_store import StoredProfile, candidate_in, serving_in
from memory_pipeline.storage.vector_store import EXACT_MAX_ROWS, nearest_chunks

VECTOR_CANDIDATES = 50
# The HNSW scan fetches this many chunks by chunk vector; their paragraph windows re-score them
# and the best VECTOR_CANDIDATES go to fusion, so a chunk whose one turn matches can climb past
# chunks that match only on average (the larger pool won on LoCoMo: benchmarks/README.md).
# hnsw.ef_search is already 100 (vector_store.MIN_EF_SEARCH), so the pool costs only its rows.
VECTOR_RESCORE_POOL = 100


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
    profile, rows = serving.profile, serving.rows
    vector, status = query_vector_for(profile, serving.state, q)
    if vector is None or profile is None:
        return VectorResult(status=status)
    found = nearest_chunks(
        conn,
        profile,
        q.memory,
        vector,
        limit=VECTOR_RESCORE_POOL,
        kinds=q.filters.kinds,
        since=q.filters.since,
        until=q.filters.until,
        by_windows=True,
        # A small memory's rows are compared exactly: cheaper than a graph of mostly other memories.
        exact=rows is not None and rows <= EXACT_MAX_ROWS,
        # The candidates' rows come with them, in the same statement (one round trip fewer).
        with_rows=VECTOR_CANDIDATES if q.with_rows else 0,
    )[:VECTOR_CANDIDATES]
    return VectorResult(
        hits=[(h.chunk_id, 1.0 - h.distance) for h in found],
        rows={h.chunk_id: h.row for h in found if h.row is not None},
        status=status,
        windows={h.chunk_id: h.window for h in found if h.window is not None},
        calibration=serving.calibration,
        profile=profile,
    )
