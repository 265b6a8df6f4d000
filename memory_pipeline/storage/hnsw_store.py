"""The HNSW index of the active profile: a partial expression index over its halfvec rows.

The ``embeddings`` column has no fixed dimension, so each (profile, generation) gets its own index
over ``embedding::halfvec(dim)`` restricted to its rows, used only by queries that repeat that
expression (``index_expression``). ``ensure_index`` builds it once, CONCURRENTLY, under an
advisory lock so two builders never meet; ``build_progress`` reads a running build.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass

import psycopg
from psycopg import sql

from memory_pipeline.storage.database import one_row
from memory_pipeline.storage.paths import query
from memory_pipeline.storage.profiles_store import StoredProfile

HNSW_M = 16
# 128, not pgvector's default 64: on 100k topic-clustered vectors recall@10 at ef_search 100 went
# from 0.937 to 0.978 for a build of 63 s instead of 51 s, at no query cost
# (benchmarks/bench_search_latency.py). The build runs nightly and concurrently; queries run always.
HNSW_EF_CONSTRUCTION = 128
# The build is several times faster while its graph fits in maintenance_work_mem (pgvector spills
# to a slower on-disk build beyond it): this much is asked for per vector (the halfvec, its
# neighbour lists at m = 16 and the element's header), from BUILD_MIN_MEMORY_MB up to
# BUILD_MAX_MEMORY_MB.
BUILD_BYTES_PER_DIM = 2
BUILD_BYTES_PER_VECTOR = 640
BUILD_MIN_MEMORY_MB = 64
# The ceiling: 2 GiB holds the graph of about a million 384-dimension vectors.
BUILD_MAX_MEMORY_MB = 2048

# One build of an index at a time (session advisory lock on (class, hashtext(index name))): "MPhn".
BUILD_LOCK_CLASS = 0x4D50686E


@dataclass
class IndexState:
    name: str
    exists: bool
    valid: bool
    rows: int | None  # the generation's vectors (None: not counted, ``count_rows``)
    size_bytes: int
    build_seconds: float | None  # None: reused an existing valid index
    m: int = HNSW_M
    ef_construction: int = HNSW_EF_CONSTRUCTION
    # "built" (by this call), "present" (valid already), "busy" (another session is building it:
    # this call left it to that one), "empty" (no vectors yet: nothing to build)
    outcome: str = "present"


def index_name(profile: StoredProfile) -> str:
    return f"embeddings_hnsw_p{profile.id}_g{profile.generation}"


def _inspect(conn: psycopg.Connection, name: str) -> tuple[bool, bool, int, dict[str, int]]:
    """Whether the index exists, is valid, its size in bytes and its numeric options (m, ...)."""
    row = conn.execute(
        query("hnsw_index_state"),
        (name,),
    ).fetchone()
    if row is None:
        return False, False, 0, {}
    options = {k: int(v) for k, v in (o.split("=", 1) for o in row[2]) if v.isdigit()}
    return True, bool(row[0]), int(row[1]), options


def index_ready(conn: psycopg.Connection, profile: StoredProfile) -> bool:
    """Whether the profile's serving index exists and is valid (no build is started)."""
    exists, valid, _, _ = _inspect(conn, index_name(profile))
    return exists and valid


def build_workers(cores: int | None = None) -> int:
    """Parallel maintenance workers beside the build's leader: one per further core, up to 3.

    The build runs after the pass, when its cores are free: on 2 idle cores one worker built
    100,000 vectors in 48-56 s instead of 88-95 s, and a second worker gained nothing
    (benchmarks/README.md). On a machine busy with other work the worker competes for the
    leader's core instead (under load 6-9 one worker took 107 s against 80 s alone).
    """
    return max(0, min((cores or os.cpu_count() or 1) - 1, 3))


def shared_memory_allows(conn: psycopg.Connection, memory_mb: int) -> bool:
    """Whether a parallel build's shared memory (``memory_mb``, the graph, in PostgreSQL's
    dynamic shared memory: files in /dev/shm) fits where we can see it: a server reached through
    a unix socket shares this machine's /dev/shm, whose free space is checked (a container's
    64 MiB default is the usual shortage). Elsewhere it is not knowable from here: the build
    tries, and falls back to one process when the server runs short (``_build``)."""
    if not str(conn.info.host).startswith("/"):
        return True
    try:
        free = shutil.disk_usage("/dev/shm").free
    except OSError:
        return True
    return free >= memory_mb * 2**20 * 5 // 4


def build_memory_mb(rows: int, dim: int, ceiling_mb: int) -> int:
    """maintenance_work_mem for a build of ``rows`` vectors of ``dim``: the graph in memory, within
    [BUILD_MIN_MEMORY_MB, ``ceiling_mb``]."""
    need = rows * (dim * BUILD_BYTES_PER_DIM + BUILD_BYTES_PER_VECTOR) * 5 // 4 // 2**20
    return max(BUILD_MIN_MEMORY_MB, min(int(need) + 1, ceiling_mb))


def _rows(conn: psycopg.Connection, profile: StoredProfile) -> int:
    return one_row(
        conn,
        "SELECT count(*) FROM embeddings WHERE profile_id = %s AND generation = %s",
        (profile.id, profile.generation),
    )[0]


