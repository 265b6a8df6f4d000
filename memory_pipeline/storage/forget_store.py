"""Forgetting: an episode or a whole memory, with everything derived from it, in one transaction.

What goes: the episodes, their chunks, vectors of every profile and generation that no remaining
chunk of the memory shares, entity mentions and the proper names extracted from them, extracted
entities left without a mention (a whole memory: all its entities), the memory's keyword
statistics (recounted, or dropped with the memory) and the search telemetry rows that name the
episodes' chunks (a whole memory: all its rows), the observations and beliefs drawn only
from forgotten episodes (the others lose the forgotten citations; a whole memory: all of them),
and the labelled questions that expect a forgotten episode or statement (a whole memory: all
its questions and their figures).
The report (``ForgetCounts``) counts the rows deleted from every one of these tables.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

import psycopg
from psycopg import sql

from memory_pipeline.storage import keyword_stats_store
from memory_pipeline.storage.database import one_row
from memory_pipeline.storage.paths import query


@dataclass
class ForgetCounts:
    """Rows deleted, per table (the report a caller shows), and the ingest days touched.

    The named fields are the ones a person reads first; ``tables`` has every table the
    forgetting deleted from, rows cascaded by a foreign key included (counted before they go),
    so no kind of row can be deleted without being counted. ``statements_trimmed``: statements
    kept (they also cite a kept episode) that lost the forgotten citations."""

    episodes: int = 0
    chunks: int = 0
    vectors: int = 0
    mentions: int = 0
    entities: int = 0
    telemetry: int = 0
    statements: int = 0
    statement_vectors: int = 0
    statements_trimmed: int = 0
    tables: dict[str, int] = field(default_factory=dict)
    ingest_days: list[dt.date] = field(default_factory=list)

    @property
    def anything(self) -> bool:
        return any(self.tables.values()) or self.statements_trimmed > 0

    def to_json(self) -> dict:
        return {
            "episodes": self.episodes,
            "chunks": self.chunks,
            "vectors": self.vectors,
            "mentions": self.mentions,
            "entities": self.entities,
            "telemetry": self.telemetry,
            "statements": self.statements,
            "statementVectors": self.statement_vectors,
            "statementsTrimmed": self.statements_trimmed,
            "tables": dict(sorted(self.tables.items())),
            "ingestDays": [d.isoformat() for d in self.ingest_days],
        }


def _count(conn: psycopg.Connection, statement, *params) -> int:
    return one_row(conn, statement, params)[0]


def _rows_of(conn: psycopg.Connection, table: str, memory: str) -> int:
    return _count(
        conn,
        sql.SQL("SELECT count(*) FROM {} WHERE memory = %s").format(sql.Identifier(table)),
        memory,
    )


def forget(
    conn: psycopg.Connection, memory: str, episode_ids: list[int] | None = None
) -> ForgetCounts:
    """Delete ``episode_ids`` of ``memory`` (None: the whole memory) and what derives from them.

    Ids of other memories are not touched. The episodes' rows are locked first: an index pass
    writing one of them finishes before this deletes it, and one that starts later finds it
    gone and skips it (``index_store.write_episodes`` locks the rows it writes). A whole memory
    goes even when it holds no episode at all: one that holds only statements (an agent that
    only observes, or a mistyped ``observe --memory``) is forgotten like any other.
    """
    whole = episode_ids is None
    counts = ForgetCounts()
    tables = counts.tables
    with conn.transaction():
        rows = conn.execute(
            query("forget_lock_episodes"),
            {"memory": memory, "whole": whole, "ids": list(episode_ids or [])},
        ).fetchall()
        if not rows and not whole:
            return counts
        ids = [r[0] for r in rows]
        # Questions go by cascade with the episode or statement they expect: counted by difference.
        questions_held = _rows_of(conn, "retrieval_questions", memory)
        counts.ingest_days = sorted({r[1] for r in rows})
        chunk_ids = [
            r[0]
            for r in conn.execute(
                "SELECT DISTINCT chunk_id FROM chunks WHERE episode_id = ANY(%s)", (ids,)
            ).fetchall()
        ]
        _count_cascades(conn, ids, tables)
        if whole:
            _forget_memory_statements(conn, memory, tables)
        else:
            _forget_episode_statements(conn, memory, ids, chunk_ids, counts)
        tables["episodes"] = conn.execute(
            "DELETE FROM episodes WHERE id = ANY(%s)", (ids,)
        ).rowcount
        if whole:
            _forget_memory_index(conn, memory, tables)
        else:
            _forget_episode_index(conn, memory, chunk_ids, tables)
        tables["retrieval_questions"] = questions_held - _rows_of(
            conn, "retrieval_questions", memory
        )
    counts.episodes, counts.chunks = tables["episodes"], tables["chunks"]
    counts.vectors, counts.mentions = tables["embeddings"], tables["entity_mentions"]
    counts.entities, counts.telemetry = tables["entities"], tables["search_telemetry"]
    counts.statements = tables["observations"]
    counts.statement_vectors = tables["observation_embeddings"]
    return counts


def _count_cascades(conn: psycopg.Connection, ids: list[int], tables: dict[str, int]) -> None:
    """What goes with the episodes by ON DELETE CASCADE, counted while it is still there."""
    for table in ("chunks", "entity_mentions", "episode_names", "keyword_champions"):
        tables[table] = _count(
            conn,
            sql.SQL("SELECT count(*) FROM {} WHERE episode_id = ANY(%s)").format(
                sql.Identifier(table)
            ),
            ids,
        )


def _forget_memory_statements(
    conn: psycopg.Connection, memory: str, tables: dict[str, int]
) -> None:
    """A whole memory's telemetry, observations and beliefs (their vectors by cascade)."""
    tables["search_telemetry"] = conn.execute(
        "DELETE FROM search_telemetry WHERE memory = %s", (memory,)
    ).rowcount
    tables["observation_embeddings"] = _rows_of(conn, "observation_embeddings", memory)
    tables["observations"] = conn.execute(
        query("observation_forget_memory"), {"memory": memory}
    ).rowcount


