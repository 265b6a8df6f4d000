"""What is pending: episodes without chunks, or with chunks that lack a vector of the generation
being written (the DESIGN's pending episodes), counted per ingest day."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from memory_pipeline.embedders.base import Embedder, EmbeddingProfile
from memory_pipeline.storage import (
    hnsw_store,
    index_store,
    observations_store,
    partition_store,
    profiles_store,
)
from memory_pipeline.storage.database import Database
from memory_pipeline.storage.index_store import PendingDay
from memory_pipeline.storage.profiles_store import StoredProfile


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


def oldest_pending(db: Database, profile: EmbeddingProfile) -> dt.datetime | None:
    """When the oldest episode pending for ``profile`` was ingested (None: nothing is pending)."""
    return index_lag(db, profile).oldest_ingested_at


@dataclass(frozen=True)
class IndexLag:
    """How far the index is behind what was ingested: the episodes pending for the configured
    profile and when the oldest of them was ingested (None: nothing is pending)."""

    episodes: int
    oldest_ingested_at: dt.datetime | None


def index_lag(db: Database, profile: EmbeddingProfile) -> IndexLag:
    """The ``IndexLag`` for ``profile``'s written generation, read at once."""
    with db.connection() as conn:
        days = index_store.pending_days(conn, profiles_store.writing_target(conn, profile))
    return IndexLag(
        sum(p.count for p in days.values()),
        min((p.oldest_ingested_at for p in days.values()), default=None),
    )


@dataclass(frozen=True)
class Outlook:
    """What is left to do for a profile, read at once (what the unindexed-episodes sensor plans
    runs from)."""

    target: StoredProfile | None  # the generation being written (None: nothing embedded yet)
    pending: dict[str, PendingDay]  # per ingest day
    days: set[str]  # the ingest days that hold episodes
    switch_due: bool  # a new generation or profile waits to serve once nothing is pending
    statements: int  # statements without a vector in the generation being written
    # What search still lacks from the global steps: the serving generation's HNSW index, or
    # the written generation's calibration (the unpartitioned assets' work, not a day's).
    search_unready: bool = False


def outlook(db: Database, profile: EmbeddingProfile) -> Outlook:
    with db.connection() as conn:
        target = profiles_store.writing_target(conn, profile)
        pending = index_store.pending_days(conn, target)
        days = set(partition_store.days_with_episodes(conn))
        stored, serving = (
            profiles_store.get_profile(conn, profile),
            profiles_store.active_profile(conn),
        )
        statements = observations_store.pending_count(conn, target) if target else 0
        unready = serving is not None and not hnsw_store.index_ready(conn, serving)
        if target is not None and not unready:
            unready = profiles_store.stored_calibration(conn, target.id, target.generation) is None
    switch_due = stored is not None and (
        stored.building_generation is not None or serving is None or serving.id != stored.id
    )
    return Outlook(target, pending, days, switch_due, statements, unready)
