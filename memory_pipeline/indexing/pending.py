"""What is pending: episodes without chunks, or with chunks that lack a vector of the generation
being written (the DESIGN's pending episodes), counted per ingest day."""

from __future__ import annotations

import datetime as dt

from memory_pipeline.embedders.base import Embedder
from memory_pipeline.storage import index_store, profiles_store
from memory_pipeline.storage.database import Database


def pending_by_day(db: Database, embedder: Embedder) -> dict[str, int]:
    """Pending episodes per ingest day for the generation ``embedder`` writes."""
    with db.connection() as conn:
        return index_store.pending_by_day(
            conn, profiles_store.writing_target(conn, embedder.profile)
        )


def pending_of(counts: dict[str, int], day: dt.date | None) -> int:
    """Of ``pending_by_day``'s counts: ``day``'s, or all of them."""
    return counts.get(day.isoformat(), 0) if day is not None else sum(counts.values())


def pending_count(db: Database, embedder: Embedder, *, day: dt.date | None = None) -> int:
    return pending_of(pending_by_day(db, embedder), day)