def ensure_index(
    conn: psycopg.Connection,
    profile: StoredProfile,
    *,
    count_rows: bool = True,
) -> IndexState:
    """Create the profile's index if missing or invalid (an interrupted concurrent build).

    ``conn`` must be in autocommit mode: CREATE INDEX CONCURRENTLY keeps search and writers
    running while it builds, and cannot run inside a transaction block. Its maintenance_work_mem
    is sized to the graph (``build_memory_mb``), its parallel workers by the cores
    (``build_workers``). ``count_rows=False``: the generation's vectors are counted only for a build (every index
    run calls this, and a count of millions of rows is not free). Returns at once with outcome
    "busy" while another session builds it (its lock is held): that one finishes it.
    """
    name = index_name(profile)
    exists, valid, _, _ = _inspect(conn, name)
    build_seconds = None
    outcome = "present"
    missing = not (exists and valid)
    rows = _rows(conn, profile) if missing or count_rows else None
    if missing and rows == 0:
        outcome = "empty"
    elif missing:
        if not one_row(
            conn, "SELECT pg_try_advisory_lock(%s, hashtext(%s))", (BUILD_LOCK_CLASS, name)
        )[0]:
            outcome = "busy"
        else:
            try:
                build_seconds = _build(
                    conn, profile, name, rows or 0, BUILD_MAX_MEMORY_MB, build_workers()
                )
                outcome = "built"
            finally:  # a pooled connection must not keep the lock
                conn.execute(
                    "SELECT pg_advisory_unlock(%s, hashtext(%s))", (BUILD_LOCK_CLASS, name)
                )
    exists, valid, size, options = _inspect(conn, name)
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
        outcome=outcome,
    )


def _build(
    conn: psycopg.Connection,
    profile: StoredProfile,
    name: str,
    rows: int,
    memory_mb: int,
    workers: int,
) -> float:
    """Build the index (holding its lock): an invalid one left by an interrupted build is dropped
    first; the seconds the build took."""
    exists, valid, _, _ = _inspect(conn, name)  # again, under the lock
    if exists and valid:
        return 0.0
    if exists:
        _drop(conn, name)
    started = time.perf_counter()
    build_mb = build_memory_mb(rows, profile.dim, memory_mb)
    if workers > 0 and not shared_memory_allows(conn, build_mb):
        workers = 0
    create = generation_query(
        "hnsw_create_index",
        profile,
        name=sql.Identifier(name),
        m=sql.Literal(HNSW_M),
        efc=sql.Literal(HNSW_EF_CONSTRUCTION),
    )
    try:
        conn.execute(
            query("hnsw_build_settings"),
            (f"{build_mb}MB", str(max(workers, 0))),
        )
        try:
            conn.execute(create)
        except (psycopg.errors.DiskFull, psycopg.errors.OutOfMemory):
            # "could not resize shared memory segment" (ENOSPC or ENOMEM): the server's /dev/shm
            # cannot hold a parallel build's graph. The failed attempt left an invalid index;
            # one process builds it again in its own memory.
            if workers == 0:
                raise
            _drop(conn, name)
            conn.execute("SELECT set_config('max_parallel_maintenance_workers', '0', false)")
            conn.execute(create)
    finally:
        conn.execute("RESET maintenance_work_mem")
        conn.execute("RESET max_parallel_maintenance_workers")
    return time.perf_counter() - started


def _drop(conn: psycopg.Connection, name: str) -> None:
    conn.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.Identifier(name)))


def build_progress(conn: psycopg.Connection, profile: StoredProfile) -> dict | None:
    """The running build of the profile's index (None when none runs): its phase, the vectors
    loaded into the graph so far and in all, and the seconds since it began."""
    row = conn.execute(query("hnsw_build_progress"), {"name": index_name(profile)}).fetchone()
    if row is None:
        return None
    phase, done, total, seconds = row
    # pgvector counts the vectors it loads but not their total: the generation's rows are.
    return {
        "phase": phase,
        "vectorsDone": int(done or 0),
        "vectorsTotal": int(total or 0) or _rows(conn, profile),
        "seconds": round(float(seconds or 0.0), 1),
    }


def inspect(conn: psycopg.Connection, profile: StoredProfile) -> dict:
    """Name, existence, validity and size of the profile's serving index, and its build while one
    runs (``build_progress``; no changes made)."""
    name = index_name(profile)
    exists, valid, size, _ = _inspect(conn, name)
    building = build_progress(conn, profile)
    return {
        "name": name,
        "exists": exists,
        "valid": valid,
        "size_bytes": size,
        "building": building,
    }


def generation_query(
    query_name: str, profile: StoredProfile, /, **more: sql.Composable
) -> sql.Composed:
    """The named query with ``profile``'s dimension ({dim}), id ({pid}) and generation ({gen})
    written in as constants, as a partial HNSW index's predicate needs them (to build it, and
    for a query to use it), and ``more`` filled in."""
    return sql.SQL(query(query_name)).format(
        dim=sql.Literal(profile.dim),
        pid=sql.Literal(profile.id),
        gen=sql.Literal(profile.generation),
        **more,
    )


def index_expression(profile: StoredProfile) -> sql.Composable:
    """The exact expression the index covers; queries must use it verbatim to hit the index."""
    return sql.SQL("(embedding::halfvec({dim}))").format(dim=sql.Literal(profile.dim))
