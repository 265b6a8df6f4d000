"""Observations and beliefs in PostgreSQL: storing, revising, listing, their vectors and HNSW
indexes, and the two ways search finds them (by words and by vector).

SQL in ``sql/queries/observation_*.sql``; the vector query and the per-(profile, generation)
HNSW index are built here with ``psycopg.sql`` because the index is a partial expression index
whose predicate must repeat the profile id and generation as constants (as ``hnsw_store``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import psycopg
from pgvector import HalfVector
from psycopg import sql

from memory_pipeline.domain.observations import ObservationDraft
from memory_pipeline.storage import keyword_store, search_store
from memory_pipeline.storage.database import one_row
from memory_pipeline.storage.hnsw_store import (
    HNSW_EF_CONSTRUCTION,
    HNSW_M,
    generation_query,
    index_expression,
)
from memory_pipeline.storage.paths import query
from memory_pipeline.storage.profiles_store import StoredProfile
from memory_pipeline.storage.vector_store import MIN_EF_SEARCH, hnsw_rows


@dataclass(frozen=True)
class StoredObservation:
    id: int
    memory: str
    kind: str
    status: str
    text: str
    confidence: float
    episode_ids: tuple[int, ...]
    passages: tuple[str, ...]
    author: str
    revises: int | None
    observed_at: dt.datetime
    # Validity in the world's time (None: from when observed; until further notice) and the
    # memory's own: when it was recorded and when a revision superseded it (migration 0034).
    valid_from: dt.datetime | None = None
    valid_until: dt.datetime | None = None
    recorded_at: dt.datetime | None = None
    superseded_at: dt.datetime | None = None

    def in_force(self, until: dt.datetime) -> bool:
        """Whether it held just before ``until`` (a search as of a moment): valid then in the
        world (from ``valid_from``, else from when observed) and not yet superseded then."""
        return (
            (self.valid_from or self.observed_at) < until
            and (self.valid_until is None or self.valid_until >= until)
            and (self.superseded_at is None or self.superseded_at >= until)
            and (self.superseded_at is not None or self.status != "retired")
        )

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "memory": self.memory,
            "kind": self.kind,
            "status": self.status,
            "text": self.text,
            "confidence": round(self.confidence, 4),
            "episodeIds": list(self.episode_ids),
            "passages": list(self.passages),
            "author": self.author,
            "revises": self.revises,
            "observedAt": self.observed_at.isoformat(),
            "validFrom": _iso(self.valid_from),
            "validUntil": _iso(self.valid_until),
            "recordedAt": _iso(self.recorded_at),
            "supersededAt": _iso(self.superseded_at),
        }


def _iso(moment: dt.datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


def _stored(row) -> StoredObservation:
    i, memory, kind, status, text, confidence, episodes, passages, author, revises, at = row[:11]
    return StoredObservation(
        i,
        memory,
        kind,
        status,
        text,
        float(confidence),
        tuple(episodes),
        tuple(passages),
        author,
        revises,
        at,
        *row[11:],
    )


def insert(conn: psycopg.Connection, draft: ObservationDraft, *, revises: int | None = None) -> int:
    return one_row(
        conn,
        query("observation_insert"),
        {
            "memory": draft.memory,
            "kind": draft.kind,
            "status": draft.status,
            "text": draft.text,
            "confidence": draft.confidence,
            "episode_ids": list(draft.episode_ids),
            "passages": list(draft.passages),
            "author": draft.author,
            "revises": revises,
            "observed_at": draft.observed_at,
            "valid_from": draft.valid_from,
            "valid_until": draft.valid_until,
        },
    )[0]


def foreign_episodes(
    conn: psycopg.Connection, memory: str, episode_ids: Sequence[int]
) -> list[int]:
    """Those of ``episode_ids`` that are not episodes of ``memory`` (in the order given)."""
    if not episode_ids:
        return []
    found = {
        i
        for (i,) in conn.execute(
            "SELECT id FROM episodes WHERE memory = %s AND id = ANY(%s)",
            (memory, list(episode_ids)),
        )
    }
    return [i for i in episode_ids if i not in found]


def revise(conn: psycopg.Connection, old_id: int, draft: ObservationDraft) -> int | None:
    """Retire ``old_id`` and store ``draft`` as its successor, in one transaction; None when
    ``old_id`` is not a live statement of the draft's memory (nothing is written then)."""
    with conn.transaction():
        if (
            conn.execute(
                query("observation_retire"), {"id": old_id, "memory": draft.memory}
            ).fetchone()
            is None
        ):
            return None
        return insert(conn, draft, revises=old_id)


def successors(conn: psycopg.Connection, memory: str, ids: Sequence[int]) -> dict[int, int]:
    """Revised statement id -> the id of the revision that replaced it (those of ``ids`` with one)."""
    found = conn.execute(
        "SELECT revises, id FROM observations WHERE memory = %s AND revises = ANY(%s)",
        (memory, list(ids)),
    )
    return dict(found.fetchall())


def set_status(conn: psycopg.Connection, memory: str, observation_id: int, status: str) -> bool:
    row = conn.execute(
        query("observation_set_status"), {"id": observation_id, "memory": memory, "status": status}
    )
    return row.fetchone() is not None


def rows(conn: psycopg.Connection, memory: str, ids: Sequence[int]) -> dict[int, StoredObservation]:
    found = conn.execute(query("observation_rows"), {"memory": memory, "ids": list(ids)}).fetchall()
    return {r[0]: _stored(r) for r in found}


def listing(
    conn: psycopg.Connection,
    memory: str,
    *,
    kind: str | None = None,
    with_retired: bool = False,
    limit: int = 100,
) -> list[StoredObservation]:
    found = conn.execute(
        query("observation_list"),
        {
            "memory": memory,
            "kind": kind,
            "with_retired": with_retired,
            "limit": limit,
        },
    ).fetchall()
    return [_stored(r) for r in found]


