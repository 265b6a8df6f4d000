"""Per-ingest-day reads for the partitioned assets: what a day holds, and its checks' counts."""

from __future__ import annotations

import datetime as dt

import psycopg

from memory_pipeline.storage.database import one_row
from memory_pipeline.storage.paths import query
from memory_pipeline.storage.profiles_store import StoredProfile


def chunk_stats(conn: psycopg.Connection, day: dt.date) -> dict:
    """The day's chunks, their characters, and its episodes still without a chunk."""
    chunks, chars, unchunked, episodes = one_row(conn, query("day_chunk_stats"), {"day": day})
    return {
        "chunks": chunks,
        "characters": int(chars),
        "episodes_without_chunks": unchunked,
        "episodes": episodes,
    }


def vector_integrity(conn: psycopg.Connection, day: dt.date, profile: StoredProfile) -> dict:
    """Missing, mis-sized and non-unit vectors among the day's chunks for ``profile``'s generation."""
    row = one_row(
        conn,
        query("day_vector_integrity"),
        {
            "day": day,
            "profile_id": profile.id,
            "generation": profile.generation,
            "dim": profile.dim,
        },
    )
    names = ("chunks", "missing", "vectors", "window_vectors", "wrong_dimension", "not_normalized")
    return dict(zip(names, row))


def no_vectors(conn: psycopg.Connection, day: dt.date) -> dict:
    """``vector_integrity`` before any profile exists: every chunk of the day is missing."""
    stats = chunk_stats(conn, day)
    return {
        "chunks": stats["chunks"],
        "missing": stats["chunks"],
        "vectors": 0,
        "window_vectors": 0,
        "wrong_dimension": 0,
        "not_normalized": 0,
    }


def entity_stats(conn: psycopg.Connection, day: dt.date) -> dict:
    mentions, without_names = one_row(conn, query("day_entity_stats"), {"day": day})
    return {"mentions": mentions, "episodes_without_names": without_names}


def days_with_episodes(conn: psycopg.Connection) -> list[str]:
    """Every ingest day that holds episodes (ISO dates, oldest first): the partitions that should exist."""
    return [
        d.isoformat()
        for (d,) in conn.execute("SELECT DISTINCT ingest_day FROM episodes ORDER BY 1")
    ]
