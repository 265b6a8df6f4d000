"""The per-day checks' results over the days a run worked on, whichever path did the work.

A day's partitions (``defs/assets/index.py``) return these as ``AssetCheckResult`` with their
materializations; ``memory-pipeline index`` records the same outcomes as runless
``AssetCheckEvaluation`` events (``orchestration.reporting``), so the asset's checks read the
same whether a Dagster run or the CLI indexed the days. Dagster 1.13 records one check result
per run: it fails if any of the days fails, and its metadata names those days.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

import dagster as dg

from memory_pipeline.indexing.days import ChunkedDay, EmbeddedDay, LinkedDay
from memory_pipeline.orchestration.assets import days_label

# The checks as the partitioned assets declare them; each outcome below is of one of them.
CHUNKS_SPEC = dg.AssetCheckSpec(
    "every_episode_chunked", asset="chunks", description="Every episode of the day has its chunks."
)
EMBEDDINGS_SPEC = dg.AssetCheckSpec(
    "day_vectors_complete_and_normalized",
    asset="embeddings",
    description="Every chunk of the day has a vector in the generation being written, of the "
    "profile's dimension and unit length (window vectors included).",
)
ENTITY_MENTIONS_SPEC = dg.AssetCheckSpec(
    "every_episode_scanned_for_names",
    asset="entity_mentions",
    description="The proper names of every episode of the day were extracted.",
)


@dataclass(frozen=True)
class CheckOutcome:
    asset: str
    check_name: str
    passed: bool
    metadata: dict
    description: str | None

    def result(self) -> dg.AssetCheckResult:
        """As an asset returns it with its materialization."""
        return dg.AssetCheckResult(
            check_name=self.check_name,
            passed=self.passed,
            metadata=self.metadata,
            description=self.description,
        )

    def evaluation(self) -> dg.AssetCheckEvaluation:
        """As work outside a run reports it to the instance."""
        return dg.AssetCheckEvaluation(
            asset_key=dg.AssetKey(self.asset),
            check_name=self.check_name,
            passed=self.passed,
            metadata=self.metadata,
            description=self.description,
        )


def _over_days(
    spec: dg.AssetCheckSpec,
    failing: list[dt.date],
    days: list[dt.date],
    totals: dict,
    failure: str,
) -> CheckOutcome:
    return CheckOutcome(
        spec.asset_key.to_user_string(),
        spec.name,
        not failing,
        {
            **totals,
            "days": days_label(days),
            "failing_days": ", ".join(d.isoformat() for d in failing) or "none",
        },
        None if not failing else f"{failure} on {len(failing)} of {len(days)} day(s)",
    )


def chunks_check(chunked: Sequence[ChunkedDay]) -> CheckOutcome:
    return _episodes_check(
        CHUNKS_SPEC,
        chunked,
        ("episodes", "episodes_without_chunks"),
        "episodes without chunks",
    )


def embeddings_check(embedded: Sequence[EmbeddedDay], profile: str) -> CheckOutcome:
    totals: dict = {}
    for e in embedded:
        for key, value in e.vectors.items():
            totals[key] = totals.get(key, 0) + value
    failing = [
        e.day
        for e in embedded
        if e.vectors["missing"] or e.vectors["wrong_dimension"] or e.vectors["not_normalized"]
    ]
    generation = embedded[-1].generation if embedded else 0
    return _over_days(
        EMBEDDINGS_SPEC,
        failing,
        [e.day for e in embedded],
        {**totals, "profile": profile, "generation": generation},
        "missing, mis-sized or non-unit vectors among the chunks",
    )


def entity_mentions_check(linked: Sequence[LinkedDay]) -> CheckOutcome:
    return _episodes_check(
        ENTITY_MENTIONS_SPEC,
        linked,
        ("episodes_without_names",),
        "episodes not scanned for names",
    )


def _episodes_check(
    spec: dg.AssetCheckSpec,
    done: Sequence[ChunkedDay] | Sequence[LinkedDay],
    counted: tuple[str, ...],
    failure: str,
) -> CheckOutcome:
    """A day fails when the last of ``counted`` (its episodes left undone) is not 0."""
    totals = {key: sum(d.stats[key] for d in done) for key in counted}
    failing = [d.day for d in done if d.stats[counted[-1]]]
    return _over_days(spec, failing, [d.day for d in done], totals, failure)
