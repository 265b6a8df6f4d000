"""Forgetting: an episode or a whole memory, with everything derived from it, in one transaction.

What goes: the episodes, their chunks, vectors of every profile and generation that no remaining
chunk of the memory shares, entity mentions and the proper names extracted from them, extracted
entities left without a mention (a whole memory: all its entities), the memory's keyword
statistics (recounted, or dropped with the memory) and the search telemetry rows that name the
episodes' chunks (a whole memory: all its rows), and the observations and beliefs drawn only
from forgotten episodes (the others lose the forgotten citations; a whole memory: all of them).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

import psycopg

from memory_pipeline.storage import keyword_stats_store
from memory_pipeline.storage.paths import query


@dataclass
class ForgetCounts:
    """Rows deleted, per table (the report a caller shows), and the ingest days touched."""

    episodes: int = 0
    chunks: int = 0
    vectors: int = 0
    mentions: int = 0
    entities: int = 0
    telemetry: int = 0
    ingest_days: list[dt.date] = field(default_factory=list)

    def to_json(self) -> dict:
        return {
            "episodes": self.episodes,
            "chunks": self.chunks,
            "vectors": self.vectors,
            "mentions": self.mentions,
            "entities": self.entities,
            "telemetry": self.telemetry,
            "ingestDays": [d.isoformat() for d in self.ingest_days],
        }


def forget(
    conn: psycopg.Connection, memory: str, episode_ids: list[int] | None = None
) -> ForgetCounts:
    """Delete ``episode_ids`` of ``memory`` (None: every episode of it) and what derives from them.

    Ids of other memories are not touched. The episodes' rows are locked first: an index pass
    writing one of them finishes before this deletes it, and one that starts later finds it
    gone and skips it (``index_store.write_episodes`` locks the rows it writes).
    """
    whole = episode_ids is None
    counts = ForgetCounts()
    with conn.transaction():
        rows = conn.execute(
            query("forget_lock_episodes"),
            {"memory": memory, "whole": whole, "ids": list(episode_ids or [])},
        ).fetchall()
        if not rows:
            return counts
        ids = [r[0] for r in rows]
        counts.ingest_days = sorted({r[1] for r in rows})
        chunk_ids = [
            r[0]
            for r in conn.execute(
                "SELECT DISTINCT chunk_id FROM chunks WHERE episode_id = ANY(%s)", (ids,)
            ).fetchall()
        ]
        counts.chunks = conn.execute(
            "SELECT count(*) FROM chunks WHERE episode_id = ANY(%s)", (ids,)
        ).fetchone()[0]
        counts.mentions = conn.execute(
            "SELECT count(*) FROM entity_mentions WHERE episode_id = ANY(%s)", (ids,)
        ).fetchone()[0]
        if whole:
            counts.telemetry = conn.execute(
                "DELETE FROM search_telemetry WHERE memory = %s", (memory,)
            ).rowcount
            # The memory's observations and beliefs go with it (their vectors by cascade).
            conn.execute(query("observation_forget_memory"), {"memory": memory})
        else:
            if chunk_ids:
                counts.telemetry = conn.execute(
                    query("forget_telemetry"), {"memory": memory, "chunk_ids": chunk_ids}
                ).rowcount
            # A statement drawn only from forgotten episodes would keep their content alive.
            conn.execute(
                query("observation_forget_episodes"),
                {"memory": memory, "episode_ids": ids, "chunk_ids": chunk_ids},
            )
        # chunks, episode_names and entity_mentions go with their episode (ON DELETE CASCADE).
        counts.episodes = conn.execute("DELETE FROM episodes WHERE id = ANY(%s)", (ids,)).rowcount
        if whole:
            counts.vectors = conn.execute(
                "DELETE FROM embeddings WHERE memory = %s", (memory,)
            ).rowcount
            counts.entities = conn.execute(
                "DELETE FROM entities WHERE memory = %s", (memory,)
            ).rowcount
            conn.execute("DELETE FROM keyword_stats WHERE memory = %s", (memory,))
            conn.execute("DELETE FROM keyword_memory_stats WHERE memory = %s", (memory,))
            # Its lists go with the state; their rows went with the chunks.
            conn.execute("DELETE FROM keyword_champion_state WHERE memory = %s", (memory,))
        else:
            if chunk_ids:
                counts.vectors = conn.execute(
                    query("forget_vectors"), {"memory": memory, "chunk_ids": chunk_ids}
                ).rowcount
            counts.entities = conn.execute(
                query("forget_orphan_entities"), {"memory": memory}
            ).rowcount
            keyword_stats_store.recompute(conn, [memory])
    return counts
