"""The canary: a fixed phrase whose stored vector proves that the model is the one that wrote.

Its vector is stored per (profile, generation) and re-embedded at the start of every pass (and
ridden along with the pass's model calls, ``index_pass``). The same model reproduces it (cosine
~1.0, halfvec rounding aside); a model swapped under the same name does not, whatever its
dimension, and is refused before it writes (``ModelRefused``; the generation is marked stale).
"""

from __future__ import annotations

import numpy as np

from memory_pipeline.embedders.base import Embedder
from memory_pipeline.errors import ModelRefused
from memory_pipeline.storage import profiles_store
from memory_pipeline.storage.database import Database
from memory_pipeline.storage.profiles_store import StoredProfile

CANARY_TEXT = (
    "Canary for memory_pipeline: on a rainy Tuesday in Lisbon, Mara wrote down the ledger "
    "totals, the name of her running coach, and a recipe for sourdough bread."
)
CANARY_MIN_COSINE = 0.99


def stale_message(profile: StoredProfile, generation: int, reason: str, *, kept: int = 0) -> str:
    kept_note = (
        f" The {kept} vectors committed before the change were each followed by a matching "
        "canary, so they are the original model's."
        if kept
        else ""
    )
    return (
        f"the model behind {profile.name} (generation {generation}) changed under the same name: "
        f"{reason}. No vector of the changed model was written.{kept_note} The generation is "
        "marked stale and search answers with the keyword and graph channels only. Recover with "
        "`memory-pipeline reindex` (re-embeds everything as a new generation while search keeps "
        "serving), or serve the original model again and re-run."
    )


def cosine_of(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b) or 1.0))


def check_canary(conn, embedder: Embedder, target: StoredProfile) -> float | None:
    """Re-embed the canary for the generation being written; refuse a silently changed model.

    This is also the run's probe: the first model call, so a wrong dimension or an unreachable
    server stops the run before anything is written. Returns the cosine (None on first use).
    """
    vector = embedder.embed_documents([CANARY_TEXT])[0]
    generation = profiles_store.get_generation(conn, target.id, target.generation)
    if generation is None or generation.canary_vector is None:
        profiles_store.record_canary(conn, target.id, target.generation, CANARY_TEXT, vector)
        return None
    cosine = cosine_of(vector, generation.canary_vector)
    if cosine < CANARY_MIN_COSINE:
        refuse(conn, target, cosine)
    if generation.state == "stale":
        profiles_store.clear_stale(
            conn,
            target.id,
            target.generation,
            building=target.building_generation == target.generation,
        )
    return cosine


def canary_cosine(embedder: Embedder, stored: np.ndarray) -> float:
    """The cosine of the canary phrase embedded now to a generation's ``stored`` canary."""
    return cosine_of(embedder.embed_documents([CANARY_TEXT])[0], stored)


def check_now(db: Database, embedder: Embedder) -> float | None:
    """``check_canary`` for the generation ``embedder`` writes, outside a pass (the nightly run
    checks it even when nothing is pending, so that a silent model swap surfaces before the
    next ingest)."""
    with db.connection() as conn:
        target = profiles_store.register_profile(conn, embedder.profile).writing()
        return check_canary(conn, embedder, target)


def refuse(conn, target: StoredProfile, cosine: float, *, kept: int = 0) -> None:
    """Mark ``target``'s generation stale and raise ``ModelRefused``."""
    reason = f"the canary phrase now embeds at cosine {cosine:.3f} to its stored vector (< {CANARY_MIN_COSINE})"
    profiles_store.mark_stale(conn, target.id, target.generation, reason)
    raise ModelRefused(stale_message(target, target.generation, reason, kept=kept))


def stored_canary(conn, target: StoredProfile) -> np.ndarray:
    """The canary vector of the generation ``target`` writes (recorded by ``check_canary``)."""
    generation = profiles_store.get_generation(conn, target.id, target.generation)
    if generation is None or generation.canary_vector is None:  # check_canary records it first
        raise RuntimeError(f"no canary recorded for {target.name} generation {target.generation}")
    return generation.canary_vector
