"""The keyword channel's champion lists: each common word's best chunks, rebuilt beside the writers.

For each lexeme held by more than ``CAP`` chunk rows of a memory, the rows with the highest BM25
term weight for it (``keyword_store`` reads them for a one-word lookup of a common word). Built
by ``refresh_champions``, grown by ``keyword_stats_store.record_chunks`` and shrunk by ON DELETE
CASCADE, so a list always holds exactly the rows above its floor. A rebuild loads a new
generation from one snapshot beside the writers and swaps it in under the memory's statistics row
lock, weighing what the writers logged meanwhile; only that memory's writers wait, briefly.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import psycopg

from memory_pipeline.storage.database import one_row
from memory_pipeline.storage.keyword_store import BM25, CAP, Bm25
from memory_pipeline.storage.paths import query

# Rows a champion list holds after a refresh: twice the channel's deepest candidate list
# (``KEYWORD_CANDIDATES``), so deletions leave it deep enough until the next refresh.
CHAMPIONS = 100

# One rebuild of a memory's champion lists at a time (session advisory lock): "MPkc".
BUILD_LOCK_CLASS = 0x4D506B63

# `memory-pipeline index` rebuilds a memory's lists when it has none, or when its chunk rows grew
# or shrank by more than this share since they were built: new common lexemes have no list yet,
# and the lengths the weights were computed with drift.
STALE_CHANGE = 0.25

# The swap gives way to a deleter holding rows it needs (see keyword_champions_swap_lock.sql) and
# tries again, up to this many times, waiting SWAP_PAUSE x the attempt (at most 1 s) in between.
SWAP_ATTEMPTS = 40
SWAP_PAUSE = 0.05


@dataclass
class ChampionBuild:
    """What one rebuild of a memory's champion lists did (``refresh_champions``)."""

    memory: str
    outcome: str = (
        "built"  # "built"; "busy": another rebuild of it runs; "gone": no chunks any more;
    )
    # "locked": deleters kept its rows, the lists stay as they were
    generation: int = 0  # the generation made current
    rows: int = 0  # the lists' rows after the swap
    lists: int = 0
    backlog: int = 0  # episodes written during the build, weighed again in the swap
    seconds: float = 0.0  # the whole rebuild
    read_seconds: float = 0.0  # the snapshot read into the staging tables, beside the writers
    load_seconds: float = 0.0  # loading the new generation, beside the writers (every attempt)
    drop_seconds: float = 0.0  # deleting the old generation, after the swap
    lock_wait_seconds: float = 0.0  # waiting for the memory's writers before each swap attempt
    lock_seconds: float = (
        0.0  # the memory's stats row held (every attempt): writers of it waited at most this
    )
    attempts: int = 0  # swap attempts
    gave_way: int = 0  # load and swap attempts that found a deleter's rows locked

    def to_json(self) -> dict:
        return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in self.__dict__.items()}


def refresh_champions(
    conn: psycopg.Connection,
    memory: str,
    *,
    min_df: int = CAP,
    size: int = CHAMPIONS,
    bm25: Bm25 | None = None,
) -> ChampionBuild:
    """Rebuild ``memory``'s champion lists from its chunks (the lexemes held by more than
    ``min_df`` chunk rows, ``size`` rows each), beside its writers.

    ``start_build`` registers the rebuild and its generation (from then on writers log their
    episodes), ``stage_build`` reads every posting of the memory from one snapshot into the
    staging tables, ``load_build`` writes them as the new generation (migration 0027), both
    without any lock a writer waits for (the long part: benchmarks/README.md), and ``swap_build``
    weighs the logged episodes into it and makes it current under the memory's statistics row
    lock, which only the memory's chunk writers wait for, and only for that; then the old
    generation is deleted. A concurrent rebuild of the same memory makes this one return at once
    ("busy").
    """
    report = ChampionBuild(memory)
    started = time.perf_counter()
    if not one_row(
        conn, "SELECT pg_try_advisory_lock(%s, hashtext(%s))", (BUILD_LOCK_CLASS, memory)
    )[0]:
        report.outcome = "busy"
        return report
    try:
        if not start_build(conn, memory):
            report.outcome = "gone"
            with conn.transaction():
                conn.execute(query("keyword_champions_clear"), {"memory": memory})
            return report
        t0 = time.perf_counter()
        stage_build(conn, memory, min_df=min_df, size=size, bm25=bm25)
        report.read_seconds = time.perf_counter() - t0
        if load_build(conn, memory, report):
            swap_build(conn, memory, report)
    finally:
        try:
            end_build(conn, memory)
        finally:  # a pooled connection must not keep the lock (a dead one has lost it anyway)
            conn.execute("SELECT pg_advisory_unlock(%s, hashtext(%s))", (BUILD_LOCK_CLASS, memory))
            report.seconds = time.perf_counter() - started
    return report


