"""Measuring an embedding profile against the built-in probe set (``domain.calibration``).

``measure`` embeds the probes with the profile's model (documents as documents, questions as
queries) and derives its cut-offs. It never raises for the model's sake: an
unreachable server, a refusal or numbers that make no sense give the defaults, with the reason.
``after_index`` does it once per embedding generation, after the first run of index passes that
checked its model's canary (``Memory.index``, the Dagster ``embeddings`` asset), after the work,
so a measurement never delays or fails the vectors; it stores the result with the generation
(``embedding_generations.calibration``); a failure to reach the model is measured again by the
next pass, any other failure is kept (the defaults, and why) until a reindex.
"""

from __future__ import annotations

import logging

from memory_pipeline.domain import calibration
from memory_pipeline.domain.calibration import Calibration
from memory_pipeline.embedders.base import Embedder
from memory_pipeline.errors import MemoryPipelineError
from memory_pipeline.storage import profiles_store
from memory_pipeline.storage.database import Database
from memory_pipeline.storage.profiles_store import StoredProfile

log = logging.getLogger(__name__)


def measure(embedder: Embedder) -> Calibration:
    """The calibration of ``embedder``'s model, or the defaults saying why it failed."""
    documents, questions = calibration.probe_texts()
    try:
        measured = calibration.from_vectors(
            embedder.embed_documents(documents).tolist(),
            embedder.embed_queries(questions).tolist(),
        )
    except MemoryPipelineError as error:
        measured = calibration.failed(f"the probe set could not be embedded: {error}", retry=True)
    except Exception as error:  # noqa: BLE001 - a calibration failure must change nothing
        log.exception("calibration of %s failed", embedder.profile.name)
        measured = calibration.failed(f"the calibration failed: {type(error).__name__}: {error}")
    if not measured.measured:
        log.warning(
            "calibration of %s kept the defaults: %s", embedder.profile.name, measured.reason
        )
    return measured


def ensure(conn, embedder: Embedder, target: StoredProfile) -> Calibration:
    """The calibration of the generation ``target`` writes: the stored one, else measured now with
    ``embedder`` (its model, just checked by the canary) and stored."""
    stored = profiles_store.stored_calibration(conn, target.id, target.generation)
    if stored is not None and not stored.retry:
        return stored
    measured = measure(embedder)
    profiles_store.record_calibration(conn, target.id, target.generation, measured)
    return measured


def after_index(db: Database, embedder: Embedder, canary_checked: bool) -> Calibration | None:
    """``ensure`` for the generation ``embedder`` writes, when the index run just checked its
    canary (the model is the generation's); None otherwise."""
    if not canary_checked:
        return None
    with db.connection() as conn:
        target = profiles_store.writing_target(conn, embedder.profile)
        return None if target is None else ensure(conn, embedder, target)
