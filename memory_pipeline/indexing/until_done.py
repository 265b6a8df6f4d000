"""Index passes until nothing is pending: what ``memory-pipeline index``, ``Memory.index`` and a
day's ``embeddings`` partition run, then the statements' vectors, the switch to a finished
generation, once per generation the measurement of its model (``calibration``) and, last, the
serving generation left fast to search (``serving.leave_search_fast``: its HNSW index, keyword
lists and planner statistics)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import time
from collections.abc import Callable

from memory_pipeline.embedders.base import Embedder
from memory_pipeline.indexing.calibration import after_index
from memory_pipeline.indexing.estimate import SpeedMeter
from memory_pipeline.indexing.generations import promote_when_complete
from memory_pipeline.indexing.index_pass import ANALYZE_AFTER, PASS_LIMIT, index_pass
from memory_pipeline.indexing.keyword_lists import ListsBeside
from memory_pipeline.indexing.pending import pending_by_day, pending_of
from memory_pipeline.indexing.report import IndexReport
from memory_pipeline.indexing.serving import leave_search_fast
from memory_pipeline.indexing.statement_vectors import embed_pending
from memory_pipeline.progress import Count, Progress, ProgressCallback
from memory_pipeline.storage import index_store
from memory_pipeline.storage.database import Database


def index_until_done(
    db: Database,
    embedder: Embedder,
    *,
    day: dt.date | None = None,
    on_progress: ProgressCallback | None = None,
    chunked_only: bool = False,
    promote: bool = True,
    pass_limit: int = PASS_LIMIT,
    on_committed: Callable[[list[int]], None] | None = None,
    analyze_after: int = ANALYZE_AFTER,
    lists: ListsBeside | None = None,
    keyword_lists: bool = True,
    leave_fast: bool = True,
) -> IndexReport:
    """Run passes until nothing is pending (or a pass could do nothing: others hold the rest; or,
    with ``chunked_only``, only episodes without chunks are left).

    ``promote=False`` leaves the serving generation alone (a day's partition must not switch
    search for everyone; ``promote_when_complete`` is then the caller's to run globally).
    ``on_progress`` gets ``Progress`` events: stage "index" counts earlier passes in, then the
    later stages (statements' vectors, ...) report under their own names; ``on_committed`` the ids of
    each committed batch (``index_pass``). A pass that wrote ``analyze_after`` vectors or more
    refreshes the planner's statistics of what it wrote before the next one lists its work, beside
    itself or else after it (``ANALYZE_AFTER``). Last, ``serving.leave_search_fast`` (with
    ``lists``, the keyword lists the caller builds beside the passes, finished there;
    ``keyword_lists=False``: none built); what it
    did goes to ``report.search_ready`` and its lists to ``report.keyword_lists``.
    ``leave_fast=False``: not here, the caller runs it once after a series of calls (a run over
    several days' partitions)."""
    total = IndexReport(profile=embedder.profile.name)
    passes = _PassesProgress(on_progress)
    speed = SpeedMeter(on_committed)
    started = time.perf_counter()

    counts: dict[str, int] | None = None
    while True:
        one = index_pass(
            db,
            embedder,
            day=day,
            limit=pass_limit,
            on_progress=passes.tell if on_progress else None,
            chunked_only=chunked_only,
            on_committed=speed.committed,
            analyze_after=analyze_after,
        )
        total.add(one)
        passes.pass_ended()
        if one.vectors + one.windows >= analyze_after and not one.analyzed:
            with db.connection() as conn:
                index_store.analyze_written(conn)
        if one.canary_checked and not total.canary_checked:
            total.canary_checked, total.canary_cosine = True, one.canary_cosine
        if one.episodes == 0:
            counts = None
            break
        # The count the report needs anyway, instead of one more pass listing nothing.
        counts = pending_by_day(db, embedder)
        if pending_of(counts, day) == 0:
            break
    passes.finish()
    speed.record(db, embedder.profile, time.perf_counter() - started)
    # Observations and beliefs get vectors from the same model, generation and canary; before
    # the switch below, so a new generation serves them from its first search. Not in a day's
    # partition (``chunked_only``): statements are no day's, the statement_vectors asset does it.
    if not chunked_only:
        total.statement_vectors = embed_pending(db, embedder, on_progress=on_progress)
    if counts is None:
        counts = pending_by_day(db, embedder)
    total.pending_days, total.pending_after = counts, pending_of(counts, day)
    if promote:
        total.switched = promote_when_complete(db, embedder, pending=sum(counts.values()))
    # The first run that uses a generation's model measures it, after the work, so that the
    # measurement never delays or fails the vectors; later runs find it stored.
    after_index(db, embedder, total.canary_checked)
    # Last: a build cut short (an interrupted command) leaves everything above done, and the
    # next run builds it.
    if leave_fast:
        total.search_ready = leave_search_fast(db, lists=lists, keyword_lists=keyword_lists)
        total.keyword_lists = total.search_ready.keyword_lists
    return total


class _PassesProgress:
    """The passes' "index" progress as one: a later pass's figures continue the earlier ones'."""

    def __init__(self, on_progress: ProgressCallback | None):
        self.on_progress = on_progress
        self.base: Progress | None = None  # the finished passes' last figures, summed
        self.last: Progress | None = None

    def tell(self, p: Progress) -> None:
        b = self.base
        if b is not None:
            episodes, base_episodes = p.also[0], b.also[0]
            p = dataclasses.replace(
                p,
                done=p.done + b.done,
                total=None if p.total is None else p.total + (b.total or 0),
                also=(
                    Count(
                        "episodes",
                        episodes.done + base_episodes.done,
                        None
                        if episodes.total is None
                        else episodes.total + (base_episodes.total or 0),
                    ),
                ),
            )
        self.last = p
        if self.on_progress is not None:
            self.on_progress(p)

    def finish(self) -> None:
        if self.last is not None:
            self.tell_as_is(
                dataclasses.replace(self.last, finished=True, estimated=False, total=self.last.done)
            )

    def tell_as_is(self, p: Progress) -> None:
        if self.on_progress is not None:
            self.on_progress(p)

    def pass_ended(self) -> None:
        if self.last is not None:
            # What a pass did is its total: the next pass's work is added to it.
            done = self.last.also[0].done
            self.base = dataclasses.replace(
                self.last,
                total=self.last.done,
                estimated=False,
                also=(Count("episodes", done, done),),
            )
