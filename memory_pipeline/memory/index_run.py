"""``Memory.index``'s run: the pass until done, with the entity links and the keyword lists built
beside it."""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Callable

from memory_pipeline.embedders.base import Embedder
from memory_pipeline.indexing import linking
from memory_pipeline.indexing.keyword_lists import ListsBeside
from memory_pipeline.indexing.pending import pending_by_day, pending_of
from memory_pipeline.indexing.report import IndexReport
from memory_pipeline.indexing.until_done import index_pending
from memory_pipeline.progress import ProgressCallback
from memory_pipeline.search.quality_guard import SwitchGuard
from memory_pipeline.storage.database import Database
from memory_pipeline.storage.entities_store import EntityReport


def run(
    db: Database,
    embedder: Embedder,
    *,
    day: dt.date | None,
    on_progress: ProgressCallback | None,
    on_committed: Callable[[list[int]], None] | None,
    keyword_lists: bool,
    guard: SwitchGuard,
) -> tuple[IndexReport, list[str], EntityReport]:
    """Index what is pending (of ``day``): the report, the ingest days (ISO) the run finished,
    and what the linker linked (for ``indexing.days.days_done_by_a_run``)."""
    before = pending_by_day(db, embedder)
    planned = pending_of(before, day)
    lists = ListsBeside(db, planned) if keyword_lists else None

    def committed(episode_ids: list[int]) -> None:
        linker.link(episode_ids)
        if lists is not None:
            lists.committed(episode_ids)
        if on_committed is not None:
            on_committed(episode_ids)

    with linking.linker_for(db, planned) as linker, contextlib.ExitStack() as stack:
        if lists is not None:
            stack.enter_context(lists)
        report = index_pending(
            db,
            embedder,
            day=day,
            on_progress=on_progress,
            on_committed=committed,
            lists=lists,
            keyword_lists=keyword_lists,
            guard=guard.allows,
        )
        linked = linker.finish()
    report.quality_guard = guard.verdict.to_json() if guard.verdict else None
    after = report.pending_days or {}  # counted by the run once it was done
    finished = [d for d in before if d not in after and (day is None or d == day.isoformat())]
    return report, finished, linked