def any_statements(
    conn: psycopg.Connection, memory: str, *, kinds: Sequence[str], statuses: Sequence[str]
) -> bool:
    """Whether the memory holds a statement of these kinds and statuses (a statement channel
    with none has nothing to rank and need not wait for the query's vector)."""
    return one_row(
        conn,
        "SELECT EXISTS (SELECT 1 FROM observations WHERE memory = %s AND kind = ANY(%s) AND status = ANY(%s))",
        (memory, list(kinds), list(statuses)),
    )[0]


def by_words(
    conn: psycopg.Connection,
    memory: str,
    text: str,
    *,
    kinds: Sequence[str],
    statuses: Sequence[str],
    limit: int,
) -> list[tuple[int, float]]:
    """(id, BM25 score) of the statements sharing words with ``text``, best first."""
    lexemes = search_store.query_lexemes(conn, text)
    if not lexemes:
        return []
    found = conn.execute(
        query("observation_keyword"),
        {
            "memory": memory,
            "kinds": list(kinds),
            "statuses": list(statuses),
            "lexemes": lexemes,
            "tsquery": keyword_store.or_tsquery(lexemes),
            "limit": limit,
            **keyword_store.BM25.params(),
        },
    ).fetchall()
    return [(i, float(s)) for i, s in found]


def on_chunk_scale(
    conn: psycopg.Connection, memory: str, text: str, ids: Sequence[int]
) -> dict[int, float]:
    """id -> BM25 score against ``text`` of the statements ``ids`` that share a word with it,
    each scored as one more chunk of ``memory`` (its chunk statistics, ``keyword_store.BM25``),
    so the scores compare with the keyword channel's. Empty for a memory without chunk
    statistics."""
    if not ids:
        return {}
    found = conn.execute(
        query("observation_keyword_chunk_scale"),
        {
            "memory": memory,
            "text": text,
            "ids": list(ids),
            **keyword_store.BM25.params(),
        },
    ).fetchall()
    return {i: float(s) for i, s in found}


# -- vectors ----------------------------------------------------------------------------------
def index_name(profile: StoredProfile) -> str:
    return f"observation_embeddings_hnsw_p{profile.id}_g{profile.generation}"


def pending(
    conn: psycopg.Connection, profile: StoredProfile, *, limit: int
) -> list[tuple[int, str, str]]:
    """(id, memory, text) of statements without a vector for ``profile``'s generation."""
    return conn.execute(
        query("observation_pending"),
        {
            "profile_id": profile.id,
            "generation": profile.generation,
            "limit": limit,
        },
    ).fetchall()


def pending_count(conn: psycopg.Connection, profile: StoredProfile) -> int:
    return one_row(
        conn,
        query("observation_pending_count"),
        {
            "profile_id": profile.id,
            "generation": profile.generation,
        },
    )[0]


def vector_integrity(conn: psycopg.Connection, profile: StoredProfile) -> dict:
    """Live statements, those without a vector, and mis-sized or non-unit vectors for
    ``profile``'s generation (the statement_vectors asset's check)."""
    row = one_row(
        conn,
        query("observation_vector_integrity"),
        {
            "profile_id": profile.id,
            "generation": profile.generation,
            "dim": profile.dim,
        },
    )
    return dict(zip(("statements", "missing", "vectors", "wrong_dimension", "not_normalized"), row))


def write_vectors(
    conn: psycopg.Connection,
    profile: StoredProfile,
    items: Sequence[tuple[int, str]],
    vectors: np.ndarray,
) -> int:
    """Store one vector per (id, memory) of ``items``, in one transaction."""
    with conn.transaction():
        for (observation_id, memory), vector in zip(items, vectors):
            conn.execute(
                query("observation_vector_insert"),
                {
                    "profile_id": profile.id,
                    "generation": profile.generation,
                    "observation_id": observation_id,
                    "memory": memory,
                    "embedding": HalfVector(vector),
                },
            )
    return len(items)


def ensure_index(conn: psycopg.Connection, profile: StoredProfile) -> bool:
    """Build the profile generation's HNSW index over statement vectors if it is missing or
    invalid; True when it was built now. ``conn`` must be in autocommit mode (CONCURRENTLY)."""
    name = index_name(profile)
    row = conn.execute(
        query("observation_index_valid"),
        (name,),
    ).fetchone()
    if row is not None and row[0]:
        return False
    if row is not None:
        conn.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.Identifier(name)))
    conn.execute(
        generation_query(
            "observation_create_index",
            profile,
            name=sql.Identifier(name),
            expr=index_expression(profile),
            m=sql.Literal(HNSW_M),
            efc=sql.Literal(HNSW_EF_CONSTRUCTION),
        )
    )
    return True


def by_vector(
    conn: psycopg.Connection,
    profile: StoredProfile,
    memory: str,
    vector: np.ndarray,
    *,
    kinds: Sequence[str],
    statuses: Sequence[str],
    limit: int,
) -> list[tuple[int, float]]:
    """(id, cosine similarity) of the nearest statements of ``memory`` of the given kinds and
    statuses, through the profile generation's HNSW index, best first."""
    nearest = generation_query("observation_nearest", profile, expr=index_expression(profile))
    found = hnsw_rows(
        conn,
        nearest,
        {
            "q": HalfVector(vector),
            "memory": memory,
            "kinds": list(kinds),
            "statuses": list(statuses),
            "limit": limit,
        },
        ef_search=max(limit, MIN_EF_SEARCH),
    )
    return sorted(((i, 1.0 - float(d)) for i, d in found), key=lambda hit: (-hit[1], hit[0]))
