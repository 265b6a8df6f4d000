"""The HNSW index of the active profile: a partial expression index over its halfvec rows.

The ``embeddings`` column has no fixed dimension (several profiles share the table), so each
(profile, generation) gets its own index over ``embedding::halfvec(dim)`` restricted to its
rows. PostgreSQL uses it only for queries that repeat that exact cast and predicate; the
search query is built from ``index_expression`` for that reason.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import psycopg
from psycopg import sql

from memory_pipeline.storage.database import one_row
from memory_pipeline.storage.profiles_store import StoredProfile

HNSW_M = 16
# 128, not pgvector's default 64: on 100k topic-clustered vectors recall@10 at ef_search 100 went
# from 0.937 to 0.978 for a build of 63 s instead of 51 s, at no query cost
# (benchmarks/bench_search_latency.py). The build runs nightly and concurrently; queries run always.
HNSW_EF_CONSTRUCTION = 128
BUILD_MAINTENANCE_WORK_MEM = "512MB"


@dataclass
class IndexState:
    name: str
    exists: bool
    valid: bool
    rows: int
    size_bytes: int
    build_seconds: float | None  # None: reused an existing valid index
    m: int = HNSW_M
    ef_construction: int = HNSW_EF_CONSTRUCTION


def index_name(profile: StoredProfile) -> str:
    return f"embeddings_hnsw_p{profile.id}_g{profile.generation}"


def _inspect(conn: psycopg.Connection, name: str) -> tuple[bool, bool, int, dict[str, int]]:
    """Whether the index exists, is valid, its size in bytes and its numeric options (m, ...)."""
    row = conn.execute(
        """SELECT i.indisvalid, pg_relation_size(c.oid), coalesce(c.reloptions, '{}')
           FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid
           WHERE c.relname = %s""",
        (name,),
    ).fetchone()
    if row is None:
        return False, False, 0, {}
    options = {k: int(v) for k, v in (o.split("=", 1) for o in row[2]) if v.isdigit()}
    return True, bool(row[0]), int(row[1]), options


def ensure_index(conn: psycopg.Connection, profile: StoredProfile) -> IndexState:
    """Create the profile's index if missing or invalid (an interrupted concurrent build).

    ``conn`` must be in autocommit mode: CREATE INDEX CONCURRENTLY keeps search and writers
    running while it builds, and cannot run inside a transaction block.
    """
    name = index_name(profile)
    exists, valid, _, _ = _inspect(conn, name)
    build_seconds = None
    if exists and not valid:
        conn.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.Identifier(name)))
        exists = False
    if not exists:
        started = time.perf_counter()
        conn.execute(
            sql.SQL("SET maintenance_work_mem = {}").format(sql.Literal(BUILD_MAINTENANCE_WORK_MEM))
        )
        conn.execute(
            sql.SQL(
                "CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON embeddings USING hnsw "
                "((embedding::halfvec({dim})) halfvec_cosine_ops) WITH (m = {m}, ef_construction = {efc}) "
                "WHERE profile_id = {pid} AND generation = {gen}"
            ).format(
                name=sql.Identifier(name),
                dim=sql.Literal(profile.dim),
                m=sql.Literal(HNSW_M),
                efc=sql.Literal(HNSW_EF_CONSTRUCTION),
                pid=sql.Literal(profile.id),
                gen=sql.Literal(profile.generation),
            )
        )
        conn.execute("RESET maintenance_work_mem")
        build_seconds = time.perf_counter() - started
    exists, valid, size, options = _inspect(conn, name)
    rows = one_row(
        conn,
        "SELECT count(*) FROM embeddings WHERE profile_id = %s AND generation = %s",
        (profile.id, profile.generation),
    )[0]
    # The index's own parameters: one built before a change of the constants keeps its own.
    return IndexState(
        name,
        exists,
        valid,
        rows,
        size,
        build_seconds,
        m=options.get("m", HNSW_M),
        ef_construction=options.get("ef_construction", HNSW_EF_CONSTRUCTION),
    )


def inspect(conn: psycopg.Connection, profile: StoredProfile) -> dict:
    """Name, existence, validity and size of the profile's serving index (no changes made)."""
    name = index_name(profile)
    exists, valid, size, _ = _inspect(conn, name)
    return {"name": name, "exists": exists, "valid": valid, "size_bytes": size}


def index_expression(profile: StoredProfile) -> sql.Composable:
    """The exact expression the index covers; queries must use it verbatim to hit the index."""
    return sql.SQL("(embedding::halfvec({dim}))").format(dim=sql.Literal(profile.dim))
