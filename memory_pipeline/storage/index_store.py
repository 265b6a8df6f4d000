"""Reading pending work and writing chunks and vectors (bulk, binary COPY)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import psycopg
from pgvector import HalfVector

from memory_pipeline.domain.chunking import Chunk
from memory_pipeline.storage import keyword_stats_store
from memory_pipeline.storage.database import one_row
from memory_pipeline.storage.paths import query
from memory_pipeline.storage.profiles_store import StoredProfile


@dataclass(frozen=True)
class PendingEpisode:
    id: int
    memory: str
    content_hash: str
    body: str
    ingest_day: dt.date
    title: str = ""  # a first paragraph that repeats it is the body's heading (domain.windows)


@dataclass(frozen=True)
class ChunkVectors:
    """A chunk's vector and its paragraph windows' vectors (``domain.windows``), unit length."""

    chunk: np.ndarray
    windows: np.ndarray | None = None  # (n_windows, dim); None when the chunk has no windows


@dataclass
class EpisodeWork:
    """One pending episode, chunked, with the vectors it still needs."""

    episode: PendingEpisode
    chunks: list[Chunk]
    has_stored_chunks: bool
    missing: list[str]  # chunk ids (unique, in chunk order) that need a vector
    vectors: dict[str, ChunkVectors]  # filled as model batches come back

    @property
    def complete(self) -> bool:
        return len(self.vectors) == len(self.missing)


@dataclass(frozen=True)
class PendingDay:
    count: int
    newest_id: int
    oldest_ingested_at: dt.datetime


def _target(profile: StoredProfile | None) -> dict:
    # No stored profile yet: nothing has a vector, so every episode is pending.
    return {
        "profile_id": profile.id if profile else -1,
        "generation": profile.generation if profile else -1,
    }


def unchunked_episodes(
    conn: psycopg.Connection, *, limit: int, day: dt.date | None = None
) -> list[PendingEpisode]:
    """Up to ``limit`` episodes without any chunk yet (optionally of one ingest day), oldest
    occurrence first: the ``chunks`` stage's work."""
    rows = conn.execute(query("unchunked_episodes"), {"limit": limit, "day": day}).fetchall()
    return [PendingEpisode(*row) for row in rows]


# The advisory-lock class of index claims (claim_episodes.sql): "MPix".
CLAIM_LOCK_CLASS = 0x4D506978


def pending_ids(
    conn: psycopg.Connection,
    profile: StoredProfile | None,
    *,
    limit: int,
    day: dt.date | None = None,
) -> list[int]:
    """Up to ``limit`` pending episode ids, oldest occurrence first (one scan of the episodes)."""
    rows = conn.execute(
        query("pending_episode_ids"),
        {**_target(profile), "limit": limit, "day": day},
        prepare=False,
    )
    return [row[0] for row in rows]


def claim_episodes(
    conn: psycopg.Connection, profile: StoredProfile | None, episode_ids: Sequence[int]
) -> tuple[list[PendingEpisode], list[int]]:
    """Claim those of ``episode_ids`` no index pass holds: (the claimed ones still pending, in
    the given order; the claimed ones finished meanwhile, to release at once).

    The claim is a session advisory lock per episode on ``conn``: hold that connection until
    ``release_claims``; a process that dies releases its claims with its connection.
    """
    rows = conn.execute(
        query("claim_episodes"),
        {**_target(profile), "ids": list(episode_ids), "lock_class": CLAIM_LOCK_CLASS},
        prepare=False,
    )
    pending, done = [], []
    for *fields, still_pending in rows:
        if still_pending:
            pending.append(PendingEpisode(*fields))
        else:
            done.append(fields[0])
    return pending, done


def release_claims(conn: psycopg.Connection, episode_ids: Sequence[int]) -> None:
    if episode_ids:
        conn.execute(
            query("release_claims"), {"ids": list(episode_ids), "lock_class": CLAIM_LOCK_CLASS}
        )


def pending_days(conn: psycopg.Connection, profile: StoredProfile | None) -> dict[str, PendingDay]:
    """Per ingest day (ISO date): the pending episodes for ``profile``'s written generation."""
    rows = conn.execute(query("pending_by_day"), _target(profile))
    return {day.isoformat(): PendingDay(n, newest, oldest) for day, n, newest, oldest in rows}


