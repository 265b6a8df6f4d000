"""The keyword channel's statistics and query: BM25 that stays fast in large memories.

Two small tables (``sql/migrations/0004_keyword_stats.sql``) hold, per memory, each lexeme's
document frequency (``keyword_stats.df``: chunk rows holding it) and the memory's chunk-row count
and summed document length (``keyword_memory_stats``). They change with the chunks:
``record_chunks`` in the transaction that writes chunks (``index_store.write_episodes``),
``recompute`` where chunks are deleted (``memory-pipeline backfill --rechunk``).

Searching (``candidates``): the query's lexemes and their df come back in one round trip.
Lexemes no chunk of the memory holds are dropped (they match nothing). Then

* exact path, when at most ``cap`` chunks can match (the lexemes' summed df, or the memory's
  chunk count, is within it; always in memories of up to ``cap`` chunks): every matching chunk
  is scored as ``keyword_bm25.sql`` always did (``keyword_exact.sql``: same results);
* capped path, otherwise (``keyword_capped.sql``): at most ``cap`` candidates through the GIN
  index, in tiers: every chunk holding one of the rarest lexemes (while their summed df stays
  within ``cap``), then chunks holding at least m of the other, common lexemes together, then a
  few holding the rarest common lexeme and m - 2 others (see ``_gates``); each is scored with
  BM25 over all query lexemes, df, N and avgdl from the statistics (the whole memory). When the
  common part is a single lexeme with a champion list, its best chunks come from the list
  instead of the GIN index (below);
* a memory without a statistics row (its chunks were written around ``write_episodes``) is
  scored by ``keyword_bm25.sql``, which counts for itself.

When full text finds nothing, the query as a literal substring (``keyword_substring.sql``).

Champion lists (``sql/migrations/0025_keyword_champions.sql``): for each lexeme held by more than
``CAP`` chunk rows of a memory, the rows with the highest BM25 term weight for it, built by
``refresh_champions`` (the nightly maintenance job, ``memory-pipeline maintain``, and
``memory-pipeline index`` for memories whose lists are missing or stale), grown by
``record_chunks`` and shrunk by the chunks' deletion (ON DELETE CASCADE), so a list always holds
exactly the rows above its floor. A one-word lookup of a common word then reads its
~``CHAMPIONS`` best chunks through a btree, exactly BM25's top for that word, instead of a GIN
bitmap over its whole posting list and a sample of the rows in table order.

A rebuild (``sql/migrations/0026_keyword_champion_builds.sql``) reads every posting of the memory
from one snapshot beside the writers and loads the lists as a new generation
(``sql/migrations/0027_keyword_champion_generations.sql``), which searches and writers do not read
yet, then swaps it in under the memory's statistics row lock: only that memory's chunk writers
wait, and only while the swap weighs the episodes they wrote during the rebuild (they log them
while it is registered) through the new floors and makes the new generation current. The old
generation is deleted after, in batches.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations

import psycopg

from memory_pipeline.storage import search_store
from memory_pipeline.storage.paths import query

# Candidate budget of the capped path. A query is scored exactly when at most this many chunks
# can match it (its lexemes' summed df, or the memory's chunk count, is within it), so memories
# of up to CAP chunks always are. Scoring costs ~20 us a candidate (heap row, TOASTed tsvector)
# on 2 cores at 100,000 chunks: 500 keeps the channel's p95 under ~20 ms there.
CAP = 500

# Rows a champion list holds after a refresh: twice the channel's deepest candidate list
# (``KEYWORD_CANDIDATES``), so deletions leave it deep enough until the next refresh.
CHAMPIONS = 100


@dataclass(frozen=True)
class Bm25:
    """BM25's two constants, passed to ``bm25_weight`` (migration 0017) by every keyword query.

    k1: how fast a lexeme's repeats stop adding (term-frequency saturation); b: how much a long
    document is marked down (length normalisation, 0 none, 1 full)."""

    k1: float
    b: float

    def params(self) -> dict[str, float]:
        return {"k1": self.k1, "b": self.b}


# The keyword and statement channels' BM25 (benchmarks/README.md: chosen leave-one-out on LoCoMo).
BM25 = Bm25(k1=1.2, b=0.75)


def record_chunks(conn: psycopg.Connection | psycopg.Cursor, episode_ids: Sequence[int]) -> None:
    """Add the chunk rows of ``episode_ids`` (written in the current transaction) to the statistics.

    Call it once per transaction, after the chunks are written, for exactly the episodes whose
    chunks that transaction wrote. One statement (``keyword_stats_record.sql``): memory totals
    first, then lexemes, each in key order, so concurrent writers lock rows in one order. Then
    the champion lists (``keyword_champions_record.sql``), after the memories' statistics rows:
    a rebuild's swap holds such a row, so the writer reads the lists it installed.
    """
    ids = list(episode_ids)
    if ids:
        conn.execute(query("keyword_stats_record"), {"episode_ids": ids})
        conn.execute(query("keyword_champions_record"), {"episode_ids": ids})


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
    if not conn.execute(
        "SELECT pg_try_advisory_lock(%s, hashtext(%s))", (BUILD_LOCK_CLASS, memory)
    ).fetchone()[0]:
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
    statement. False: the memory has no chunks (no row)."""
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
        report.rows, report.lists = conn.execute(
            "SELECT (SELECT count(*) FROM keyword_champions WHERE memory = %(m)s AND generation = %(g)s),"
            " (SELECT count(*) FROM keyword_champion_lists WHERE memory = %(m)s AND generation = %(g)s)",
            {"m": memory, "g": report.generation},
        ).fetchone()
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
        left = conn.execute(
            "SELECT EXISTS (SELECT 1 FROM keyword_champions k JOIN keyword_champion_state s USING (memory)"
            " WHERE k.memory = %s AND k.generation <> s.generation)",
            (memory,),
        ).fetchone()[0]
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
        else:
            with conn.transaction():
                conn.execute(query("keyword_champions_clear"), {"memory": memory})
    return builds


