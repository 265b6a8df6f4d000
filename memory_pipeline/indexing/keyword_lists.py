"""Keyword champion lists built beside an index run instead of after it.

`memory-pipeline index` leaves every memory's champion lists fresh (``champions_store``). Built
after the pass, that build added its whole time to the command's while the pass, waiting on the
model, left a core idle. A rebuild can run beside the writers (they log what they commit and the
swap weighs it), so ``ListsBeside`` starts it on a thread and connection of its own once the run
has committed ``START_SHARE`` of its episodes; ``finish`` builds what is still missing or stale.
"""

from __future__ import annotations

import threading

import psycopg

from memory_pipeline.storage import champions_store
from memory_pipeline.storage.champions_store import ChampionBuild
from memory_pipeline.storage.database import Database

# The share of a run's episodes committed before its lists are built beside the rest: late
# enough that the chunks written after the build stay under champions_store.STALE_CHANGE of those
# it saw (here at most 15 of 85), early enough that the build ends before the pass.
START_SHARE = 0.85


class ListsBeside:
    """Builds missing and stale champion lists (of every memory, as ``champions_store.
    refresh_all_champions`` with ``stale_only``) once ``committed`` has counted ``START_SHARE``
    of ``planned`` episodes, on a thread; ``finish`` waits for it and checks again."""

    def __init__(self, db: Database, planned: int):
        self.db, self.planned, self.done = db, planned, 0
        self.builds: list[ChampionBuild] = []
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        # The build's connection while it runs (to cancel it on a failure).
        self._conn: psycopg.Connection | None = None

    def committed(self, episode_ids: list[int]) -> None:
        """Count a committed batch (the pass's ``on_committed``); start the build at the share."""
        self.done += len(episode_ids)
        if self._thread is None and self.planned > 0 and self.done >= START_SHARE * self.planned:
            self._thread = threading.Thread(target=self._build, name="keyword-lists", daemon=True)
            self._thread.start()

    def _build(self) -> None:
        try:
            with self.db.connection() as conn:
                self._conn = conn
                try:
                    self.builds += champions_store.refresh_all_champions(conn, stale_only=True)
                finally:
                    self._conn = None
        except BaseException as exc:  # noqa: BLE001 - raised on the run's thread by ``finish``
            self._error = exc

    def finish(self) -> list[ChampionBuild]:
        """After the run: the build's result (its failure raised here), then the lists still
        missing or stale built now; every build, in order."""
        if self._thread is not None:
            self._thread.join()
            if self._error is not None:
                raise self._error
        with self.db.connection() as conn:
            self.builds += champions_store.refresh_all_champions(conn, stale_only=True)
        return self.builds

    def abandon(self) -> None:
        """The run failed: cancel a build still running (its query ends; a rebuild cut short
        leaves the old lists in place) and wait for the thread to give its connection back."""
        conn = self._conn
        if self._thread is not None and self._thread.is_alive():
            if conn is not None:
                conn.cancel_safe()
            self._thread.join(timeout=30)

    def __enter__(self) -> ListsBeside:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            self.abandon()