def pending_by_day(conn: psycopg.Connection, profile: StoredProfile | None) -> dict[str, int]:
    return {day: p.count for day, p in pending_days(conn, profile).items()}


def pending_characters(
    conn: psycopg.Connection, profile: StoredProfile | None, day: dt.date | None = None
) -> int:
    """The characters of the bodies of the episodes pending for ``profile`` (of one ingest
    day): what an index run will read, and its cost follows them."""
    row = conn.execute(
        query("pending_characters"),
        {**_target(profile), "day": day},
    ).fetchone()
    return int(row[0]) if row else 0


def characters_of(conn: psycopg.Connection, episode_ids: Sequence[int]) -> int:
    row = conn.execute(
        "SELECT coalesce(sum(length(body)), 0) FROM episodes WHERE id = ANY(%s)",
        (list(episode_ids),),
    ).fetchone()
    return int(row[0]) if row else 0


def episodes_with_chunks(conn: psycopg.Connection, episode_ids: Sequence[int]) -> set[int]:
    rows = conn.execute(
        "SELECT DISTINCT episode_id FROM chunks WHERE episode_id = ANY(%s)", (list(episode_ids),)
    )
    return {row[0] for row in rows}


def existing_vectors(
    conn: psycopg.Connection, profile: StoredProfile, keys: Iterable[tuple[str, str]]
) -> set[tuple[str, str]]:
    """The (memory, chunk_id) pairs among ``keys`` that already have a vector."""
    keys = list(keys)
    if not keys:
        return set()
    # prepare=False: after 5 runs psycopg prepares the query and PostgreSQL may settle on a
    # generic plan that cannot see the arrays' lengths (existing_vectors.sql forces one probe
    # per key whatever the statistics; this keeps each call planned with its real arrays).
    rows = conn.execute(
        query("existing_vectors"),
        {
            "memories": [m for m, _ in keys],
            "chunk_ids": [c for _, c in keys],
            "profile_id": profile.id,
            "generation": profile.generation,
        },
        prepare=False,
    )
    return {(m, c) for m, c in rows}


def _copy_chunks(cur: psycopg.Cursor, works: Sequence[EpisodeWork]) -> int:
    written = 0
    with cur.copy(query("chunks_copy")) as copy:
        copy.set_types(["int8", "int4", "text", "text", "int4", "int4", "int4", "text", "text"])
        for work in works:
            ep = work.episode
            for c in work.chunks:
                copy.write_row(
                    (
                        ep.id,
                        c.ordinal,
                        ep.memory,
                        c.chunk_id,
                        c.start,
                        c.end,
                        c.token_estimate,
                        c.text,
                        c.anchor,
                    )
                )
                written += 1
    return written


def halfvec_array_binary(matrix: np.ndarray, halfvec_oid: int) -> bytes:
    """PostgreSQL's binary form of a one-dimensional ``halfvec[]`` holding the rows of ``matrix``.

    array_send's layout: ndim, has-nulls flag, element type oid, then (length, lower bound) per
    dimension; each element is its byte length and halfvec_send's form (int16 dim, int16 unused,
    dim big-endian float16). Built in one numpy pass: dumping a list of ``HalfVector`` element by
    element cost the store path about a fifth of its speed (benchmarks/bench_indexing.py).
    """
    n, dim = matrix.shape
    element = np.dtype([("len", ">i4"), ("dim", ">i2"), ("unused", ">i2"), ("data", ">f2", (dim,))])
    out = np.zeros(n, dtype=element)
    out["len"] = 4 + 2 * dim
    out["dim"] = dim
    out["data"] = matrix
    return np.array([1, 0, halfvec_oid, n, 1], dtype=">u4").tobytes() + out.tobytes()


def _copy_vectors(
    cur: psycopg.Cursor, profile: StoredProfile, rows: Sequence[tuple[str, str, ChunkVectors]]
) -> int:
    halfvec_oid = cur.adapters.types["halfvec"].oid
    with cur.copy(query("embeddings_copy")) as copy:
        # Binary COPY sends each field as bytes the server reads with the column's own type: the
        # windows go as pre-built halfvec[] bytes (declared bytea so psycopg passes them through).
        copy.set_types(["int4", "int4", "text", "text", "halfvec", "bytea"])
        for memory, chunk_id, vectors in rows:
            windows = (
                None
                if vectors.windows is None
                else halfvec_array_binary(vectors.windows, halfvec_oid)
            )
            copy.write_row(
                (
                    profile.id,
                    profile.generation,
                    memory,
                    chunk_id,
                    HalfVector(vectors.chunk),
                    windows,
                )
            )
    return len(rows)


