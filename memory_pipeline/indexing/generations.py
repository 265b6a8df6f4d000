"""Generations: which profile and generation search serves, and the switch to a finished one."""

from __future__ import annotations

import logging

from memory_pipeline.embedders.base import Embedder
from memory_pipeline.storage import profiles_store
from memory_pipeline.storage.database import Database
from memory_pipeline.storage.profiles_store import get_profile

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
