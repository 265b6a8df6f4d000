"""Store oracles for tests and benchmarks: what the tables hold, counted or read straight.

The product keeps these numbers incrementally; a test compares them with a count from scratch.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import psycopg

from memory_pipeline.embedders.base import EmbeddingProfile
from memory_pipeline.storage import entities_store, profiles_store
from memory_pipeline.storage.database import one_row
from memory_pipeline.storage.observations_store import index_name
from memory_pipeline.storage.profiles_store import StoredProfile


@dataclass(frozen=True)
class MemoryStats:
    chunks: int
    total_lexemes: int
    episodes: int  # episodes with chunk rows


def stored_stats(
    conn: psycopg.Connection, memory: str
) -> tuple[MemoryStats | None, dict[str, int]]:
    """The keyword statistics as stored for ``memory`` (None: no row)."""
    row = conn.execute(
        "SELECT chunks, total_lexemes, episodes FROM keyword_memory_stats WHERE memory = %s",
        (memory,),
    ).fetchone()
    df: dict[str, int] = dict(
        conn.execute("SELECT lexeme, df FROM keyword_stats WHERE memory = %s", (memory,)).fetchall()
    )
    return (MemoryStats(*row) if row else None), df


def counted_stats(
    conn: psycopg.Connection, memory: str
) -> tuple[MemoryStats | None, dict[str, int]]:
    """The keyword statistics of ``memory`` counted from its chunks now (what ``recompute`` stores)."""
    row = conn.execute(
        "SELECT count(*), sum(length(tsv)), count(DISTINCT episode_id) FROM chunks WHERE memory = %s"
        " HAVING count(*) > 0",
        (memory,),
    ).fetchone()
    df: dict[str, int] = dict(
        conn.execute(
            """SELECT u.lexeme, count(*) FROM chunks c, unnest(tsvector_to_array(c.tsv)) AS u(lexeme)
               WHERE c.memory = %s GROUP BY u.lexeme""",
            (memory,),
        ).fetchall()
    )
    return (MemoryStats(row[0], int(row[1]), row[2]) if row else None), df


def observation_index_state(conn: psycopg.Connection, profile: StoredProfile) -> dict:
    """The observations' HNSW index under ``profile``: whether it exists and is valid, its size."""
    row = conn.execute(
        "SELECT i.indisvalid, pg_relation_size(c.oid) FROM pg_class c "
        "JOIN pg_index i ON i.indexrelid = c.oid WHERE c.relname = %s",
        (index_name(profile),),
    ).fetchone()
    vectors = one_row(
        conn,
        "SELECT count(*) FROM observation_embeddings WHERE profile_id = %s AND generation = %s",
        (profile.id, profile.generation),
    )[0]
    return {
        "name": index_name(profile),
        "exists": row is not None,
        "valid": bool(row and row[0]),
        "size_bytes": int(row[1]) if row else 0,
        "vectors": vectors,
    }


def refresh_memories(
    conn: psycopg.Connection, memories: Iterable[str], report: entities_store.EntityReport
) -> None:
    """Extract, promote and link entities for whole memories at once (a test's setup)."""
    for memory in sorted(set(memories)):
        ids = [
            r[0]
            for r in conn.execute(
                "SELECT id FROM episodes WHERE memory = %s AND superseded_at IS NULL ORDER BY id",
                (memory,),
            )
        ]
        entities_store.extract_episode_names(conn, ids, report)
        entities_store.promote_recurring(conn, memory, report)
        entities_store.link_mentions(conn, memory, report)
        report.memories += 1


def activate_profile(conn: psycopg.Connection, profile: EmbeddingProfile) -> StoredProfile:
    """Register ``profile`` and make it active at once (for loading vectors directly)."""
    stored = profiles_store.register_profile(conn, profile)
    if not stored.is_active:
        profiles_store.promote(conn, stored)
    else:
        profiles_store.mark_built(conn, stored.id, stored.generation)
    return profiles_store.get_profile(conn, profile)  # type: ignore[return-value]