def _lock_stats_row(conn: psycopg.Connection, memory: str) -> bool:
    """Lock ``memory``'s statistics row for the rest of the transaction: its chunk writers that
    already counted their chunks (``record_chunks``) have committed, the others wait at that
    query. False: the memory has no chunks (no row)."""
    return (
        conn.execute(
            "SELECT 1 FROM keyword_memory_stats WHERE memory = %s FOR UPDATE", (memory,)
        ).fetchone()
        is not None
    )


def start_build(conn: psycopg.Connection, memory: str) -> bool:
    """Register a rebuild of ``memory``'s lists and the generation it loads
    (``keyword_champion_builds``, migrations 0026, 0027); False (nothing registered) when the
    memory has no chunks."""
    with conn.transaction():
        if not _lock_stats_row(conn, memory):
            return False
        conn.execute(query("keyword_champions_build_start"), {"memory": memory})
        conn.execute(query("keyword_champions_register"), {"memory": memory})
    return True


# The stage's sample (keyword_champions_stage.sql): one chunk row in SAMPLE_EVERY gives each
# common lexeme a threshold, its SAMPLE_DEPTH x (size + 1) / SAMPLE_EVERY-th best sampled weight,
# which about SAMPLE_DEPTH x (size + 1) of all its postings reach; only those are ranked. A
# threshold that leaves fewer than size + 1 (rare at 3x: benchmarks/README.md) makes the stage
# rank that lexeme from all its postings, so the lists are exact whatever the sample.
SAMPLE_EVERY = 10
SAMPLE_DEPTH = 3


