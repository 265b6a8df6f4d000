"""Nearest chunks by cosine distance through the active profile's HNSW index, optionally re-scored
by their paragraph windows."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import numpy as np
import psycopg
from pgvector import HalfVector
from psycopg import sql

from memory_pipeline.storage.database import one_trip_transaction
from memory_pipeline.storage.hnsw_store import generation_query, index_expression
from memory_pipeline.storage.paths import query
from memory_pipeline.storage.profiles_store import ServingRead, StoredProfile
from memory_pipeline.storage.search_store import ChunkRow

POLICY_FILTER = (
    "AND EXISTS (SELECT 1 FROM chunks c JOIN episodes e ON e.id = c.episode_id "
    "WHERE c.memory = v.memory AND c.chunk_id = v.chunk_id "
    "AND (%(kinds)s::text[] IS NULL OR e.kind = ANY(%(kinds)s::text[])) "
    "AND (%(since)s::timestamptz IS NULL OR e.occurred_at >= %(since)s::timestamptz) "
    "AND episode_in_force(e.occurred_at, e.current_from, e.superseded_at, %(until)s::timestamptz)) "
)

# pgvector returns at most ef_search rows from an HNSW scan, so it must cover the candidates asked
# for (the service asks for 100). At 100 recall@10 against exact search on 100k topic-clustered
# vectors measured 0.967-0.989 over four runs (ef_construction 128); 200 bought +0.000 to +0.022
# for 1.7-2.2 ms more at p50 (benchmarks/bench_search_latency.py).
MIN_EF_SEARCH = 100
# A memory of at most this many chunk rows is searched exactly (``nearest_query(exact=True)``):
# reading its rows through the primary key and comparing each is cheaper than walking a graph
# whose nodes are mostly other memories' (pgvector's iterative scan then visits thousands of
# them), and it is exact (benchmarks/README.md: bench_many_memories.py).
EXACT_MAX_ROWS = 2000


def hnsw_rows(
    conn: psycopg.Connection,
    hnsw_query: sql.Composed,
    params: dict,
    *,
    ef_search: int,
    serving: ServingRead | None = None,
) -> list[tuple]:
    """The rows of one ``hnsw_query`` with ``hnsw.ef_search`` and pgvector's relaxed iterative
    scan set for it alone (a transaction's local settings).

    BEGIN, the settings, the query and COMMIT cost one round trip to the server instead of
    four (``one_trip_transaction``), which is most of a vector search's wait on a busy machine.
    ``serving``: read first, in the same round trip.
    """
    with one_trip_transaction(conn):
        read = serving.send(conn) if serving is not None else None
        conn.execute(query("vector_search_settings"), (str(ef_search),))
        cursor = conn.execute(hnsw_query, params)
    if read is not None:
        read()
    return cursor.fetchall()


@dataclass(frozen=True)
class VectorHit:
    memory: str
    chunk_id: str
    distance: float
    window: int | None = (
        None  # by_windows: the nearest paragraph window (0-based), None = the chunk
    )
    row: ChunkRow | None = None  # with_rows: its search-result row, texts unread


def nearest_query(
    profile: StoredProfile,
    *,
    filtered: bool,
    by_windows: bool,
    exact: bool = False,
    with_rows: bool = False,
) -> sql.Composed:
    """The query ``nearest_chunks`` runs (parameters: q, memory, limit, kinds, since, until;
    ``with_rows``: also rows, ``vector_nearest_rows.sql``).

    ``exact``: ordered by an expression the HNSW index does not serve (the distance + 0), so the
    memory's rows are read through the primary key (profile, generation, memory, ...) and sorted:
    every one of its vectors compared, none of the other memories' visited."""
    expr = index_expression(profile)
    near = generation_query(
        "vector_nearest",
        profile,
        expr=expr,
        policy_filter=sql.SQL(POLICY_FILTER if filtered else ""),
        windows=sql.SQL(", windows" if by_windows else ""),
        order=sql.SQL(
            "({expr} <=> %(q)s::halfvec({dim})) + 0"
            if exact
            else "{expr} <=> %(q)s::halfvec({dim})"
        ).format(expr=expr, dim=sql.Literal(profile.dim)),
    )
    if not by_windows:
        ranked = sql.SQL(
            "SELECT memory, chunk_id, distance, NULL::int FROM ({near}) AS near"
        ).format(near=near)
    else:  # MATERIALIZED: the LIMIT applies first, so only the candidates' windows are read.
        ranked = sql.SQL(query("vector_nearest_windows")).format(
            near=near, dim=sql.Literal(profile.dim)
        )
    if not with_rows:
        return ranked
    return sql.SQL(query("vector_nearest_rows")).format(ranked=ranked)


def nearest_chunks(
    conn: psycopg.Connection,
    profile: StoredProfile,
    memory: str,
    query_vector: np.ndarray,
    *,
    limit: int = 50,
    ef_search: int | None = None,
    kinds: list[str] | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    by_windows: bool = False,
    exact: bool = False,
    with_rows: int = 0,
    serving: ServingRead | None = None,
) -> list[VectorHit]:
    """Up to ``limit`` chunk ids of ``memory`` nearest to ``query_vector``.

    The memory filter is applied inside the index scan; pgvector 0.8's iterative scan keeps
    walking the graph until ``limit`` rows of this memory are found instead of returning fewer.
    Profile id and generation go in as literals because the partial index's predicate can only
    be matched against constants. A policy's kinds and time window are checked per row during
    the same scan, so a filtering policy still gets ``limit`` candidates when they exist.

    ``by_windows``: each candidate's distance becomes that of its nearest view, the chunk's
    paragraph windows (``domain.windows``) or, for a chunk without windows, the chunk vector, and
    the candidates are re-ordered by it. The HNSW scan still picks the candidates by chunk vector;
    the windows only re-score them, in the same query.

    ``exact``: every vector of the memory compared instead (``nearest_query``): what a memory of
    few rows takes (``EXACT_MAX_ROWS``), where the graph, shared with every other memory, would be
    walked far for the few of its nodes that are this memory's.

    ``with_rows``: the first that many hits (and any tied with the last of them) carry their
    search-result rows (``search_store.chunk_rows`` without texts), read in the same statement.
    ``serving``: the serving profile read again in the same round trip, before the statement.
    """
    nearest = nearest_query(
        profile,
        filtered=bool(kinds or since or until),
        by_windows=by_windows,
        exact=exact,
        with_rows=with_rows > 0,
    )
    rows = hnsw_rows(
        conn,
        nearest,
        {
            "q": HalfVector(query_vector),
            "memory": memory,
            "limit": limit,
            "kinds": kinds,
            "since": since,
            "until": until,
            "rows": with_rows,
        },
        ef_search=max(ef_search or 0, limit, MIN_EF_SEARCH),
        serving=serving,
    )
    hits = (VectorHit(r[0], r[1], float(r[2]), r[3], _row(r) if with_rows else None) for r in rows)
    # relaxed_order may return rows slightly out of order, and windows re-score them: sort.
    return sorted(hits, key=lambda h: h.distance)


def _row(r: tuple) -> ChunkRow | None:
    """The search-result row a ``vector_nearest_rows.sql`` row carries; None: none read."""
    if r[4] is None:
        return None
    return ChunkRow(r[1], r[4], r[5], r[6], r[7], r[8], r[9], r[10], None, r[11])


def cosines_to(
    conn: psycopg.Connection,
    profile: StoredProfile,
    memory: str,
    chunk_id: str,
    others: list[str],
) -> dict[str, float]:
    """How alike ``chunk_id`` is to each of ``others`` (cosine of their stored vectors in
    ``profile``'s generation); a chunk without a vector there is left out."""
    rows = conn.execute(
        query("chunk_cosines"),
        {
            "profile_id": profile.id,
            "generation": profile.generation,
            "memory": memory,
            "chunk_id": chunk_id,
            "others": others,
        },
    ).fetchall()
    return {chunk: float(cosine) for chunk, cosine in rows}
