"""``Memory.upkeep``: the global work that is no one day's (the unpartitioned assets, the
sensor's and the checks' questions): the canary, the serving generation and its calibration,
statement vectors, entities, the HNSW index, statistics, and what is left to do."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from memory_pipeline import maintenance
from memory_pipeline.domain.calibration import Calibration
from memory_pipeline.indexing import canary, generations, statement_vectors
from memory_pipeline.indexing.calibration import after_index, measure_unless_stored
from memory_pipeline.indexing.pending import IndexLag, Outlook, index_lag, oldest_pending, outlook
from memory_pipeline.indexing.serving import SearchReady, leave_search_fast
from memory_pipeline.maintenance import PromotedEntities
from memory_pipeline.memory.parts import Core
from memory_pipeline.storage.hnsw_store import IndexState
from memory_pipeline.storage.profiles_store import StoredProfile


class Upkeep:
    """Each method is one global step, safe to run again."""

    def __init__(self, core: Core):
        self._core = core

    # -- the model and the generations -----------------------------------------------------
    def check_canary(self) -> float | None:
        """The model's canary against the generation it writes (a changed model raises
        ``ModelRefused``): its cosine, None when recorded now."""
        return canary.check_now(self._core.db, self._core.embedder)

    def calibrate_after_canary(self) -> Calibration | None:
        """The written generation's calibration once ``check_canary`` passed: stored, else
        measured now (``indexing.calibration.after_index``)."""
        return after_index(self._core.db, self._core.embedder, True)

    def calibrate(self) -> Calibration | None:
        """The written generation's calibration: stored, else measured after its canary."""
        return measure_unless_stored(self._core.db, self._core.embedder)

    def switch_generation(self, *, guard: Callable | None = None) -> tuple[int, str | None]:
        """Serve the generation being written once nothing is pending for it, and ``guard``
        (the quality guard's ``allows``) lets it: (pending, what switched or None)."""
        return generations.switch_when_complete(self._core.db, self._core.embedder, guard=guard)

    def serving_integrity(self) -> tuple[StoredProfile | None, dict | None]:
        """The serving profile, and its generation's missing, mis-sized and non-unit vectors."""
        return generations.serving_integrity(self._core.db)

    def leave_search_fast(self) -> SearchReady:
        """The serving HNSW index and keyword lists, built where missing."""
        return leave_search_fast(self._core.db)

    # -- statements, entities, the index, statistics -----------------------------------------
    def embed_statements(self) -> int:
        """Vectors for live statements that lack one in the generation being written."""
        return statement_vectors.embed_pending(self._core.db, self._core.embedder)

    def statement_integrity(self) -> tuple[StoredProfile | None, dict | None]:
        return statement_vectors.integrity(self._core.db)

    def promote_entities(self) -> PromotedEntities:
        return maintenance.promote_entities(self._core.db)

    def ensure_hnsw_index(self) -> tuple[StoredProfile, IndexState]:
        """The serving generation's HNSW index, built when missing or stale (LookupError when
        nothing serves yet)."""
        return maintenance.ensure_hnsw_index(self._core.db)

    def index_recall(self) -> float | None:
        """Recall@10 of the HNSW index against exact search (None: no vectors yet)."""
        return maintenance.index_recall(self._core.db)

    def daily_stats(self) -> dict:
        """Today's figures, saved as today's ``pipeline_stats`` row."""
        return maintenance.record_daily_stats(self._core.db, self._core.profile)

    # -- what is left to do (the sensor, the backlog check) ----------------------------------
    def outlook(self) -> Outlook:
        """What is left to do for the configured profile, read at once (no model loaded)."""
        return outlook(self._core.db, self._core.profile)

    def index_lag(self) -> IndexLag:
        """How far the index is behind what was ingested (the ``index_is_current`` check)."""
        return index_lag(self._core.db, self._core.profile)

    def oldest_pending(self) -> dt.datetime | None:
        """When the oldest episode pending for the configured profile was ingested."""
        return oldest_pending(self._core.db, self._core.profile)
