"""Jobs: index one ingest day, switch the serving generation, maintain the HNSW index, nightly.

Each job names its executor. The day and switch jobs are light (a day with nothing pending
does a few queries): they run their steps in the run's own process, where a process per step
would cost seconds each. The nightly job does too; it is one chain of steps.
"""

import dagster as dg

from memory_pipeline.defs.assets import (
    backlog,
    chunks,
    embeddings,
    entities,
    entity_mentions,
    episodes,
    hnsw_index,
    pipeline_stats,
    serving_generation,
)

index_day_job = dg.define_asset_job(
    "index_day_job",
    # With the partition checks: each is about its own day, so every run (and a backfill of any
    # size) evaluates them.
    selection=dg.AssetSelection.assets(episodes, chunks, embeddings, entity_mentions),
    executor_def=dg.in_process_executor,
    tags={"memory_pipeline/kind": "partition"},
    description="Load a day's inbox, chunk and embed the day's episodes, link their entity mentions (one partition).",
)

switch_generation_job = dg.define_asset_job(
    "switch_generation_job",
    selection=dg.AssetSelection.assets(serving_generation, hnsw_index),
    executor_def=dg.in_process_executor,
    description="Serve the new generation once nothing is pending for it, then build its HNSW index.",
)

build_hnsw_index_job = dg.define_asset_job(
    "build_hnsw_index_job",
    selection=dg.AssetSelection.assets(hnsw_index),
    executor_def=dg.in_process_executor,
    description="Create or repair the HNSW index of the active embedding profile.",
)

nightly_maintenance_job = dg.define_asset_job(
    "nightly_maintenance_job",
    selection=dg.AssetSelection.assets(backlog, entities, serving_generation, hnsw_index, pipeline_stats),
    executor_def=dg.in_process_executor,
    description="Index everything pending (canary first), promote recurring names, switch a finished "
    "generation, maintain the HNSW index, ANALYZE, and record the day's statistics; with the checks.",
)
