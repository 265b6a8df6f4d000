"""Jobs: index one ingest day (episodes -> chunks -> embeddings), and maintain the HNSW index."""

import dagster as dg

from memory_pipeline.defs.assets import (
    backlog,
    chunks,
    embeddings,
    entity_mentions,
    episodes,
    hnsw_index,
    pipeline_stats,
)
from memory_pipeline.defs.checks import embeddings_complete_and_normalized
from memory_pipeline.defs.partitions import ingest_days

index_day_job = dg.define_asset_job(
    "index_day_job",
    # Without checks: the vector check scans every vector of the serving generation, and while
    # other days of a backfill wait for the embedding pool it would fail on their chunks. The
    # nightly job runs it once, after everything pending is indexed.
    selection=dg.AssetSelection.assets(episodes, chunks, embeddings, entity_mentions).without_checks(),
    partitions_def=ingest_days,
    description="Load a day's inbox, chunk and embed the day's episodes, link entity mentions (one partition).",
)

build_hnsw_index_job = dg.define_asset_job(
    "build_hnsw_index_job",
    selection=dg.AssetSelection.assets(hnsw_index),
    description="Create or repair the HNSW index of the active embedding profile.",
)

nightly_maintenance_job = dg.define_asset_job(
    "nightly_maintenance_job",
    selection=dg.AssetSelection.assets(backlog, hnsw_index, pipeline_stats)
    | dg.AssetSelection.checks(embeddings_complete_and_normalized),
    description="Index everything pending (canary first), refresh entity mentions, maintain the HNSW "
    "index, ANALYZE, and record the day's statistics; with the assets' checks.",
)
