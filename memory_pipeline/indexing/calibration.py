"""Measuring an embedding generation's model against the built-in probe set (``domain.calibration``).

``measure`` embeds the probes and derives the cut-offs; it never raises for the model's sake (a
failure gives the defaults, with the reason). ``after_index`` measures once per generation, after
an index pass whose canary proved the model, so a measurement never delays or fails the vectors;
in Dagster the ``backlog`` and ``serving_generation`` assets do it, never a day's partition. The
result is stored with the generation; an unreachable model is measured again by the next run,
any other failure is kept until a reindex.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from memory_pipeline.domain import calibration
from memory_pipeline.domain.calibration import Calibration
from memory_pipeline.embedders.base import Embedder
from memory_pipeline.errors import MemoryPipelineError
from memory_pipeline.indexing.canary import check_now
from memory_pipeline.storage import profiles_store
from memory_pipeline.storage.database import Database

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


def after_index(db: Database, embedder: Embedder, canary_checked: bool) -> Calibration | None:
    """The calibration of the generation ``embedder`` writes, when the index run just checked its
    canary: the stored one, else measured now and stored. None when the canary was not checked
    (the model may not be the generation's) or the profile was never registered."""
    if not canary_checked:
        return None
    return _stored_else_measured(db, embedder, before_measuring=lambda: None)


def measure_unless_stored(db: Database, embedder: Embedder) -> Calibration | None:
    """The calibration of the generation ``embedder`` writes: the stored one, else measured now
    after its canary proved the model is the generation's (``canary.check_now``: a changed
    model raises ``ModelRefused``). None when no generation is registered yet."""
    return _stored_else_measured(db, embedder, before_measuring=lambda: check_now(db, embedder))


def _stored_else_measured(
    db: Database, embedder: Embedder, *, before_measuring: Callable[[], object]
) -> Calibration | None:
    with db.connection() as conn:
        target = profiles_store.writing_target(conn, embedder.profile)
        if target is None:
            return None
        stored = profiles_store.stored_calibration(conn, target.id, target.generation)
    if stored is not None and not stored.retry:
        return stored
    before_measuring()
    measured = measure(embedder)  # no pooled connection held while the model works
    with db.connection() as conn:
        profiles_store.record_calibration(conn, target.id, target.generation, measured)
    return measured
