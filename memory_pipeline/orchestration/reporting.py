"""Recording work in Dagster: materializations of the days' partitions, however the work was done.

One way to record a day, whichever path did its work: ``day_materializations`` builds the
events, a run logs them (the ``backlog`` asset: ``context.log_event``), work done outside any
run reports them to the instance as runless events (``DagsterReporter``, the
``reporting.Reporter`` the CLI gives ``Memory``: ``memory-pipeline ingest``, ``forget``,
``index`` and the servers it starts). So the UI's partition status and lineage are true
whichever path did the work.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any

from memory_pipeline.orchestration.instance import (
    add_partitions,
    open_instance,
    open_instance_meanwhile,
)

# The day's partitions an index run outside Dagster did the work of: chunks, vectors and the
# entity mentions (``Memory.index`` links what it commits).
INDEXED_ASSETS = ("chunks", "embeddings", "entity_mentions")

if TYPE_CHECKING:
    from memory_pipeline.indexing.days import IndexedDay
    from memory_pipeline.indexing.pending import IndexLag


def day_materializations(day: str, metadata_by_asset: Mapping[str, Mapping[str, Any]]) -> list:
    """One materialization of ``day``'s partition per asset, with that asset's metadata."""
    import dagster as dg

    return [
        dg.AssetMaterialization(asset_key=asset, partition=day, metadata=dict(metadata))
        for asset, metadata in metadata_by_asset.items()
    ]


def report_runless(instance, days: Iterable[str], events: Iterable) -> None:
    """Add the days' partitions that are missing, then report ``events`` as runless."""
    add_partitions(instance, days)
    for event in events:
        instance.report_runless_asset_event(event)


class DagsterReporter:
    """Tells this project's Dagster instance what a ``Memory`` did outside Dagster's runs: an
    ingest or a forgetting as a materialization of the days' ``episodes`` partitions, an index
    run as materializations of the ``INDEXED_ASSETS`` partitions of the days it finished, with the
    metadata a run records, and the results of their checks; after each, how far the index is
    behind what was ingested (the ``index_is_current`` check, ``orchestration.freshness``).

    The instance opens on the first event (importing Dagster and setting up its storage take
    seconds), or on a thread from ``open_meanwhile`` on, for a command that records at its end."""

    name = "Dagster"

    def __init__(self) -> None:
        self._instance = None
        self._opening: Future | None = None

    def open_meanwhile(self) -> None:
        """Start opening the instance on a daemon thread (``open_instance_meanwhile``)."""
        if self._instance is None and self._opening is None:
            self._opening = open_instance_meanwhile()

    def _open(self):
        if self._instance is None:
            self._instance = self._opening.result() if self._opening else open_instance()
        return self._instance

    def episodes_changed(self, day: str, episodes: int, details: Mapping[str, Any]) -> None:
        metadata = {"dagster/row_count": episodes, **details}
        report_runless(self._open(), [day], day_materializations(day, {"episodes": metadata}))

    def days_indexed(self, days: Sequence[IndexedDay], by: str) -> None:
        """Each day's ``INDEXED_ASSETS`` partitions with the metadata their runs record, then
        the three checks' results over the days, as a Dagster run over them returns them."""
        # Here, not at the top: both import Dagster (half a second), which a command that opens
        # a memory only pays once it has something to record.
        from memory_pipeline.orchestration import day_checks, day_metadata

        done = sorted(days, key=lambda d: d.chunked.day)
        run = {"materialized_by": by, "days_in_run": len(done)}
        events: list = []
        for d in done:
            events += day_materializations(
                d.chunked.day.isoformat(),
                {
                    "chunks": {**day_metadata.chunks(d.chunked), **run},
                    "embeddings": {**day_metadata.embeddings(d.embedded), **run},
                    "entity_mentions": {**day_metadata.entity_mentions(d.linked), **run},
                },
            )
        profile = done[0].embedded.report.profile if done else ""
        for outcome in (
            day_checks.chunks_check([d.chunked for d in done]),
            day_checks.embeddings_check([d.embedded for d in done], profile),
            day_checks.entity_mentions_check([d.linked for d in done]),
        ):
            events.append(outcome.evaluation())
        report_runless(self._open(), [d.chunked.day.isoformat() for d in done], events)

    def index_lag(self, lag: IndexLag) -> None:
        """The ``index_is_current`` check's result for ``lag`` (``orchestration.freshness``)."""
        from memory_pipeline.orchestration import freshness, settings

        evaluation = freshness.index_check_evaluation(lag, settings.index_max_lag_minutes())
        self._open().report_runless_asset_event(evaluation)

    def close(self, *, wait: bool = True) -> None:
        """Dispose of the instance; one still opening is waited for (its thread would be cut
        short at exit, mid-connection), unless ``wait`` is False: a command that fails is
        never held back by it."""
        instance, opening = self._instance, self._opening
        self._instance = self._opening = None
        if instance is None and opening is not None and (wait or opening.done()):
            try:
                instance = opening.result()
            except Exception:  # noqa: BLE001 - nothing was recorded with it, nothing to say
                instance = None
        if instance is not None:
            instance.dispose()
