"""The SQL side of search: keyword, graph and date channels, entity lookup, result rows, telemetry.

The vector channel lives in ``vector_store`` (it shares the HNSW index expression).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

import psycopg
from psycopg.types.json import Jsonb

from memory_pipeline.storage import keyword_store
from memory_pipeline.storage.database import one_row, one_trip_transaction
from memory_pipeline.storage.paths import query


@dataclass(frozen=True)
class Filters:
    """A policy's restrictions, as SQL parameters (None = unrestricted). ``until``: a search as
    of a moment (exclusive): only the episodes in force before it (migration 0034's
    ``episode_in_force``: occurred by then, and the revision of their source current then)."""

    kinds: list[str] | None = None
    since: dt.datetime | None = None
    until: dt.datetime | None = None

    def params(self) -> dict:
        return {"kinds": self.kinds, "since": self.since, "until": self.until}


def memory_exists(conn: psycopg.Connection, memory: str) -> bool:
    """A memory exists once it holds an episode or a statement (an agent may write only those)."""
    return one_row(
        conn,
        query("memory_exists"),
        {"m": memory},
    )[0]


def query_lexemes(conn: psycopg.Connection, text: str) -> list[str]:
    """The query's lexemes under the same configuration as the stored ``chunks.tsv``."""
    row = one_row(
        conn,
        "SELECT coalesce(array_agg(lexeme ORDER BY lexeme), '{}') FROM unnest(to_tsvector('english', %s))",
        (text,),
    )
    return list(row[0])


# How many of a memory's newest episodes a search looks at for ones no index pass has chunked yet
# (``pending_in_memory``): each costs a primary-key probe into chunks.
PENDING_WINDOW = 200
PENDING_MATCH_CHARS = 20_000
PENDING_SNIPPET_CHARS = 300


@dataclass(frozen=True)
class PendingEpisode:
    """An episode stored but not chunked yet: no channel can find it."""

    id: int
    title: str
    kind: str
    occurred_at: dt.datetime
    matches: bool  # its title or body holds a word of the query (within the policy's filters)
    head: str  # the start of its body


def pending_in_memory(
    conn: psycopg.Connection,
    memory: str,
    text: str,
    filters: Filters,
    *,
    window: int = PENDING_WINDOW,
) -> list[PendingEpisode]:
    """The memory's newest ``window`` episodes that no chunk holds, newest first
    (``pending_in_memory.sql``)."""
    rows = conn.execute(
        query("pending_in_memory"),
        {
            "memory": memory,
            "text": text,
            "window": window,
            "chars": PENDING_MATCH_CHARS,
            "snippet": PENDING_SNIPPET_CHARS,
            **filters.params(),
        },
    ).fetchall()
    return [PendingEpisode(*row) for row in rows]


@dataclass(frozen=True)
class SupersededEpisode:
    """A superseded revision (migration 0031) holding a word of the query: out of the index, so
    only a search with history finds it (``superseded_matches``)."""

    id: int
    title: str
    kind: str
    occurred_at: dt.datetime
    superseded_at: dt.datetime
    superseded_by: int | None
    rank: float  # ts_rank of its title and body for the query's words
    head: str  # the start of its body


# At most this many superseded revisions are ranked per tier of ``history_matches.sql`` (those
# holding every word of the query, then any): each costs its text parsed again for ts_rank.
HISTORY_CANDIDATES = 200


def superseded_matches(
    conn: psycopg.Connection, memory: str, text: str, filters: Filters, *, limit: int
) -> list[SupersededEpisode]:
    """The memory's superseded revisions holding the words of ``text`` (every one first, then
    any), best first (``history_matches.sql``, through a partial GIN index over superseded rows
    only, at most ``HISTORY_CANDIDATES`` ranked per tier)."""
    rows = conn.execute(
        query("history_matches"),
        {
            "memory": memory,
            "text": text,
            "limit": limit,
            "cap": HISTORY_CANDIDATES,
            "chars": PENDING_MATCH_CHARS,
            **filters.params(),
        },
    ).fetchall()
    return [SupersededEpisode(*row) for row in rows]


def keyword_candidates(
    conn: psycopg.Connection, memory: str, text: str, filters: Filters, *, limit: int = 50
) -> tuple[list[tuple[str, float]], str]:
    """(ranked (chunk_id, score) list, method): BM25 full text, else the literal substring
    (``keyword_store``: the planner that keeps it fast in large memories)."""
    hits = keyword_store.scored_candidates(conn, memory, text, filters, limit)
    return hits.rows, hits.method


def keyword_hits(
    conn: psycopg.Connection, memory: str, text: str, filters: Filters, *, limit: int = 50
) -> keyword_store.KeywordHits:
    """``keyword_candidates`` with the query's lexeme statistics (``keyword_store.KeywordHits``),
    which fusion weighs the scores against."""
    return keyword_store.scored_candidates(conn, memory, text, filters, limit)


@dataclass(frozen=True)
class StoredEntity:
    id: int
    name: str
    aliases: tuple[str, ...]


def memory_entities(conn: psycopg.Connection, memory: str) -> list[StoredEntity]:
    """The memory's entities (names and aliases only: matching the query needs nothing else)."""
    rows = conn.execute(
        "SELECT id, name, aliases FROM entities WHERE memory = %s ORDER BY id", (memory,)
    ).fetchall()
    return [StoredEntity(i, n, tuple(a)) for i, n, a in rows]