def _forget_episode_statements(
    conn: psycopg.Connection,
    memory: str,
    ids: list[int],
    chunk_ids: list[str],
    counts: ForgetCounts,
) -> None:
    """The telemetry that shows the episodes' chunks, and the statements drawn from them."""
    tables = counts.tables
    tables["search_telemetry"] = (
        conn.execute(query("forget_telemetry"), {"memory": memory, "chunk_ids": chunk_ids}).rowcount
        if chunk_ids
        else 0
    )
    # A statement drawn only from forgotten episodes would keep their content alive.
    deleted, vectors, trimmed = one_row(
        conn,
        query("observation_forget_episodes"),
        {"memory": memory, "episode_ids": ids, "chunk_ids": chunk_ids},
    )
    tables["observations"], tables["observation_embeddings"] = deleted, vectors
    counts.statements_trimmed = trimmed


def _forget_memory_index(conn: psycopg.Connection, memory: str, tables: dict[str, int]) -> None:
    """A whole memory's vectors, entities, keyword statistics and champion lists."""
    for table in ("embeddings", "entities", "keyword_stats", "keyword_memory_stats"):
        tables[table] = conn.execute(
            sql.SQL("DELETE FROM {} WHERE memory = %s").format(sql.Identifier(table)), (memory,)
        ).rowcount
    # Its lists go with the state (a cascade); their rows went with the chunks.
    tables["keyword_champion_lists"] = _rows_of(conn, "keyword_champion_lists", memory)
    tables["keyword_champion_state"] = conn.execute(
        "DELETE FROM keyword_champion_state WHERE memory = %s", (memory,)
    ).rowcount
    # A whole memory's labelled questions and its quality figures go with it.
    conn.execute("DELETE FROM retrieval_questions WHERE memory = %s", (memory,))
    tables["retrieval_quality"] = conn.execute(
        "DELETE FROM retrieval_quality WHERE memory = %s", (memory,)
    ).rowcount


def _forget_episode_index(
    conn: psycopg.Connection, memory: str, chunk_ids: list[str], tables: dict[str, int]
) -> None:
    """The vectors only the episodes' chunks had, entities left unmentioned, and the keyword
    statistics recounted without the episodes."""
    tables["embeddings"] = (
        conn.execute(query("forget_vectors"), {"memory": memory, "chunk_ids": chunk_ids}).rowcount
        if chunk_ids
        else 0
    )
    tables["entities"] = conn.execute(query("forget_orphan_entities"), {"memory": memory}).rowcount
    # The recount drops the lexemes only the forgotten chunks had.
    stats = ("keyword_stats", "keyword_memory_stats")
    held = {t: _rows_of(conn, t, memory) for t in stats}
    keyword_stats_store.recompute(conn, [memory])
    tables.update({t: max(0, held[t] - _rows_of(conn, t, memory)) for t in stats})
