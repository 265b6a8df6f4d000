"""``Memory.models``: model changes. Start (or resume) a reindex as a new generation while
search serves the current one, build it, or roll search back to the previous generation."""

from __future__ import annotations

from memory_pipeline.indexing import generations
from memory_pipeline.indexing.report import IndexReport
from memory_pipeline.indexing.until_done import index_pending
from memory_pipeline.memory.parts import Core
from memory_pipeline.progress import ProgressCallback
from memory_pipeline.search.quality_guard import SwitchGuard
from memory_pipeline.storage.profiles_store import StoredProfile


class Models:
    def __init__(self, core: Core):
        self._core = core

    def start_reindex(self) -> tuple[StoredProfile, bool]:
        """A new generation of the configured profile (no model loaded): (its profile row,
        whether one being built was resumed)."""
        return generations.start_reindex(self._core.db, self._core.profile)

    def reindex(self) -> generations.Reindex:
        """``start_reindex`` for the model that serves now (its canary checked first)."""
        return generations.reindex(self._core.db, self._core.embedder)

    def build(
        self, on_progress: ProgressCallback | None = None, *, guard: SwitchGuard | None = None
    ) -> IndexReport:
        """Index everything pending for the generation being written, until done; it switches
        to serve once nothing is pending and ``guard`` (the quality guard) lets it."""
        return index_pending(
            self._core.db,
            self._core.embedder,
            on_progress=on_progress,
            guard=guard.allows if guard else None,
        )

    def rollback(self) -> str:
        """Serve the previous generation of the active profile again (LookupError: none)."""
        return generations.rollback(self._core.db)

    def rollback_to_served_model(self) -> str:
        """``rollback``, only to a generation the configured model embedded."""
        return generations.rollback_to_served_model(self._core.db, self._core.embedder)
