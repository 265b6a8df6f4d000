"""A day's work, as its partitions do it: chunk the day's episodes, embed its chunks, link its names.

One way to index a day: the ``chunks``, ``embeddings`` and ``entity_mentions`` partitions run
``chunk_day``, ``embed_day`` and ``link_day``, and the ``backlog`` asset runs all three
(``index_day``) for each pending day. Each returns what it wrote and the day's counts after it,
which its partition's materialization and checks show. A day's work reads and writes its own
day's rows only, and running it again leaves the same rows; the global work after it (the
serving generation, its model's calibration, the HNSW index, keyword lists) is the
unpartitioned assets'.
"""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass, field

from memory_pipeline.domain import calibration
from memory_pipeline.domain.calibration import Calibration
from memory_pipeline.embedders.base import Embedder
from memory_pipeline.indexing.plan import plan
from memory_pipeline.indexing.report import DayFigures, IndexReport, count
from memory_pipeline.indexing.until_done import index_day_chunks
from memory_pipeline.progress import ProgressCallback
from memory_pipeline.storage import entities_store, index_store, partition_store, profiles_store
from memory_pipeline.storage.database import Database


@dataclass
class ChunkedDay:
    """What ``chunk_day`` did, and the day's chunks after it."""

    day: dt.date
    report: IndexReport
    # chunks, characters, episodes, episodes_without_chunks (``partition_store.chunk_stats``)
    stats: dict


@dataclass
class EmbeddedDay:
    """What ``embed_day`` did, and the day's vectors after it in the generation being written."""

    day: dt.date
    report: IndexReport
    # vectors, missing, wrong_dimension, not_normalized, window_vectors, ...
    # (``partition_store.vector_integrity``)
    vectors: dict
    generation: int  # the generation being written (0: no profile stored yet)
    # Its model's similarity cut-offs (``indexing.calibration``), or the defaults and why.
    calibration: Calibration = calibration.DEFAULT


@dataclass
class LinkedDay:
    """What ``link_day`` did, and the day's entity mentions after it."""

    day: dt.date
    report: entities_store.EntityReport
    memories: list[str]  # the memories of the day's episodes
    stats: dict  # mentions, episodes_without_names (``partition_store.entity_stats``)
    top: list[dict] = field(default_factory=list)  # the memories' most mentioned entities
    seconds: float = 0.0


@dataclass
class IndexedDay:
    chunked: ChunkedDay
    embedded: EmbeddedDay
    linked: LinkedDay


def chunk_day(db: Database, day: dt.date, *, anchors: bool) -> ChunkedDay:
    """The ``chunks`` partition's work: the day's episodes without chunks, chunked (no model)."""
    report = chunk_pending(db, day=day, anchors=anchors)
    with db.connection() as conn:
        stats = partition_store.chunk_stats(conn, day)
    return ChunkedDay(day, report, stats)


def rechunk_day(db: Database, day: dt.date, *, anchors: bool) -> ChunkedDay:
    """The ``chunks`` partition's work in a ``backfill --rechunk`` run: the day's chunks deleted
    and cut again at once. Vectors are kept and found again by content, so unchanged texts are
    searchable again the moment they are stored; the day leaves search only for that moment,
    and only while its run runs (never from a command that merely submitted it)."""
    forget_chunks_of_days(db, day, day)
    return chunk_day(db, day, anchors=anchors)


def embed_day(
    db: Database,
    embedder: Embedder,
    day: dt.date,
    on_progress: ProgressCallback | None = None,
) -> EmbeddedDay:
    """The ``embeddings`` partition's work (``until_done.index_day_chunks``): vectors for the
    day's stored chunks that lack one in the generation being written; writes no chunk and never
    switches the serving generation."""
    report = index_day_chunks(db, embedder, day, on_progress=on_progress)
    with db.connection() as conn:
        target = profiles_store.writing_target(conn, embedder.profile)
        found = (
            partition_store.vector_integrity(conn, day, target)
            if target
            else partition_store.no_vectors(conn, day)
        )
        measured = (
            profiles_store.stored_calibration(conn, target.id, target.generation)
            if target
            else None
        )
    return EmbeddedDay(
        day, report, found, target.generation if target else 0, measured or calibration.DEFAULT
    )


