"""Generations: which profile and generation search serves, reindexing, the switch, the rollback."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from memory_pipeline.embedders.base import Embedder, EmbeddingProfile
from memory_pipeline.errors import InputError, ModelRefused
from memory_pipeline.indexing.canary import CANARY_MIN_COSINE, canary_cosine, check_canary
from memory_pipeline.indexing.pending import pending_count
from memory_pipeline.storage import health_store, profiles_store
from memory_pipeline.storage.database import Database
from memory_pipeline.storage.profiles_store import StoredProfile, get_profile

log = logging.getLogger(__name__)


def promote_when_complete(
    db: Database,
    embedder: Embedder,
    *,
    pending: int,
    guard: Callable[[StoredProfile], bool] | None = None,
) -> str | None:
    """Switch search to the written generation/profile once nothing at all (``pending``, counted
    for it by the caller) is pending for it, and ``guard`` (the quality guard,
    ``search.quality_guard``) allows the generation about to serve; refused, nothing switches
    and the guard holds why."""
    with db.connection() as conn:
        stored = get_profile(conn, embedder.profile)
        if stored is None or (stored.is_active and stored.building_generation is None):
            if stored is not None:  # first generation of the first profile: mark it ready
                profiles_store.mark_built(conn, stored.id, stored.generation)
            return None
        if pending > 0:
            return None
        state = profiles_store.generation_state(conn, stored.id, stored.write_generation)
    # A stale generation never serves (``promote`` refuses it): nothing for the guard to score.
    if state is not None and state[0] == "stale":
        return None
    if guard is not None and not guard(stored.writing()):
        return None
    with db.connection() as conn:
        switched = profiles_store.promote(conn, stored)
    if switched:
        log.info(switched)
    return switched


def switch_when_complete(
    db: Database, embedder: Embedder, *, guard: Callable[[StoredProfile], bool] | None = None
) -> tuple[int, str | None]:
    """``promote_when_complete`` with the pending count taken now: (that count, the switch made
    or None)."""
    pending = pending_count(db, embedder)
    return pending, promote_when_complete(db, embedder, pending=pending, guard=guard)


def serving_integrity(db: Database) -> tuple[StoredProfile | None, dict | None]:
    """The profile search serves, and its generation's missing, mis-sized and non-unit vectors
    (None, None before anything serves)."""
    with db.connection() as conn:
        profile = profiles_store.active_profile(conn)
        return profile, health_store.vector_integrity(conn, profile) if profile else None


def start_reindex(db: Database, profile: EmbeddingProfile) -> tuple[StoredProfile, bool]:
    """Start a new generation of ``profile`` (or resume the one being built: ``True``; a stale
    one is left stale and the next one starts) while search keeps serving the current one; the
    index passes then build it."""
    with db.connection() as conn:
        return profiles_store.start_reindex(conn, profile)


@dataclass(frozen=True)
class Reindex:
    stored: StoredProfile  # its ``building_generation`` is the one to build
    resumed: bool
    # (generation, reason) of building generations another model began: left stale, never served
    left_stale: list[tuple[int, str]] = field(default_factory=list)


def stale_building(db: Database, profile: EmbeddingProfile) -> tuple[int, str] | None:
    """(generation, reason) of ``profile``'s building generation if the model changed under it."""
    with db.connection() as conn:
        stored = profiles_store.get_profile(conn, profile)
        if stored is None or stored.building_generation is None:
            return None
        state = profiles_store.generation_state(conn, stored.id, stored.building_generation)
    return (stored.building_generation, state[1] or "") if state and state[0] == "stale" else None


def reindex(db: Database, embedder: Embedder) -> Reindex:
    """``start_reindex`` for the model ``embedder`` serves now: the generation being built is
    resumed only if that model began it (its canary, re-embedded, still matches), else a fresh
    one starts. A model change during an earlier reindex thus costs that generation, never the
    way forward."""
    before = stale_building(db, embedder.profile)
    stored, resumed = start_reindex(db, embedder.profile)
    if resumed:
        try:
            with db.connection() as conn:
                check_canary(conn, embedder, stored.writing())
            return Reindex(stored, True)
        except ModelRefused:
            pass
        before = stale_building(db, embedder.profile)
        stored, resumed = start_reindex(db, embedder.profile)
    return Reindex(stored, resumed, [before] if before is not None else [])


def rollback_to_served_model(db: Database, embedder: Embedder) -> str:
    """``rollback``, but only to a generation the model ``embedder`` serves now embedded (its
    canary matches): vectors of two models are never compared. InputError when there is none to
    roll back to or another model is configured, ModelRefused when the canary disagrees."""
    next_step = "`memory-pipeline reindex` builds a new generation from the model served now"
    try:
        with db.connection() as conn:
            active, target = profiles_store.rollback_target(conn)
    except LookupError as exc:
        raise InputError(f"{exc}; {next_step}") from None
    if embedder.profile.name != active.name:
        raise InputError(
            f"the configured model is {embedder.profile.name}, but search serves {active.name}: "
            f"configure that one to roll back, or run {next_step.split(' builds')[0]}"
        )
    if target.canary_vector is not None:
        cosine = canary_cosine(embedder, target.canary_vector)
        if cosine < CANARY_MIN_COSINE:
            raise ModelRefused(
                f"generation {target.generation} of {active.name} was embedded by another model "
                f"than the one served now (the canary embeds at cosine {cosine:.3f} to its "
                f"vector): serve that model again to roll back to it, or {next_step}"
            )
    try:
        with db.connection() as conn:
            return profiles_store.rollback(conn, expected=target.generation)
    except LookupError as exc:
        raise InputError(str(exc)) from None


def rollback(db: Database) -> str:
    """Serve the previous generation of the active profile again (its vectors were kept); what
    was done. LookupError when there is none."""
    with db.connection() as conn:
        return profiles_store.rollback(conn)
