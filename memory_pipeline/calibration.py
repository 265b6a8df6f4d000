"""Measuring an embedding profile against the built-in probe set (``domain.calibration``).

``measure`` embeds the probes with the profile's model (documents as documents, questions as
queries) and derives its cut-offs. It never raises for the model's sake: an
unreachable server, a refusal or numbers that make no sense give the defaults, with the reason.
"""

from __future__ import annotations

import logging

from memory_pipeline.domain import calibration
from memory_pipeline.domain.calibration import Calibration
from memory_pipeline.embedders.base import Embedder
from memory_pipeline.errors import MemoryPipelineError

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
