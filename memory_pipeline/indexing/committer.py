"""An index pass's commits: proven episodes written on storing threads, each on its own connection.

Complete episodes are committed together every ``WRITE_EVERY_CHUNKS`` vectors or
``WRITE_EVERY_SECONDS``: each episode's chunks and vectors land in one transaction or not at
all. Commits run on up to ``STORE_THREADS`` storing threads, so two commits' database work
overlaps the model's and the pass's own; their claims are given back in the order the commits
were handed over, once each is done.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from memory_pipeline.indexing.report import IndexReport, count
from memory_pipeline.storage import index_store
from memory_pipeline.storage.database import Database
from memory_pipeline.storage.index_store import EpisodeWork, WriteReport
from memory_pipeline.storage.profiles_store import StoredProfile

# Complete episodes are committed together once they hold this many new vectors, or when this
# long has passed since the last commit (a slow model still commits every few seconds), and
# before a model failure ends the pass. Per-batch commits paid a transaction's fixed cost
# (lock, re-check, two COPYs, keyword statistics) for every ~100 chunks once paragraph windows
# filled the model batches: a quarter of the store path's speed (benchmarks/bench_indexing.py).
WRITE_EVERY_CHUNKS = 500
WRITE_EVERY_SECONDS = 2.0
# Storing threads, each committing on its own connection. With one, the database worked on one
# commit at a time and was the pass's bottleneck against a fast model server (the storing thread
# busy ~96% of the pass: benchmarks/README.md); two commits of different episodes overlap up to
# the keyword statistics rows of their memory, which they take last, in one order
# (keyword_stats_record.sql). A second connection the pool cannot spare at once is done without.
STORE_THREADS = 2
# Commits handed to the storing threads and not finished yet, at most: when the database is the
# slower side, the pass waits here instead of holding ever more embedded work in memory.
WRITES_AHEAD = STORE_THREADS + 1

log = logging.getLogger(__name__)


class Committer:
    """Commits a pass's episodes on ``store_conns`` (one storing thread each) and counts them in
    ``report``; once a commit is done, ``committed`` gets its episode ids (on the pass's thread:
    what it raises fails the pass)."""

    def __init__(
        self,
        store_conns: list,
        report: IndexReport,
        committed: Callable[[list[int]], None],
    ):
        self.report, self.committed = report, committed
        self.profile: StoredProfile | None = None  # the generation written, once the pass knows it
        self.free_conns: queue.SimpleQueue = queue.SimpleQueue()  # one per commit in progress
        for store_conn in store_conns:
            self.free_conns.put(store_conn)
        self.store = ThreadPoolExecutor(max_workers=len(store_conns), thread_name_prefix="store")
        self.writing: deque[tuple[Future, list[EpisodeWork]]] = deque()  # in order, with work
        self.failed = False
        self.complete: list[EpisodeWork] = []  # proven, not yet handed to a storing thread
        self.complete_vectors = 0  # the chunk vectors they hold
        self.last_write = time.perf_counter()

    def add(self, works: list[EpisodeWork]) -> None:
        """Embedded and proven episodes, committed at the next ``flush``."""
        self.complete.extend(works)
        self.complete_vectors += sum(len(w.missing) for w in works)

    def due(self) -> bool:
        return (
            self.complete_vectors >= WRITE_EVERY_CHUNKS
            or time.perf_counter() - self.last_write >= WRITE_EVERY_SECONDS
        )

    def flush(self) -> None:
        """Hand the complete episodes to the storing threads."""
        self.write(self.complete)
        self.complete, self.complete_vectors, self.last_write = [], 0, time.perf_counter()

    def write(self, works: list[EpisodeWork]) -> None:
        """Commit ``works`` on a storing thread (``collect`` reports them when done)."""
        if works:
            self.writing.append((self.store.submit(self._commit, self.profile, works), works))

    def _commit(
        self, profile: StoredProfile | None, works: list[EpisodeWork]
    ) -> tuple[WriteReport, float]:
        """On a storing thread: ``works`` committed on a free store connection; what was written
        and the seconds it took (added to the report by ``collect``, on the pass's thread)."""
        conn = self.free_conns.get()
        try:
            t0 = time.perf_counter()
            return index_store.write_episodes(conn, profile, works), time.perf_counter() - t0
        finally:
            self.free_conns.put(conn)

    def collect(self, *, ahead: int = WRITES_AHEAD) -> None:
        """Report the finished commits; wait until at most ``ahead`` are still running or queued.
        A failed commit raises here (its episodes stay pending)."""
        while self.writing and (self.writing[0][0].done() or len(self.writing) > ahead):
            future, works = self.writing.popleft()
            try:
                written, seconds = future.result()
            except BaseException:
                self.failed = True
                raise
            count(self.report, works, written, seconds)
            self.committed([w.episode.id for w in works])

    def close(self) -> None:
        """Wait for the commits in flight (their failures are already reported, or the pass is
        failing anyway) and stop the storing threads."""
        for future, _ in self.writing:
            try:
                future.result()
            except BaseException:  # noqa: BLE001 - see above
                pass
        self.writing.clear()
        self.store.shutdown(wait=True)


class StatisticsBeside:
    """``index_store.analyze_written`` on a thread and a spare connection, started by
    ``committed`` once the pass has committed ``threshold`` vectors and half of the ``listed``
    episodes; ``join`` waits for it and says whether it ran (without a spare connection, or
    failing, it did not: the passes' caller then runs it after the pass)."""

    def __init__(self, db: Database, threshold: int | None):
        self.db, self.threshold = db, threshold
        self.thread: threading.Thread | None = None
        self.done = False

    def committed(self, report: IndexReport, *, listed: int) -> None:
        if (
            self.thread is None
            and self.threshold is not None
            and report.vectors + report.windows >= self.threshold
            and 2 * report.episodes >= listed
        ):
            self.thread = threading.Thread(target=self._analyze, name="analyze", daemon=True)
            self.thread.start()

    def _analyze(self) -> None:
        try:
            with self.db.spare_connection() as conn:
                if conn is not None:
                    index_store.analyze_written(conn)
                    self.done = True
        except Exception:  # noqa: BLE001 - a lost database fails the pass itself; the ANALYZE is redone after it
            log.debug("ANALYZE beside the pass failed", exc_info=True)

    def join(self) -> bool:
        if self.thread is not None:
            self.thread.join()
        return self.done
