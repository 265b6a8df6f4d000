"""``Memory.days``: one ingest day's work, as its partitions do it (load its inbox, cut, embed,
link), and the days that hold episodes or pending work."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterable

from memory_pipeline.indexing.days import (
    ChunkedDay,
    EmbeddedDay,
    IndexedDay,
    LinkedDay,
    chunk_day,
    days_with_episodes,
    embed_day,
    index_day,
    link_day,
    rechunk_day,
)
from memory_pipeline.indexing.pending import pending_by_day, pending_count
from memory_pipeline.ingest import DayEpisodes, IngestReport, day_episodes, ingest_paths
from memory_pipeline.memory.parts import Core
from memory_pipeline.progress import ProgressCallback


class Days:
    """A day's partitions' work; each call reads and writes that day's rows only."""

    def __init__(self, core: Core):
        self._core = core

    def load(self, paths: Iterable[str | os.PathLike], day: dt.date) -> IngestReport:
        """Store the episodes of files or folders (a day's inbox) under ingest day ``day``; the
        caller reports it (nothing is told to the Memory's reporter)."""
        return ingest_paths(self._core.db, paths, ingest_day=day)

    def episodes(self, day: dt.date) -> DayEpisodes:
        """What the day holds, however its episodes arrived."""
        return day_episodes(self._core.db, day)

    def cut(self, day: dt.date, *, again: bool = False) -> ChunkedDay:
        """Chunks for the day's episodes that lack them; ``again``: delete the day's chunks and
        cut them anew (vectors are kept and reused by content)."""
        cut = rechunk_day if again else chunk_day
        return cut(self._core.db, day, anchors=self._core.embed_settings.heading_anchors)

    def embed(self, day: dt.date, on_progress: ProgressCallback | None = None) -> EmbeddedDay:
        """Vectors for the day's chunks in the generation being written (never switches it)."""
        return embed_day(self._core.db, self._core.embedder, day, on_progress=on_progress)

    def link(self, day: dt.date) -> LinkedDay:
        """Entity mentions of the day's episodes."""
        return link_day(self._core.db, day)

    def index(self, day: dt.date, on_progress: ProgressCallback | None = None) -> IndexedDay:
        """``cut``, ``embed`` and ``link``, in their order (``on_progress``: the embedding's)."""
        return index_day(self._core.db, self._core.embedder, day, on_progress=on_progress)

    def pending(self) -> dict[str, int]:
        """Pending episodes per ingest day (ISO) for the generation being written."""
        return pending_by_day(self._core.db, self._core.embedder)

    def pending_count(self) -> int:
        return pending_count(self._core.db, self._core.embedder)

    def holding_episodes(self) -> list[str]:
        """Every ingest day (ISO) that holds episodes, oldest first."""
        return days_with_episodes(self._core.db)