def entities_version(conn: psycopg.Connection, memory: str) -> int | None:
    """Changes whenever the memory's entities change (``entity_versions``, kept by triggers on
    ``entities``: migration 0019); None for a memory that never had entities."""
    row = conn.execute(
        "SELECT version FROM entity_versions WHERE memory = %s", (memory,)
    ).fetchone()
    return row[0] if row else None


def graph_rule_counts(
    conn: psycopg.Connection, memory: str, entity_ids: list[int]
) -> tuple[dict[int, int], int]:
    """What the graph channel's rule weighs, in one round trip (``graph_rule_counts.sql``): for
    the given entities of ``memory`` only, how many episodes mention each, as kept by the
    triggers on ``entity_mentions`` (``entity_mention_deltas``, migration 0022); and how many of
    its episodes have chunks (0 when none has, or none of them is mentioned)."""
    rows = conn.execute(
        query("graph_rule_counts"), {"memory": memory, "entity_ids": entity_ids}
    ).fetchall()
    counts = {entity_id: mentions for entity_id, mentions, _ in rows}
    return {i: counts.get(i, 0) for i in entity_ids}, (rows[0][2] if rows else 0)


# Above this share of a memory's episodes, walking episodes newest first finds the mentioning
# ones sooner than sorting every mention; below it, starting from the mentions is cheaper.
RECENCY_WALK_SHARE = 0.02


def graph_candidates(
    conn: psycopg.Connection,
    memory: str,
    entity_ids: list[int],
    filters: Filters,
    *,
    limit: int = 25,
    mentions: int = 0,
    episodes: int = 0,
) -> list[tuple[str, float]]:
    if not entity_ids:
        return []
    common = episodes > 0 and mentions > RECENCY_WALK_SHARE * episodes
    rows = conn.execute(
        query("graph_chunks_recent_first" if common else "graph_chunks"),
        {"memory": memory, "entity_ids": entity_ids, "limit": limit, **filters.params()},
    ).fetchall()
    return [(c, float(s)) for c, s in rows]


def date_candidates(
    conn: psycopg.Connection,
    memory: str,
    periods: Sequence[tuple[dt.datetime, dt.datetime]],
    filters: Filters,
    *,
    limit: int = 50,
) -> list[tuple[str, float]]:
    """(chunk_id, 1.0) for the chunks of episodes that occurred within any of ``periods``
    ([start, end)), newest episode first (``date_chunks.sql``)."""
    if not periods:
        return []
    rows = conn.execute(
        query("date_chunks"),
        {
            "memory": memory,
            "starts": [s for s, _ in periods],
            "ends": [e for _, e in periods],
            "limit": limit,
            **filters.params(),
        },
    ).fetchall()
    return [(c, float(s)) for c, s in rows]


@dataclass(frozen=True)
class ChunkRow:
    chunk_id: str
    episode_id: int
    title: str
    kind: str
    occurred_at: dt.datetime
    salience: float
    start: int
    end: int
    text: str | None  # None: not read (``chunk_rows(..., texts=False)``)
    anchor: str  # the headings above the chunk, "" for none (domain.anchors)


def chunk_rows(
    conn: psycopg.Connection, memory: str, chunk_ids: list[str], *, texts: bool = True
) -> dict[str, ChunkRow]:
    """The rows of ``chunk_ids`` in ``memory``; ``texts=False`` leaves the texts unread (None): a
    search fuses ~125 candidates and shows a few (``chunk_texts``), and reading a text costs
    more than the rest of its row."""
    if not chunk_ids:
        return {}
    rows = conn.execute(
        query("search_results"), {"memory": memory, "chunk_ids": chunk_ids, "texts": texts}
    ).fetchall()
    return {r[0]: ChunkRow(*r) for r in rows}


def chunk_texts(conn: psycopg.Connection, memory: str, chunk_ids: list[str]) -> dict[str, str]:
    """The texts of ``chunk_ids`` in ``memory`` (what ``chunk_rows`` reads for them)."""
    rows = chunk_rows(conn, memory, chunk_ids).items()
    return {cid: row.text for cid, row in rows if row.text is not None}


def record_telemetry(conn: psycopg.Connection, row: dict) -> None:
    """One search's telemetry row. Its commit does not wait for the WAL to reach the disk
    (``synchronous_commit = off``): every recorded search waited for that flush before it could
    answer (benchmarks/README.md), and a crash can cost at most the last few rows of telemetry.
    The setting, the insert and their transaction cost one round trip (``one_trip_transaction``)."""
    with one_trip_transaction(conn):
        conn.execute("SET LOCAL synchronous_commit = off")
        conn.execute(
            query("search_telemetry_insert"),
            {**row, "candidates": Jsonb(row["candidates"]), "results": Jsonb(row["results"])},
        )


def purge_telemetry(conn: psycopg.Connection, older_than_days: int) -> int:
    """Delete telemetry rows older than the retention; how many went."""
    return conn.execute(
        "DELETE FROM search_telemetry WHERE searched_at < now() - make_interval(days => %s)",
        (older_than_days,),
    ).rowcount
