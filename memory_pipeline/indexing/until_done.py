"""The two index entry points: ``index_pending`` and ``index_day_chunks``.

``index_pending`` is what every writer runs (``memory-pipeline index`` and ``reindex``,
``Memory.index``, ``POST /v1/index``, the MCP server's adds): passes until nothing is pending
(of one ingest day, or all), then the statements' vectors, the switch to a finished generation,
once per generation the measurement of its model (``calibration``) and, last, the serving
generation left fast to search (``serving.leave_search_fast``: its HNSW index, keyword lists and
planner statistics). ``index_day_chunks`` is a day's ``embeddings`` partition: passes over the
day's stored chunks only, and nothing global: the switch, the calibration, the HNSW index and the
keyword lists are the unpartitioned assets' (``defs.assets.maintenance``).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import time
from collections.abc import Callable

from memory_pipeline.embedders.base import Embedder
from memory_pipeline.indexing.calibration import after_index
from memory_pipeline.indexing.claims import Scope
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
from memory_pipeline.storage.profiles_store import StoredProfile


def index_pending(
    db: Database,
    embedder: Embedder,
    *,
    day: dt.date | None = None,
    on_progress: ProgressCallback | None = None,
    on_committed: Callable[[list[int]], None] | None = None,
    lists: ListsBeside | None = None,
    keyword_lists: bool = True,
    pass_limit: int = PASS_LIMIT,
    analyze_after: int = ANALYZE_AFTER,
    guard: Callable[[StoredProfile], bool] | None = None,
) -> IndexReport:
    """Index everything pending (of one ingest ``day``) until done, and leave search fast.

    Passes (``_passes``), then the statements' vectors (before the switch, so a new generation
    serves them from its first search), the switch to the written generation once nothing at
    all is pending for it, the generation's model measured when this run first checked its
    canary (``calibration.after_index``), and last ``serving.leave_search_fast`` (with ``lists``,
    the keyword lists the caller builds beside the passes, finished there;
    ``keyword_lists=False``: none built): what it did goes to ``report.search_ready`` and its
    lists to ``report.keyword_lists``. A build cut short (an interrupted command) leaves
    everything before it done, and the next run builds it. ``on_progress`` gets stage "index"
    (the passes as one), then the later stages under their own names; ``on_committed`` the ids
    of each committed batch (``index_pass``); ``guard`` may refuse the switch (the quality
    guard, ``generations.promote_when_complete``)."""
    total, counts = _passes(
        db,
        embedder,
        Scope.everything(day),
        on_progress=on_progress,
        on_committed=on_committed,
        pass_limit=pass_limit,
        analyze_after=analyze_after,
    )
    total.statement_vectors = embed_pending(db, embedder, on_progress=on_progress)
    counts = counts if counts is not None else pending_by_day(db, embedder)
    total.pending_days, total.pending_after = counts, pending_of(counts, day)
    total.switched = promote_when_complete(db, embedder, pending=sum(counts.values()), guard=guard)
    # After the work, so that the measurement never delays or fails the vectors; later runs
    # find it stored.
    after_index(db, embedder, total.canary_checked)
    total.search_ready = leave_search_fast(db, lists=lists, keyword_lists=keyword_lists)
    total.keyword_lists = total.search_ready.keyword_lists
    return total


def index_day_chunks(
    db: Database,
    embedder: Embedder,
    day: dt.date,
    *,
    on_progress: ProgressCallback | None = None,
) -> IndexReport:
    """A day's ``embeddings`` partition: vectors for the day's stored chunks that lack one in
    the generation being written, until none is left (episodes without chunks are the ``chunks``
    stage's). Writes no chunk; what is global (the serving generation, its model's calibration,
    the HNSW index, keyword lists) is left to the unpartitioned assets, so running a day again
    gives the same rows and does nothing else."""
    total, counts = _passes(db, embedder, Scope.stored_chunks(day), on_progress=on_progress)
    counts = counts if counts is not None else pending_by_day(db, embedder)
    total.pending_days, total.pending_after = counts, pending_of(counts, day)
    return total


def _passes(
    db: Database,
    embedder: Embedder,
    scope: Scope,
    *,
    on_progress: ProgressCallback | None,
    on_committed: Callable[[list[int]], None] | None = None,
    pass_limit: int = PASS_LIMIT,
    analyze_after: int = ANALYZE_AFTER,
) -> tuple[IndexReport, dict[str, int] | None]:
    """Run passes over ``scope`` until nothing in it is pending, or a pass could do nothing
    (others hold the rest; or only episodes the scope leaves out are left). The report and the
    pending counts by day when the last check took them (None: take them now). A pass that
    wrote ``analyze_after`` vectors or more refreshes the planner's statistics of what it wrote
    before the next one lists its work, beside itself or else after it (``ANALYZE_AFTER``)."""
    total = IndexReport(profile=embedder.profile.name)
    passes = _PassesProgress(on_progress)
    speed = SpeedMeter(on_committed)
    started = time.perf_counter()
    counts: dict[str, int] | None = None
    while True:
        one = index_pass(
            db,
            embedder,
            scope=scope,
            limit=pass_limit,
            on_progress=passes.tell if on_progress else None,
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
        if pending_of(counts, scope.day) == 0:
            break
    passes.finish()
    speed.record(db, embedder.profile, time.perf_counter() - started)
    return total, counts


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
