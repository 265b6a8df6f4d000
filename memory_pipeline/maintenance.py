"""Upkeep of what is global by nature: recurring names, the HNSW index, index recall, daily figures.

The nightly run's steps whose effect is not one day's (the Dagster maintenance assets and checks
call these); the keyword champion lists are ``Memory.rebuild_keyword_lists``'s.
"""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass

from memory_pipeline.embedders.base import EmbeddingProfile
from memory_pipeline.storage import (
    entities_store,
    health_store,
    hnsw_store,
    index_store,
    partition_store,
    profiles_store,
)
from memory_pipeline.storage.database import Database
from memory_pipeline.storage.hnsw_store import IndexState
from memory_pipeline.storage.profiles_store import StoredProfile


@dataclass
class PromotedEntities:
    report: entities_store.EntityReport  # names promoted, mentions linked
    memories: list[str]  # the memories promoted in
    total: int  # entities of every memory after it
    top: list[dict]  # those memories' most mentioned entities
    seconds: float


def promote_entities(db: Database) -> PromotedEntities:
    """Promote the proper names that recur in at least two episodes of a memory to entities,
    linked to every episode of the memory that mentions them; fold the mention counts."""
    started = time.perf_counter()
    report = entities_store.EntityReport()
    with db.connection() as conn:
        memories = entities_store.promote_memories(conn, report)
        entities_store.compact_mention_counts(conn)
        total = entities_store.count_entities(conn)
        top = entities_store.top_entities(conn, memories)
    return PromotedEntities(report, memories, total, top, time.perf_counter() - started)


def ensure_hnsw_index(db: Database) -> tuple[StoredProfile, IndexState]:
    """Build or repair the serving profile's HNSW index (concurrently: search goes on), then
    ANALYZE; LookupError when no profile serves yet."""
    with db.connection() as conn:  # autocommit: CREATE INDEX CONCURRENTLY needs it
        profile = profiles_store.active_profile(conn)
        if profile is None:
            raise LookupError("no embedding profile is active yet: materialize embeddings first")
        state = hnsw_store.ensure_index(conn, profile)
        health_store.analyze(conn)
    return profile, state


def index_recall(db: Database) -> float | None:
    """Recall@10 of the serving HNSW index against exact search (None: no vectors yet)."""
    with db.connection() as conn:
        profile = profiles_store.active_profile(conn)
        return health_store.index_recall(conn, profile) if profile else None


def record_daily_stats(db: Database, configured: EmbeddingProfile) -> dict:
    """Today's figures (counts, pending for the ``configured`` profile as the index passes count
    it, per-kind counts, the last 24 hours of search telemetry), saved as today's row of
    ``pipeline_stats`` and returned."""
    now = dt.datetime.now(dt.UTC)
    with db.connection() as conn:
        stats = health_store.daily_stats(conn, now - dt.timedelta(hours=24))
        profile = profiles_store.active_profile(conn)
        target = profiles_store.writing_target(conn, configured)
        stats["pending"] = sum(index_store.pending_by_day(conn, target).values())
        stats["active_profile"] = (
            f"{profile.name} generation {profile.generation}" if profile else None
        )
        stats["days_with_episodes"] = len(partition_store.days_with_episodes(conn))
        health_store.save_daily_stats(conn, now.date(), stats)
    return stats
