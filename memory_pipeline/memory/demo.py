"""``Memory.demo``: what ``memory-pipeline demo`` does through the face: store the sample corpus
(its jobs then record it in Dagster) its labelled questions, and run the sample questions."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

from memory_pipeline.ingest import IngestReport, ingest_paths
from memory_pipeline.memory.parts import Core
from memory_pipeline.search.demo import print_demo_searches
from memory_pipeline.search.questions import read_question_file
from memory_pipeline.search.service import SearchService


class Demo:
    def __init__(self, core: Core, search_service: Callable[[], SearchService]):
        self._core = core
        self._search_service = search_service

    def ingest(self, paths: Iterable[str | os.PathLike]) -> IngestReport:
        """Store the sample files under today's ingest day, untold: the demo's own runs of the
        day's jobs record the partitions."""
        return ingest_paths(self._core.db, paths)

    def questions(self, path: str | os.PathLike) -> list[tuple[str, object]]:
        """The sample corpus's labelled questions as ``Memory.add_questions`` takes them."""
        return read_question_file(Path(path))

    def print_searches(self, queries: list[dict]) -> None:
        """Each sample question through fused search, its best chunks printed."""
        print_demo_searches(self._search_service(), queries)
