"""Stages 2-4 per ingest day: chunks, embeddings (vectors of the written generation), entity mentions.

Each partition reads and writes its own day's rows (beyond them only what every writer keeps
current: keyword statistics, champion lists, mention counts), and running it again leaves the
same rows: what is global (switching the serving generation, measuring its model, promoting recurring
names, the HNSW index, keyword lists) lives in the unpartitioned assets of ``maintenance``, which
the sensor requests once nothing is pending (``switch_generation_job``) and the night runs. A run takes one day (the sensor, a
single-day run) or, in a backfill, a range of up to ten (``BACKFILL_POLICY``): the days are
worked one after another and each is recorded as its own partition's materialization, with its
own numbers. Each asset returns its cheap check with the materialization, evaluated over the
run's days (Dagster 1.13 records one check result per run, not per partition): it fails if any
day fails, and its metadata names those days. ``embeddings`` also returns ``index_is_current``
(``orchestration.freshness``): how far the index is behind what was ingested, after the run.
"""

import dagster as dg

from memory_pipeline.defs.partitions import day_asset
from memory_pipeline.orchestration import day_checks, day_metadata, freshness
from memory_pipeline.orchestration.assets import (
    CHUNKS_TABLE,
    EMBEDDINGS_TABLE,
    ENTITY_MENTIONS_TABLE,
    RECHUNK_TAG,
    code_referenced,
    days_of,
    each_day,
)
from memory_pipeline.orchestration.progress import RunProgress
from memory_pipeline.orchestration.resources import MemoryResource
from memory_pipeline.orchestration.settings import index_max_lag_minutes


@day_asset(
    "index",
    deps=["episodes"],
    metadata=CHUNKS_TABLE,
    check_specs=[day_checks.CHUNKS_SPEC],
)
def chunks(context: dg.AssetExecutionContext, memory_api: MemoryResource) -> dg.MaterializeResult:
    """The day's episodes cut into chunks: paragraphs packed up to 1600 characters, no overlap,
    content-addressed ids (see memory_pipeline/domain/chunking.py)."""
    again = context.run.tags.get(RECHUNK_TAG) == "true"
    done = each_day(
        context, lambda day: memory_api.api.days.cut(day, again=again), day_metadata.chunks
    )
    return dg.MaterializeResult(
        metadata={"days_in_run": len(done)}, check_results=[day_checks.chunks_check(done).result()]
    )


@day_asset(
    "index",
    deps=["chunks"],
    kinds={"postgres", "pgvector"},
    calls_model=True,
    metadata=EMBEDDINGS_TABLE,
    check_specs=[day_checks.EMBEDDINGS_SPEC, freshness.SPEC],
)
def embeddings(
    context: dg.AssetExecutionContext, memory_api: MemoryResource
) -> dg.MaterializeResult:
    """Vectors for the day's chunks under the configured embedding profile, stored as halfvec
    and stamped with profile and generation. A canary refuses a wrong or changed model before
    any write. Never switches what search serves (`serving_generation` does) nor builds the
    HNSW index (`hnsw_index`)."""
    mem = memory_api.api
    done = []
    for day in days_of(context):
        progress = RunProgress(context.log, prefix=f"{day}: ")
        embedded = mem.days.embed(day, on_progress=progress)
        report = embedded.report
        context.log.info(
            f"{day}: {report.episodes} episodes, {report.vectors} vectors in {report.seconds:.1f}s "
            f"({report.vectors_per_second:.1f} vectors/s) with {report.profile}"
        )
        context.add_asset_metadata(
            {**day_metadata.embeddings(embedded), **progress.metadata()},
            partition_key=day.isoformat(),
        )
        done.append(embedded)
    return dg.MaterializeResult(
        metadata={"days_in_run": len(done)},
        check_results=[
            day_checks.embeddings_check(done, mem.embedder.profile.name).result(),
            freshness.index_check_result(mem.upkeep.index_lag(), index_max_lag_minutes()),
        ],
    )


@day_asset(
    "index",
    deps=["episodes"],
    metadata=ENTITY_MENTIONS_TABLE,
    check_specs=[day_checks.ENTITY_MENTIONS_SPEC],
)
def entity_mentions(
    context: dg.AssetExecutionContext, memory_api: MemoryResource
) -> dg.MaterializeResult:
    """Links from the entities of a memory (imported with `memory-pipeline entities import`, or
    names promoted by `entities`) to the day's episodes that mention them; the graph channel of
    search follows these links. Writes only links to the day's episodes."""
    done = each_day(context, memory_api.api.days.link, day_metadata.entity_mentions)
    return dg.MaterializeResult(
        metadata={"days_in_run": len(done)},
        check_results=[day_checks.entity_mentions_check(done).result()],
    )


@dg.definitions
def defs() -> dg.Definitions:
    return code_referenced([chunks, embeddings, entity_mentions])
