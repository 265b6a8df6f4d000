"""Telling the ``reporting.Reporter`` what a ``Memory`` stored and forgot (the ``Telling`` part of
its class): the days whose episodes changed, best effort."""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable

from memory_pipeline import config
from memory_pipeline.embedders.factory import profile_of
from memory_pipeline.indexing.pending import index_lag
from memory_pipeline.reporting import Reporter
from memory_pipeline.storage import episodes_store
from memory_pipeline.storage.database import Database
from memory_pipeline.storage.forget_store import ForgetCounts


class Telling:
    """``Memory``'s reporting methods (its class derives from this one)."""

    db: Database
    embed_settings: config.EmbedSettings
    reporter: Reporter | None
    warnings: list[str]
    _report_lock: threading.Lock

    def _tell_dagster_ingested(
        self, day: dt.date, inserted: int, duplicates: int, rejected: int, by: str
    ) -> None:
        if not inserted:
            return
        self._report_days(
            [day],
            {"ingested_by": by, "new": inserted, "duplicates": duplicates, "rejected": rejected},
            what="the ingest",
        )
        self._tell_index_lag()

    def _tell_index_lag(self) -> None:
        """Tell the reporter how far the index is now behind what was ingested, counted for the
        configured profile without loading its model (an ingest never does)."""
        if self.reporter is None:
            return
        self._tell(
            lambda reporter: reporter.index_lag(
                index_lag(self.db, profile_of(self.embed_settings))
            ),
            failed="done, but could not record the index's freshness",
        )

    def _tell_dagster_forgotten(self, memory: str, counts: ForgetCounts) -> None:
        if counts.episodes:
            self._report_days(
                counts.ingest_days,
                {"forgotten_by": "Memory.forget", "forgotten_episodes": counts.episodes},
                what="the forgetting",
            )
            self._tell_index_lag()

    def _report_days(self, days: list[dt.date], details: dict, *, what: str) -> None:
        """Tell the reporter each day's episodes changed, with the episodes it now holds."""

        def tell(reporter: Reporter) -> None:
            for day in days:
                with self.db.connection() as conn:
                    rows = sum(r["episodes"] for r in episodes_store.day_summary(conn, day))
                reporter.episodes_changed(day.isoformat(), rows, details)

        self._tell(tell, failed=f"done, but could not record {what}")

    def _tell(self, tell: Callable[[Reporter], None], *, failed: str) -> None:
        """``tell(reporter)``, best effort. The data is already stored (or deleted); failing to
        tell only costs the reporter's view (a square of Dagster's UI), so a problem here
        becomes a warning in ``self.warnings``, never a failure."""
        if self.reporter is None:
            return
        try:
            with self._report_lock:
                tell(self.reporter)
        except Exception as exc:  # noqa: BLE001 - reported, never fatal (see docstring)
            self.warnings.append(f"{failed} in {self.reporter.name}: {exc}")