def recompute(conn: psycopg.Connection, memories: Iterable[str]) -> None:
    """Recount the statistics of ``memories`` from their chunks (after chunks were deleted).

    Takes ``keyword_memory_stats`` in SHARE ROW EXCLUSIVE mode for the rest of the transaction:
    it waits for writers whose chunks are not committed yet (so it counts them) and holds new
    ones back until it commits (they then add to the recounted figures). Writers take nothing
    of the statistics before that table, so they cannot deadlock with it.
    """
    names = sorted(set(memories))
    if not names:
        return
    with conn.transaction():
        conn.execute("LOCK TABLE keyword_memory_stats IN SHARE ROW EXCLUSIVE MODE")
        conn.execute(query("keyword_stats_recompute_memories"), {"memories": names})
        conn.execute(query("keyword_stats_recompute_lexemes"), {"memories": names})


@dataclass(frozen=True)
class MemoryStats:
    chunks: int
    total_lexemes: int
    episodes: int  # episodes with chunk rows (migration 0028)


def stored_stats(
    conn: psycopg.Connection, memory: str
) -> tuple[MemoryStats | None, dict[str, int]]:
    """The statistics as stored for ``memory`` (None: no row)."""
    row = conn.execute(
        "SELECT chunks, total_lexemes, episodes FROM keyword_memory_stats WHERE memory = %s",
        (memory,),
    ).fetchone()
    df = dict(
        conn.execute("SELECT lexeme, df FROM keyword_stats WHERE memory = %s", (memory,)).fetchall()
    )
    return (MemoryStats(*row) if row else None), df


def counted_stats(
    conn: psycopg.Connection, memory: str
) -> tuple[MemoryStats | None, dict[str, int]]:
    """The statistics of ``memory`` counted from its chunks now (what ``recompute`` would store)."""
    row = conn.execute(
        "SELECT count(*), sum(length(tsv)), count(DISTINCT episode_id) FROM chunks WHERE memory = %s"
        " HAVING count(*) > 0",
        (memory,),
    ).fetchone()
    df = dict(
        conn.execute(
            """SELECT u.lexeme, count(*) FROM chunks c, unnest(tsvector_to_array(c.tsv)) AS u(lexeme)
               WHERE c.memory = %s GROUP BY u.lexeme""",
            (memory,),
        ).fetchall()
    )
    return (MemoryStats(row[0], int(row[1]), row[2]) if row else None), df


# The capped path's "enough common lexemes together" gate considers at most this many of them
# (the rarest), so the tsquery (every combination of m of them) stays small.
COMMON_TERMS = 6


@dataclass(frozen=True)
class Plan:
    """How one query is scored: the path, the lexemes kept (rarest first), the gates (tsquery)."""

    path: str  # "none" (no lexeme), "unmatched", "exact", "capped", "counted"
    lexemes: tuple[str, ...] = ()
    dfs: tuple[int, ...] = ()
    gate: str | None = None  # tsqueries of the tiers (see keyword_capped.sql)
    common: tuple[str, ...] | None = None  # any of them (see _at_least_led)
    common_limit: int = 0
    fill: str | None = None
    champion: str | None = None  # the one common lexeme, read from its champion list
    chunks: int = 0
    total_lexemes: int = 0
    unmatched: int = 0  # query lexemes no chunk of the memory holds (dropped from the rest)


def _quote(lexeme: str) -> str:
    return search_store.or_tsquery([lexeme])