def link_day(db: Database, day: dt.date) -> LinkedDay:
    """The ``entity_mentions`` partition's work: the day's proper names, and links from their
    memories' entities to the day's episodes that mention them (only links to the day's)."""
    started = time.perf_counter()
    report = entities_store.EntityReport()
    with db.connection() as conn:
        memories = entities_store.refresh_day(conn, day, report)
        stats = partition_store.entity_stats(conn, day)
        top = entities_store.top_entities(conn, memories)
    return LinkedDay(day, report, memories, stats, top, time.perf_counter() - started)


def index_day(
    db: Database, embedder: Embedder, day: dt.date, on_progress: ProgressCallback | None = None
) -> IndexedDay:
    """The day's three partitions' work, in their order (``on_progress``: the embedding's)."""
    return IndexedDay(
        chunk_day(db, day, anchors=embedder.heading_anchors),
        embed_day(db, embedder, day, on_progress=on_progress),
        link_day(db, day),
    )


def days_done_by_a_run(
    db: Database,
    embedder: Embedder,
    report: IndexReport,
    days: list[str],
    linked: entities_store.EntityReport,
) -> list[IndexedDay]:
    """What a run over many days (``memory-pipeline index``) did for each of the ``days`` it
    finished, in the form a day's partitions report theirs, with the day's counts after it: the
    episodes, chunks and vectors written are the day's own; the times, model calls and
    ``linked`` (the linking worker's report) are the whole run's."""
    out = []
    with db.connection() as conn:
        target = profiles_store.writing_target(conn, embedder.profile)
        measured = (
            profiles_store.stored_calibration(conn, target.id, target.generation)
            if target
            else None
        )
        for iso in days:
            day = dt.date.fromisoformat(iso)
            figures = report.days.get(iso) or DayFigures()
            own = IndexReport(
                profile=report.profile,
                passes=report.passes,
                episodes=figures.episodes,
                chunks=figures.chunks,
                vectors=figures.vectors,
                windows=figures.windows,
                model_calls=report.model_calls,
                embed_seconds=report.embed_seconds,
                store_seconds=report.store_seconds,
                seconds=report.seconds,
                pending_after=(report.pending_days or {}).get(iso, 0),
            )
            own.preview = [p for p in report.preview if p.get("ingest_day", iso) == iso]
            found = (
                partition_store.vector_integrity(conn, day, target)
                if target
                else partition_store.no_vectors(conn, day)
            )
            memories = entities_store.day_memories(conn, day)
            out.append(
                IndexedDay(
                    ChunkedDay(day, own, partition_store.chunk_stats(conn, day)),
                    EmbeddedDay(
                        day,
                        own,
                        found,
                        target.generation if target else 0,
                        measured or calibration.DEFAULT,
                    ),
                    LinkedDay(
                        day,
                        linked,
                        memories,
                        partition_store.entity_stats(conn, day),
                        entities_store.top_entities(conn, memories),
                        report.seconds,
                    ),
                )
            )
    return out


def days_with_episodes(db: Database) -> list[str]:
    """The ingest days (ISO dates) that hold episodes: the partitions that exist."""
    with db.connection() as conn:
        return partition_store.days_with_episodes(conn)


def forget_chunks_of_days(db: Database, start: dt.date, end: dt.date) -> int:
    """Delete the chunk rows of the ingest days from ``start`` to ``end`` so that they are
    chunked again (``memory-pipeline backfill --rechunk``); vectors are kept and found again by
    content. The rows deleted."""
    with db.connection() as conn:
        return index_store.delete_chunks_of_days(conn, start, end)


def chunk_pending(
    db: Database, *, anchors: bool, day: dt.date | None = None, limit: int = 5000
) -> IndexReport:
    """Chunk episodes that have no chunks yet (no model involved): the ``chunks`` stage alone.
    ``anchors`` off stores no heading anchor, so none is keyword-indexed, embedded or shown."""
    started = time.perf_counter()
    report = IndexReport(profile="", passes=1)
    with db.connection() as conn:
        while True:
            unchunked = index_store.unchunked_episodes(conn, limit=limit, day=day)
            if not unchunked:
                break
            works = plan(conn, None, unchunked, anchors=anchors)
            for w in works:
                w.missing.clear()  # chunks only: no vectors wanted here
            before = report.episodes
            t0 = time.perf_counter()
            count(
                report,
                works,
                index_store.write_episodes(conn, None, works),
                time.perf_counter() - t0,
            )
            if report.episodes == before:
                break
    report.seconds = time.perf_counter() - started
    return report
