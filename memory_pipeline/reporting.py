"""What ``Memory`` tells the system that shows its work: the ``Reporter`` an adapter gives it.

The core imports no adapter. An adapter that must be told what was done outside it passes a
Reporter to ``Memory.open``: the CLI (and the servers it starts) passes
``orchestration.reporting.DagsterReporter``, which records each change as a materialization of
the days' partitions, so Dagster's UI is true whichever path did the work. The work is done
whatever a reporter does: ``Memory`` turns a failure to tell it into a warning
(``Memory.warnings``), never into a failure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from memory_pipeline.indexing.days import IndexedDay
from memory_pipeline.indexing.pending import IndexLag


class Reporter(Protocol):
    """Told about work done through ``Memory``; days are ingest days as ISO dates."""

    name: str  # how a warning names it ("could not record ... in NAME")

    def episodes_changed(self, day: str, episodes: int, details: Mapping[str, Any]) -> None:
        """Episodes of ``day`` were stored or forgotten; the day now holds ``episodes``."""

    def days_indexed(self, days: Sequence[IndexedDay], by: str) -> None:
        """Every episode of ``days`` is chunked, embedded and scanned for names (``by`` did it):
        what the run wrote for each and the day's counts after it, as its partitions report."""

    def index_lag(self, lag: IndexLag) -> None:
        """After an ingest or an index run: how far the index is now behind what was ingested
        (what the UI shows as the index's freshness)."""

    def close(self, *, wait: bool = True) -> None:
        """The ``Memory`` closes: give back what telling needed. ``wait`` False: it closes on a
        failure, and must not be held back by work the reporter started ahead."""
