"""Generations: which profile and generation search serves, reindexing, the switch, the rollback."""

from __future__ import annotations

import logging

from memory_pipeline.embedders.base import Embedder, EmbeddingProfile
from memory_pipeline.indexing.pending import pending_count
from memory_pipeline.storage import health_store, profiles_store
from memory_pipeline.storage.database import Database
from memory_pipeline.storage.profiles_store import StoredProfile, get_profile

log = logging.getLogger(__name__)


def promote_when_complete(db: Database, embedder: Embedder, *, pending: int) -> str | None:
    """Switch search to the written generation/profile once nothing at all (``pending``, counted
    for it by the caller) is pending for it."""
    with db.connection() as conn:
        stored = get_profile(conn, embedder.profile)
        if stored is None or (stored.is_active and stored.building_generation is None):
            if stored is not None:  # first generation of the first profile: mark it ready
                profiles_store.mark_built(conn, stored.id, stored.generation)
            return None
        if pending > 0:
            return None
        switched = profiles_store.promote(conn, stored)
    if switched:
        log.info(switched)
    return switched


def switch_when_complete(db: Database, embedder: Embedder) -> tuple[int, str | None]:
    """``promote_when_complete`` with the pending count taken now: (that count, the switch made
    or None)."""
    pending = pending_count(db, embedder)
    return pending, promote_when_complete(db, embedder, pending=pending)


def serving_integrity(db: Database) -> tuple[StoredProfile | None, dict | None]:
    """The profile search serves, and its generation's missing, mis-sized and non-unit vectors
    (None, None before anything serves)."""
    with db.connection() as conn:
        profile = profiles_store.active_profile(conn)
        return profile, health_store.vector_integrity(conn, profile) if profile else None


def start_reindex(db: Database, profile: EmbeddingProfile) -> tuple[StoredProfile, bool]:
    """Start a new generation of ``profile`` (or resume the one being built: ``True``) while
    search keeps serving the current one; the index passes then build it."""
    with db.connection() as conn:
        return profiles_store.start_reindex(conn, profile)


def rollback(db: Database) -> str:
    """Serve the previous generation of the active profile again (its vectors were kept); what
    was done. LookupError when there is none."""
    with db.connection() as conn:
        return profiles_store.rollback(conn)