@dataclass
class WriteReport:
    episodes: int = 0  # episodes this call wrote a chunk or a vector of
    chunks: int = 0
    vectors: int = 0
    skipped_locked: int = 0


def write_episodes(
    conn: psycopg.Connection, profile: StoredProfile | None, works: Sequence[EpisodeWork]
) -> WriteReport:
    """Commit the chunks and vectors of complete episodes, all of each episode or none of it.

    Episodes another worker is writing right now (row locked) are skipped and stay pending for
    whoever holds them; so are revisions superseded since they were listed (never indexed). The lock is FOR NO KEY UPDATE: writers of the same episode still
    exclude each other, while the FOR KEY SHARE that a row referencing the episode takes
    (entity mentions and names linked meanwhile, by ``index``'s own linking thread or a Dagster
    run) does not make a writer skip it. ``synchronous_commit = off`` is safe here: a crash can
    only lose the last few commits, and the episodes they covered simply become pending again.
    """
    report = WriteReport()
    if not works:
        return report
    by_id = {w.episode.id: w for w in works}
    with conn.transaction(), conn.cursor() as cur:
        cur.execute("SET LOCAL synchronous_commit = off")
        locked = {
            row[0]
            for row in cur.execute(
                query("episodes_lock_current"),
                (list(by_id),),
            )
        }
        report.skipped_locked = len(by_id) - len(locked)
        mine = [by_id[i] for i in sorted(locked)]
        # Re-read inside the lock: another run may have finished some of this since we looked.
        already_chunked = episodes_with_chunks(conn, [w.episode.id for w in mine])
        unchunked = [w for w in mine if w.episode.id not in already_chunked]
        report.chunks = _copy_chunks(cur, unchunked)
        touched = {w.episode.id for w in unchunked}
        if profile is not None:
            wanted = [
                (w, cid, w.vectors[cid]) for w in mine for cid in w.missing if cid in w.vectors
            ]
            present = existing_vectors(conn, profile, ((w.episode.memory, c) for w, c, _ in wanted))
            new = [(w, c, v) for w, c, v in wanted if (w.episode.memory, c) not in present]
            report.vectors = _copy_vectors(
                cur, profile, [(w.episode.memory, c, v) for w, c, v in new]
            )
            touched.update(w.episode.id for w, _, _ in new)
        keyword_stats_store.record_chunks(cur, [w.episode.id for w in unchunked])
        # Only what this call wrote: an episode another pass finished meanwhile is not ours.
        report.episodes = len(touched)
    return report


def analyze_written(conn: psycopg.Connection) -> None:
    """Refresh the planner's statistics of the tables an index pass writes (what the pending
    listing, the ``pending_episodes`` function of migration 0012, reads): ``indexing.index_pass.ANALYZE_AFTER`` says when."""
    conn.execute("ANALYZE episodes, chunks, embeddings")


def delete_chunks_of_days(conn: psycopg.Connection, start: dt.date, end: dt.date) -> int:
    """Delete the chunk rows of the episodes ingested on ``start``..``end`` (they become pending
    again) and recount their memories' keyword statistics, in one transaction; the row count."""
    with conn.transaction():
        gone = conn.execute(
            query("chunks_delete_days"),
            (start, end),
        ).fetchall()
        keyword_stats_store.recompute(conn, [memory for memory, _ in gone])
    return sum(n for _, n in gone)


def count_summary(conn: psycopg.Connection, profile: StoredProfile | None) -> dict[str, int]:
    episodes, chunks = one_row(
        conn, "SELECT (SELECT count(*) FROM episodes), (SELECT count(*) FROM chunks)"
    )
    vectors = windowed = 0
    if profile is not None:
        # windows IS NOT NULL reads the null bitmap only, never the (TOASTed) arrays.
        vectors, windowed = one_row(
            conn,
            query("embedding_counts"),
            (profile.id, profile.generation),
        )
    return {
        "episodes": episodes,
        "chunks": chunks,
        "vectors": vectors,
        "vectors_with_windows": windowed,
    }