def stage_build(
    conn: psycopg.Connection,
    memory: str,
    *,
    min_df: int = CAP,
    size: int = CHAMPIONS,
    bm25: Bm25 | None = None,
    sample_every: int = SAMPLE_EVERY,
    sample_rank: int | None = None,
) -> int:
    """The registered rebuild's long read (``keyword_champions_stage.sql``): the lists as the
    current snapshot has them, into the staging tables; their row count. ``sample_every`` and
    ``sample_rank`` set the sample that spares ranking most postings (see SAMPLE_EVERY)."""
    if sample_rank is None:
        sample_rank = max(1, SAMPLE_DEPTH * (size + 1) // sample_every)
    params = {
        "memory": memory,
        "min_df": min_df,
        "size": size,
        "sample_every": sample_every,
        "sample_rank": sample_rank,
        **(bm25 or BM25).params(),
    }
    with conn.transaction():
        rows = conn.execute(query("keyword_champions_stage"), params).rowcount
    # Fresh statistics for the load's joins (the staging tables start empty every build).
    conn.execute("ANALYZE keyword_champion_staged, keyword_champion_staged_lists")
    return rows


def _retrying(attempt_once, report: ChampionBuild) -> bool:
    """Run ``attempt_once`` (a transaction that takes rows a deleter may hold NOWAIT) until it
    gets them, up to SWAP_ATTEMPTS times, pausing SWAP_PAUSE x the attempt (at most 1 s) after
    each attempt that gave way. False: it never got them."""
    for attempt in range(SWAP_ATTEMPTS):
        try:
            attempt_once()
            return True
        except psycopg.errors.LockNotAvailable:
            report.gave_way += 1
        time.sleep(min(SWAP_PAUSE * (attempt + 1), 1.0))
    return False


def load_build(conn: psycopg.Connection, memory: str, report: ChampionBuild | None = None) -> bool:
    """Write the staged lists of ``memory`` (``stage_build``) as the build's generation
    (``keyword_champions_load.sql``), beside its writers and searches (they read the current
    generation). Gives way to deleters (``keyword_champions_load_lock.sql``). False: deleters
    kept its rows every time (``report.outcome`` "locked")."""
    report = report or ChampionBuild(memory)
    t0 = time.perf_counter()

    def load() -> None:
        with conn.transaction():
            conn.execute(query("keyword_champions_load_lock"), {"memory": memory})
            conn.execute(query("keyword_champions_load"), {"memory": memory})

    try:
        if _retrying(load, report):
            return True
        report.outcome = "locked"
        return False
    finally:
        report.load_seconds += time.perf_counter() - t0


def swap_build(
    conn: psycopg.Connection, memory: str, report: ChampionBuild | None = None
) -> ChampionBuild:
    """Make the loaded generation of ``memory`` (``load_build``) current in one transaction under
    its statistics row lock: the episodes writers logged meanwhile are weighed into it through its
    floors (``keyword_champions_flip.sql``, then ``keyword_champions_record.sql``), so the lists'
    invariant holds, and the state row flips to it. The work under the lock is the backlog's, not
    the lists'. Gives way to deleters (``keyword_champions_swap_lock.sql``). Then deletes the old
    generation (``drop_old_generations``). Fills and returns ``report``."""
    report = report or ChampionBuild(memory)

    def swap() -> None:
        report.attempts += 1
        t0 = time.perf_counter()
        locked_at = None
        try:
            with conn.transaction():
                present = _lock_stats_row(conn, memory)
                locked_at = time.perf_counter()
                report.lock_wait_seconds += locked_at - t0
                if not present:
                    report.outcome = "gone"
                    conn.execute(query("keyword_champions_clear"), {"memory": memory})
                    return
                conn.execute(query("keyword_champions_swap_lock"), {"memory": memory})
                logged = [
                    r[0]
                    for r in conn.execute(
                        "SELECT episode_id FROM keyword_champion_backlog WHERE memory = %s",
                        (memory,),
                    )
                ]
                flipped = conn.execute(
                    query("keyword_champions_flip"), {"memory": memory}
                ).fetchone()
                _unregister(conn, memory)  # before the record: it logs no more
                if logged:
                    conn.execute(query("keyword_champions_record"), {"episode_ids": logged})
                report.backlog = len(logged)
                report.generation = flipped[0] if flipped else 0
            report.outcome = "built" if flipped else "locked"
        finally:
            if locked_at is not None:  # until the commit or the rollback released the row
                report.lock_seconds += time.perf_counter() - locked_at

    if not _retrying(swap, report):
        report.outcome = "locked"
        return report
    if report.outcome == "built":
        t0 = time.perf_counter()
        drop_old_generations(conn, memory)
        report.drop_seconds = time.perf_counter() - t0
        report.rows, report.lists = one_row(
            conn,
            query("keyword_champions_generation_counts"),
            {"m": memory, "g": report.generation},
        )
    return report


# Rows of an old generation one transaction deletes (drop_old_generations); how many times it
# looks again for rows a deleter held, pausing SWAP_PAUSE in between, before leaving them to the
# next rebuild.
DROP_BATCH = 20000
DROP_RETRIES = 20


def drop_old_generations(conn: psycopg.Connection, memory: str, *, batch: int = DROP_BATCH) -> int:
    """Delete ``memory``'s champion rows and lists of generations other than the current one and
    a registered build's, in transactions of at most ``batch`` rows, beside its writers, searches
    and deleters (``keyword_champions_drop_old.sql``); the rows deleted."""
    deleted, retries = 0, 0
    while True:
        with conn.transaction():
            n = conn.execute(
                query("keyword_champions_drop_old"), {"memory": memory, "batch": batch}
            ).rowcount
        deleted += n
        if n:
            continue
        left = one_row(
            conn,
            query("keyword_champions_old_generation_exists"),
            (memory,),
        )[0]
        if not left or retries >= DROP_RETRIES:
            break
        retries += 1  # rows a deleter holds: its cascade deletes them, or its rollback frees them
        time.sleep(SWAP_PAUSE)
    with conn.transaction():
        conn.execute(query("keyword_champion_lists_drop_old"), {"memory": memory})
    return deleted


def _unregister(conn: psycopg.Connection, memory: str) -> None:
    conn.execute("DELETE FROM keyword_champion_builds WHERE memory = %s", (memory,))
    conn.execute("DELETE FROM keyword_champion_backlog WHERE memory = %s", (memory,))


def end_build(conn: psycopg.Connection, memory: str) -> None:
    """Whatever the rebuild of ``memory`` left: its registration and the generation it loaded (a
    rebuild that did not swap: cut short, or deleters kept its rows), and its staging rows."""
    with conn.transaction():
        _unregister(conn, memory)
        conn.execute("DELETE FROM keyword_champion_staged_lists WHERE memory = %s", (memory,))
        conn.execute("DELETE FROM keyword_champion_staged WHERE memory = %s", (memory,))
    drop_old_generations(conn, memory)


def refresh_all_champions(
    conn: psycopg.Connection,
    *,
    min_df: int = CAP,
    size: int = CHAMPIONS,
    stale_only: bool = False,
    memories: Sequence[str] | None = None,
) -> list[ChampionBuild]:
    """``refresh_champions`` for every memory of more than ``min_df`` chunk rows (only those ever
    take the capped path; ``stale_only``: only those whose lists are missing or stale, see
    ``STALE_CHANGE``; ``memories``: only these), one after the other. Lists of memories now
    small are dropped with their state."""
    rows = conn.execute(
        query("keyword_champion_memories"),
        {"min_df": min_df, "stale_change": STALE_CHANGE if stale_only else None},
    ).fetchall()
    builds = []
    for memory, large in rows:
        if memories is not None and memory not in memories:
            continue
        if large:
            builds.append(refresh_champions(conn, memory, min_df=min_df, size=size))
        elif one_row(
            conn, "SELECT pg_try_advisory_lock(%s, hashtext(%s))", (BUILD_LOCK_CLASS, memory)
        )[0]:
            # Under the build's lock, or not at all: every index run ends here, and must not wait
            # for a rebuild of the memory another session runs (it clears what is left after).
            try:
                with conn.transaction():
                    conn.execute(query("keyword_champions_clear"), {"memory": memory})
            finally:
                conn.execute(
                    "SELECT pg_advisory_unlock(%s, hashtext(%s))", (BUILD_LOCK_CLASS, memory)
                )
    return builds
