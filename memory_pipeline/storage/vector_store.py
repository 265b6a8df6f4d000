"""Nearest chunks by cosine distance through the active profile's HNSW index."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import psycopg
from pgvector import HalfVector
from psycopg import sql

from memory_pipeline.storage.hnsw_store import index_expression
from memory_pipeline.storage.profiles_store import StoredProfile

# pgvector returns at most ef_search rows from an HNSW scan: it must cover the candidates asked for.
MIN_EF_SEARCH = 40


@dataclass(frozen=True)
class VectorHit:
    memory: str
    chunk_id: str
    distance: float


def nearest_chunks(
    conn: psycopg.Connection,
    profile: StoredProfile,
    memory: str,
    query_vector: np.ndarray,
    *,
    limit: int = 50,
    ef_search: int | None = None,
) -> list[VectorHit]:
    """Up to ``limit`` chunk ids of ``memory`` nearest to ``query_vector``.

    The memory filter is applied inside the index scan; pgvector 0.8's iterative scan keeps
    walking the graph until ``limit`` rows of this memory are found instead of returning fewer.
    Profile id and generation go in as literals because the partial index's predicate can only
    be matched against constants.
    """
    expr = index_expression(profile)
    statement = sql.SQL(
        "SELECT memory, chunk_id, {expr} <=> %(q)s::halfvec({dim}) AS distance "
        "FROM embeddings WHERE profile_id = {pid} AND generation = {gen} AND memory = %(memory)s "
        "ORDER BY {expr} <=> %(q)s::halfvec({dim}) LIMIT %(limit)s"
    ).format(
        expr=expr,
        dim=sql.Literal(profile.dim),
        pid=sql.Literal(profile.id),
        gen=sql.Literal(profile.generation),
    )
    with conn.transaction():
        ef = max(ef_search or 0, limit, MIN_EF_SEARCH)
        conn.execute(sql.SQL("SET LOCAL hnsw.ef_search = {}").format(sql.Literal(ef)))
        conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        rows = conn.execute(
            statement, {"q": HalfVector(query_vector), "memory": memory, "limit": limit}
        ).fetchall()
    # relaxed_order may return rows slightly out of order: restore exact distance order.
    return sorted((VectorHit(m, c, float(d)) for m, c, d in rows), key=lambda h: h.distance)