def _at_least(m: int, lexemes: Sequence[str]) -> str:
    """A tsquery matching chunks holding at least ``m`` of ``lexemes``."""
    if m <= 1:
        return search_store.or_tsquery(list(lexemes))
    return " | ".join(
        "(" + " & ".join(_quote(lex) for lex in combo) + ")" for combo in combinations(lexemes, m)
    )


def _at_least_led(m: int, lexemes: Sequence[str]) -> tuple[str, ...]:
    """``_at_least(m, lexemes)`` as tsqueries each led by a lexeme every match of it holds: the
    chunks holding the i-th of ``lexemes`` and m - 1 of the ones after it, for each i that leaves
    enough after it. Together they match the same chunks, but each GIN scan (``tsv @@
    ANY(...)``, one index search apiece, OR-ed into one bitmap) skips through the other posting
    lists by its leading lexeme's: a single "at least m" tsquery has no lexeme every match holds
    and decodes every posting list of the words whole (benchmarks/README.md)."""
    if m <= 1:
        return (search_store.or_tsquery(list(lexemes)),)
    return tuple(_with_rarest(m, lexemes[i:]) for i in range(len(lexemes) - m + 1))


def _with_rarest(m: int, lexemes: Sequence[str]) -> str:
    """A tsquery matching chunks holding the first (rarest) of ``lexemes`` and at least ``m`` - 1
    of the others: a lexeme every match holds, which GIN's scan skips through the other,
    longer posting lists by (a plain "at least m" has none and reads them all)."""
    if m <= 1 or len(lexemes) < 2:
        return _quote(lexemes[0])
    return f"{_quote(lexemes[0])} & ({_at_least(m - 1, lexemes[1:])})"


def _gates(
    kept: Sequence[tuple[str, int]], n: int, cap: int, listed: frozenset[str] = frozenset()
) -> tuple[str | None, tuple[str, ...] | None, int, str | None, str | None]:
    """(gate, common, its limit, fill, champion) of the capped path for ``kept`` (lexeme, df),
    rarest first; ``listed``: the lexemes with a champion list.

    A chunk holding a rare lexeme, or several common ones, is where the top BM25 scores are: a
    chunk holding one common lexeme only scores less than (k1 + 1) x its low idf (``BM25.k1``;
    term frequency saturates there).

    gate: the rare lexemes, the rarest ones while their summed df stays within ``cap`` (every
    chunk holding one is a candidate). common: chunks holding at least m of the (up to
    COMMON_TERMS rarest) other lexemes, m the smallest (>= 2) for which their expected number,
    were the lexemes independent, fits what is left of the budget (all of them at most), at most
    that many (``_at_least_led``'s tsqueries). fill: chunks holding the rarest of them and m - 2
    others (m - 1 in all; with a single common lexeme: that lexeme). Holding it, they score more
    than the other chunks of m - 1 common lexemes on average (its idf is the highest), and the
    fill reads the rarest one's posting list instead of every common lexeme's.
    champion: a single common lexeme with a list, whose best rows replace the common tier (the
    fill then only runs when filters or deletions left fewer than ``limit`` candidates).
    """
    rare, used = [], 0
    for lexeme, df in kept:
        if used + df > cap:
            break
        rare.append(lexeme)
        used += df
    common = kept[len(rare) :][:COMMON_TERMS]
    names = [lexeme for lexeme, _ in common]
    gate = search_store.or_tsquery(rare) if rare else None
    left = cap - used
    if len(names) == 1:
        if names[0] in listed:
            return gate, None, left, _quote(names[0]), names[0]
        return (
            (gate, None, 0, _quote(names[0]), None)
            if rare
            else (None, _at_least_led(1, names), cap, None, None)
        )
    exactly = [1.0]  # exactly[j]: probability that a chunk holds j of the common lexemes
    for _, df in common:
        p = min(df / max(n, 1), 1.0)
        exactly = [
            (exactly[j] if j < len(exactly) else 0.0) * (1 - p) + (exactly[j - 1] * p if j else 0.0)
            for j in range(len(exactly) + 1)
        ]
    m = next((m for m in range(2, len(names)) if n * sum(exactly[m:]) <= left), len(names))
    return gate, (_at_least_led(m, names) if left else None), left, _with_rarest(m - 1, names), None


