"""A day's work, as its partitions do it: chunk the day's episodes, embed the day's chunks."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable

from memory_pipeline.embedders.base import Embedder
from memory_pipeline.indexing.plan import plan
from memory_pipeline.indexing.report import IndexReport, count
from memory_pipeline.indexing.until_done import index_until_done
from memory_pipeline.storage import index_store
from memory_pipeline.storage.database import Database


def embed_day(
    db: Database,
    embedder: Embedder,
    day: dt.date,
    on_progress: Callable[[IndexReport], None] | None = None,
) -> IndexReport:
    """The ``embeddings`` partition's work: vectors for the day's stored chunks that lack one in
    the generation being written; writes no chunk and never switches the serving generation."""
    return index_until_done(
        db, embedder, day=day, on_progress=on_progress, chunked_only=True, promote=False
    )


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
