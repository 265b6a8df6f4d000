"""Stages 2-4 per ingest day: chunks, embeddings (vectors of the written generation), entity mentions.

Each partition reads and writes its own day's rows only, and running it again leaves the same
rows: what is global (switching the serving generation, promoting recurring names, the HNSW
index) lives in the unpartitioned assets of ``maintenance``. A run takes one day (the sensor, a
single-day run) or, in a backfill, a range of up to ten (``BACKFILL_POLICY``): the days are
worked one after another and each is recorded as its own partition's materialization, with its
own numbers. Each asset returns its cheap check with the materialization, evaluated over the
run's days (Dagster 1.13 records one check result per run, not per partition): it fails if any
day fails, and its metadata names those days.
"""

import datetime as dt

import dagster as dg

from memory_pipeline.defs.partitions import ingest_days
from memory_pipeline.indexing.days import chunk_day, embed_day, link_day
from memory_pipeline.orchestration import day_metadata
from memory_pipeline.orchestration.assets import (
    BACKFILL_POLICY,
    CHUNKS_TABLE,
    EMBEDDINGS_TABLE,
    ENTITY_MENTIONS_TABLE,
    OWNERS,
    code_referenced,
    days_label,
    days_of,
)
from memory_pipeline.orchestration.instance import EMBEDDING_POOL
from memory_pipeline.orchestration.progress import RunProgress
from memory_pipeline.orchestration.resources import MemoryResource


def _check_over_days(
    check_name: str, failing: list[dt.date], days: list[dt.date], totals: dict, failure: str
) -> dg.AssetCheckResult:
    """One check result for the run's days: passed when no day failed; names the days that did."""
    return dg.AssetCheckResult(
        check_name=check_name,
        passed=not failing,
        metadata={
            **totals,
            "days": days_label(days),
            "failing_days": ", ".join(d.isoformat() for d in failing) or "none",
        },
        description=None if not failing else f"{failure} on {len(failing)} of {len(days)} day(s)",
    )


@dg.asset(
    partitions_def=ingest_days,
    backfill_policy=BACKFILL_POLICY,
    group_name="index",
    deps=["episodes"],
    kinds={"postgres"},
    owners=OWNERS,
    tags={"stage": "index"},
    metadata=CHUNKS_TABLE,
    check_specs=[
        dg.AssetCheckSpec(
            "every_episode_chunked",
            asset="chunks",
            description="Every episode of the day has its chunks.",
        )
    ],
    description=(
        "The day's episodes cut into chunks: paragraphs packed up to 1600 characters, no "
        "overlap, content-addressed ids (see memory_pipeline/domain/chunking.py)."
    ),
)
def chunks(context: dg.AssetExecutionContext, memory: MemoryResource) -> dg.MaterializeResult:
    days = days_of(context)
    failing, totals = [], {"episodes": 0, "episodes_without_chunks": 0}
    for day in days:
        chunked = chunk_day(memory.db, day, anchors=memory.api.embed_settings.heading_anchors)
        stats = chunked.stats
        context.add_asset_metadata(day_metadata.chunks(chunked), partition_key=day.isoformat())
        totals["episodes"] += stats["episodes"]
        totals["episodes_without_chunks"] += stats["episodes_without_chunks"]
        if stats["episodes_without_chunks"]:
            failing.append(day)
    return dg.MaterializeResult(
        metadata={"days_in_run": len(days)},
        check_results=[
            _check_over_days(
                "every_episode_chunked", failing, days, totals, "episodes without chunks"
            )
        ],
    )


@dg.asset(
    partitions_def=ingest_days,
    backfill_policy=BACKFILL_POLICY,
    group_name="index",
    deps=["chunks"],
    kinds={"postgres", "pgvector"},
    owners=OWNERS,
    tags={"stage": "index", "calls": "embedding-model"},
    metadata=EMBEDDINGS_TABLE,
    pool=EMBEDDING_POOL,
    check_specs=[
        dg.AssetCheckSpec(
            "day_vectors_complete_and_normalized",
            asset="embeddings",
            description="Every chunk of the day has a vector in the generation being written, of the "
            "profile's dimension and unit length (window vectors included).",
        )
    ],
    description=(
        "Vectors for the day's chunks under the configured embedding profile, stored as halfvec "
        "and stamped with profile and generation. A canary refuses a wrong or changed model "
        "before any write. Never switches what search serves: `serving_generation` does."
    ),
)
def embeddings(context: dg.AssetExecutionContext, memory: MemoryResource) -> dg.MaterializeResult:
    days = days_of(context)
    model = memory.embedder
    failing: list[dt.date] = []
    totals: dict[str, int] = {}
    generation = 0
    for day in days:
        progress = RunProgress(context.log, prefix=f"{day}: ")
        embedded = embed_day(memory.db, model, day, on_progress=progress)
        report, found, generation = embedded.report, embedded.vectors, embedded.generation
        context.log.info(
            f"{day}: {report.episodes} episodes, {report.vectors} vectors in {report.seconds:.1f}s "
            f"({report.vectors_per_second:.1f} vectors/s) with {report.profile}"
        )
        context.add_asset_metadata(
            {**day_metadata.embeddings(embedded), **progress.metadata()},
            partition_key=day.isoformat(),
        )
        for key, value in found.items():
            totals[key] = totals.get(key, 0) + value
        if found["missing"] or found["wrong_dimension"] or found["not_normalized"]:
            failing.append(day)
    return dg.MaterializeResult(
        metadata={"days_in_run": len(days)},
        check_results=[
            _check_over_days(
                "day_vectors_complete_and_normalized",
                failing,
                days,
                {**totals, "profile": model.profile.name, "generation": generation},
                "missing, mis-sized or non-unit vectors among the chunks",
            )
        ],
    )


@dg.asset(
    partitions_def=ingest_days,
    backfill_policy=BACKFILL_POLICY,
    group_name="index",
    deps=["episodes"],
    kinds={"postgres"},
    owners=OWNERS,
    tags={"stage": "index"},
    metadata=ENTITY_MENTIONS_TABLE,
    check_specs=[
        dg.AssetCheckSpec(
            "every_episode_scanned_for_names",
            asset="entity_mentions",
            description="The proper names of every episode of the day were extracted.",
        )
    ],
    description=(
        "Links from the entities of a memory (imported with `memory-pipeline entities import`, or "
        "names promoted by `entities`) to the day's episodes that mention them; the graph channel "
        "of search follows these links. Writes only links to the day's episodes."
    ),
)
def entity_mentions(
    context: dg.AssetExecutionContext, memory: MemoryResource
) -> dg.MaterializeResult:
    days = days_of(context)
    failing, totals = [], {"episodes_without_names": 0}
    for day in days:
        linked = link_day(memory.db, day)
        stats = linked.stats
        context.add_asset_metadata(
            day_metadata.entity_mentions(linked), partition_key=day.isoformat()
        )
        totals["episodes_without_names"] += stats["episodes_without_names"]
        if stats["episodes_without_names"]:
            failing.append(day)
    return dg.MaterializeResult(
        metadata={"days_in_run": len(days)},
        check_results=[
            _check_over_days(
                "every_episode_scanned_for_names",
                failing,
                days,
                totals,
                "episodes not scanned for names",
            )
        ],
    )


@dg.definitions
def defs() -> dg.Definitions:
    return code_referenced([chunks, embeddings, entity_mentions])