def plan(conn: psycopg.Connection, memory: str, text: str, *, cap: int = CAP) -> Plan:
    rows = conn.execute(query("keyword_lexemes"), {"memory": memory, "text": text}).fetchall()
    if not rows:
        return Plan("none")
    if rows[0][2] is None:  # no statistics for this memory: count as keyword_bm25.sql does
        return Plan("counted", tuple(sorted(r[0] for r in rows)))
    chunks, total = rows[0][2], int(rows[0][3])
    kept = [(lexeme, df) for lexeme, df, _, _, _ in rows if df]  # rarest first
    unmatched = len(rows) - len(kept)
    if not kept:
        return Plan("unmatched", chunks=chunks, total_lexemes=total, unmatched=unmatched)
    lexemes, dfs = tuple(lex for lex, _ in kept), tuple(d for _, d in kept)
    if sum(dfs) <= cap or chunks <= cap:  # at most cap chunks match: score them all
        return Plan(
            "exact",
            lexemes,
            dfs,
            search_store.or_tsquery(list(lexemes)),
            chunks=chunks,
            total_lexemes=total,
            unmatched=unmatched,
        )
    listed = frozenset(lexeme for lexeme, _, _, _, has_list in rows if has_list)
    gate, common, common_limit, fill, champion = _gates(kept, chunks, cap, listed)
    return Plan(
        "capped",
        lexemes,
        dfs,
        gate,
        common,
        common_limit,
        fill,
        champion,
        chunks,
        total,
        unmatched,
    )


def statement(
    conn: psycopg.Connection,
    memory: str,
    text: str,
    filters,
    *,
    limit: int = 50,
    cap: int = CAP,
    bm25: Bm25 | None = None,
    planned: Plan | None = None,
) -> tuple[str, str | None, dict]:
    """The path full-text search takes for ``text`` and the named query and parameters it runs
    (None when there is nothing to run). ``ranked`` runs it; the latency benchmark EXPLAINs it.
    ``planned``: the query's ``plan``, when the caller has read it already."""
    p = planned or plan(conn, memory, text, cap=cap)
    if p.path in ("none", "unmatched"):
        return p.path, None, {}
    params = {
        "memory": memory,
        "lexemes": list(p.lexemes),
        "limit": limit,
        **filters.params(),
        **(bm25 or BM25).params(),
    }
    if p.path == "counted":
        return (
            p.path,
            "keyword_bm25",
            {**params, "tsquery": search_store.or_tsquery(list(p.lexemes))},
        )
    if p.path == "exact":
        return p.path, "keyword_exact", {**params, "tsquery": p.gate, "n": p.chunks}
    return (
        p.path,
        "keyword_capped",
        {
            **params,
            "dfs": list(p.dfs),
            "gate": p.gate,
            "common": list(p.common) if p.common else None,
            "common_limit": p.common_limit,
            "fill": p.fill,
            "champion": p.champion,
            "cap": cap,
            "n": p.chunks,
            "avgdl": max(p.total_lexemes / p.chunks, 1.0),
        },
    )


def ranked(
    conn: psycopg.Connection,
    memory: str,
    text: str,
    filters,
    *,
    limit: int = 50,
    cap: int = CAP,
    bm25: Bm25 | None = None,
    planned: Plan | None = None,
) -> tuple[list[tuple[str, float]], str]:
    """Full-text BM25 only: ((chunk_id, score) best first, the path taken)."""
    path, name, params = statement(
        conn, memory, text, filters, limit=limit, cap=cap, bm25=bm25, planned=planned
    )
    if name is None:
        return [], path
    return [(c, float(s)) for c, s in conn.execute(query(name), params).fetchall()], path


def candidates(
    conn: psycopg.Connection,
    memory: str,
    text: str,
    filters,
    limit: int = 50,
    *,
    cap: int = CAP,
    bm25: Bm25 | None = None,
) -> tuple[list[tuple[str, float]], str]:
    """(ranked (chunk_id, score) list, method): BM25 full text, else the literal substring."""
    hits = scored_candidates(conn, memory, text, filters, limit, cap=cap, bm25=bm25)
    return hits.rows, hits.method


@dataclass(frozen=True)
class KeywordHits:
    """The keyword channel's answer: its ranked (chunk_id, score) rows, how it found them
    ("full_text" or "substring"), and the document frequency of each query lexeme the memory's
    chunks hold among its ``chunks`` rows (what fusion weighs the BM25 scores against,
    ``domain.evidence.keyword_scale``; empty without statistics)."""

    rows: list[tuple[str, float]]
    method: str
    dfs: tuple[int, ...] = ()
    chunks: int = 0
    unmatched: int = 0  # query lexemes no chunk holds


def scored_candidates(
    conn: psycopg.Connection,
    memory: str,
    text: str,
    filters,
    limit: int = 50,
    *,
    cap: int = CAP,
    bm25: Bm25 | None = None,
) -> KeywordHits:
    """``candidates`` with the statistics of the query's lexemes it read on the way."""
    p = plan(conn, memory, text, cap=cap)
    rows, _path = ranked(conn, memory, text, filters, limit=limit, cap=cap, bm25=bm25, planned=p)
    if rows:
        return KeywordHits(rows, "full_text", p.dfs, p.chunks, p.unmatched)
    needle = text.strip()
    found = conn.execute(
        query("keyword_substring"),
        {"memory": memory, "needle": needle, "limit": limit, **filters.params()},
    ).fetchall()
    return KeywordHits([(c, float(s)) for c, s in found], "substring")
