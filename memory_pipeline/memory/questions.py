"""Labelled questions and retrieval quality through ``Memory`` (the ``Questions`` part of its
class): saving and listing the questions, scoring them as search answers them
(``search.quality``), and the guard a generation switch asks first (``search.quality_guard``)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from memory_pipeline.search import quality
from memory_pipeline.search.quality_guard import SwitchGuard
from memory_pipeline.search.questions import QuestionReport, save_questions
from memory_pipeline.storage import questions_store
from memory_pipeline.storage.database import Database

if TYPE_CHECKING:
    from memory_pipeline.search.service import SearchService


class Questions:
    """``Memory``'s labelled-question methods (its class derives from this one)."""

    db: Database
    search_service: SearchService

    if TYPE_CHECKING:

        def require_memory(self, memory: object) -> str: ...

    def add_questions(
        self,
        items: Iterable[Mapping[str, Any] | tuple[str, object]],
        *,
        memory: str | None = None,
        author: str = "",
    ) -> QuestionReport:
        """Save labelled questions: objects with ``question``, ``memory`` (else ``memory``) and
        ``expect`` (an episode id, ``source:KEY``, ``observation:ID`` or ``belief:ID``) or
        ``expect_title``; (location, object) pairs keep their locations in the rejections."""
        pairs = [
            item if isinstance(item, tuple) else (f"item {n}", item)
            for n, item in enumerate(items, start=1)
        ]
        return save_questions(self.db, pairs, memory=memory, author=author)

    def questions(self, memory: str | None = None) -> list[questions_store.StoredQuestion]:
        """The labelled questions of ``memory`` (None: of every memory), oldest first."""
        with self.db.connection() as conn:
            return questions_store.list_questions(conn, memory)

    def remove_questions(self, memory: str, question_ids: list[int]) -> list[int]:
        """Delete these questions of ``memory``; the ids that were deleted."""
        with self.db.connection() as conn:
            return questions_store.remove(conn, memory, list(question_ids))

    def score_questions(
        self, memory: str | None = None, *, record: bool = True
    ) -> list[quality.MemoryQuality]:
        """Search every labelled question of ``memory`` (None: of each memory that has some) as
        ``search`` does and compute the figures (``search.quality``); ``record`` stores them as
        the latest that ``quality()`` and ``status`` report."""
        with self.db.connection() as conn:
            names = questions_store.memories_with_questions(conn)
        if memory is not None:
            memory = self.require_memory(memory)
            names = [memory] if memory in names else []
        scored = [quality.score_memory(self.search_service, name) for name in names]
        if record:
            for one in scored:
                quality.record(self.search_service, one)
        return scored

    def switch_guard(self, *, accept_worse: bool = False) -> SwitchGuard:
        """The guard a generation switch asks first: it scores the new generation beside the
        serving one on the labelled questions; ``accept_worse`` lets a worse one serve,
        knowingly."""
        return SwitchGuard(self.search_service, accept_worse=accept_worse)

    def questions_changed_since(self, since: dt.datetime | None) -> list[str]:
        """The memories whose questions or episodes changed after ``since`` (None: all with
        questions): the ones a new scoring would move."""
        with self.db.connection() as conn:
            return questions_store.memories_changed_since(conn, since)

    def quality(self, memory: str | None = None) -> list[dict]:
        """The latest recorded figures of each memory (or of ``memory``)."""
        with self.db.connection() as conn:
            return questions_store.latest(conn, memory)
