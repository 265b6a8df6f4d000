"""Health and statistics queries: vector integrity, index recall, backlog age, daily stats, the
server's buffers."""

from __future__ import annotations

import datetime as dt

import numpy as np
import psycopg
from psycopg.types.json import Jsonb

from memory_pipeline.storage.database import one_row
from memory_pipeline.storage.index_store import count_summary
from memory_pipeline.storage.paths import query
from memory_pipeline.storage.profiles_store import StoredProfile
from memory_pipeline.storage.vector_store import nearest_chunks, nearest_query


def vector_integrity(conn: psycopg.Connection, profile: StoredProfile) -> dict:
    """Missing vectors, wrong dimensions and non-unit vectors (chunk and window vectors alike) for
    one (profile, generation)."""
    missing = one_row(
        conn,
        query("health_chunks_without_vectors"),
        (profile.id, profile.generation),
    )[0]
    # Every vector of a row counts: the chunk's and its paragraph windows' (domain.windows).
    rows, windows, wrong_dim, not_unit = one_row(
        conn,
        query("health_vector_integrity"),
        (profile.dim, profile.id, profile.generation),
    )
    return {
        "vectors": rows,
        "window_vectors": windows,
        "missing": missing,
        "wrong_dimension": wrong_dim,
        "not_normalized": not_unit,
    }


def index_recall(
    conn: psycopg.Connection, profile: StoredProfile, *, sample: int = 50, k: int = 10
) -> float | None:
    """Recall@k of the HNSW index against exact search, with stored vectors as queries.

    The approximate side is ``vector_store.nearest_chunks`` itself (the ef_search search uses);
    the exact side is the same query with index scans off (a sequential scan and a sort).
    """
    queries = conn.execute(
        query("health_recall_sample"),
        (profile.id, profile.generation, sample),
    ).fetchall()
    if not queries:
        return None
    exact_query = nearest_query(profile, filtered=False, by_windows=False)
    found = total = 0
    for memory, vector in queries:
        query_vector = np.array(vector.to_list(), dtype=np.float32)
        approx = {h.chunk_id for h in nearest_chunks(conn, profile, memory, query_vector, limit=k)}
        with conn.transaction():
            conn.execute("SET LOCAL enable_indexscan = off")
            exact = {
                r[1]
                for r in conn.execute(
                    exact_query,
                    {"q": vector, "memory": memory, "limit": k, "kinds": None, "since": None},
                )
            }
        found += len(approx & exact)
        total += len(exact)
    return found / total if total else None


def daily_stats(conn: psycopg.Connection, since: dt.datetime) -> dict:
    counts = count_summary(conn, None)
    per_kind: dict[str, int] = dict(
        conn.execute("SELECT kind, count(*) FROM episodes GROUP BY kind ORDER BY kind").fetchall()
    )
    searches, p50, p95, fallbacks, vector_down = one_row(
        conn,
        query("telemetry_daily_stats"),
        (since,),
    )
    return {
        "episodes": counts["episodes"],
        "chunks": counts["chunks"],
        "episodes_by_kind": per_kind,
        "searches": searches,
        "search_latency_p50_ms": round(p50, 2) if p50 is not None else None,
        "search_latency_p95_ms": round(p95, 2) if p95 is not None else None,
        "reranker_fallbacks": fallbacks,
        "vector_channel_unavailable": vector_down,
    }


def save_daily_stats(conn: psycopg.Connection, day: dt.date, stats: dict) -> None:
    conn.execute(
        query("pipeline_stats_save"),
        (day, Jsonb(stats)),
    )


def analyze(conn: psycopg.Connection) -> None:
    conn.execute(
        "ANALYZE episodes, chunks, embeddings, entities, entity_mentions, keyword_stats, keyword_memory_stats"
    )


def shared_buffers(conn: psycopg.Connection, *, files: bool) -> dict:
    """The server's ``shared_buffers`` now and, with ``files`` (a superuser's view of the
    configuration files: the embedded server's), the size they give it from its next start when
    that differs (``storage.embedded``: ``MEMORY_PIPELINE_EMBEDDED_SHARED_BUFFERS``)."""
    now = one_row(conn, "SELECT current_setting('shared_buffers')")[0]
    later = None
    if files:
        row = conn.execute(query("shared_buffers_in_files")).fetchone()
        if row is not None:
            same = one_row(
                conn,
                "SELECT pg_size_bytes(%s) = pg_size_bytes(current_setting('shared_buffers'))",
                (row[0],),
            )[0]
            later = None if same else row[0]
    return {"now": now, "nextStart": later}
