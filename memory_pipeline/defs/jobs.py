"""Jobs: index one ingest day, embed statements, switch the serving generation, maintain the HNSW
index, nightly.

The day and switch jobs are light (a day with nothing pending does a few queries): they run
their steps in the run's own process (``in_process_job``), where a process per step would cost
seconds each. The nightly job does too; it is one chain of steps.
``index_day_distributed_job`` is the same day with each step sent to Celery workers through a
Redis broker: a backfill's embedding steps then run on the workers' machines.
"""

import dagster as dg
from dagster_celery import celery_executor


def in_process_job(name: str, assets: tuple[str, ...], description: str, **kwargs):
    """A job over ``assets`` (with their checks) whose steps run in the run's own process."""
    return dg.define_asset_job(
        name,
        selection=dg.AssetSelection.assets(*assets),
        executor_def=dg.in_process_executor,
        description=description,
        **kwargs,
    )


index_day_job = in_process_job(
    "index_day_job",
    # With the partition checks: each is about its own day, so every run (and a backfill of any
    # size) evaluates them.
    ("episodes", "chunks", "embeddings", "entity_mentions"),
    "Load a day's inbox, chunk and embed the day's episodes, link their entity mentions (one partition).",
    tags={"memory_pipeline/kind": "partition"},
)

index_day_distributed_job = dg.define_asset_job(
    "index_day_distributed_job",
    selection=dg.AssetSelection.assets("episodes", "chunks", "embeddings", "entity_mentions"),
    executor_def=celery_executor,
    # The Launchpad's preset: a Redis on this machine. Point both at the broker the workers
    # (`celery -A dagster_celery.app worker -Q dagster`) listen to.
    config={
        "execution": {
            "config": {"broker": "redis://127.0.0.1:6379/0", "backend": "redis://127.0.0.1:6379/1"}
        }
    },
    tags={"memory_pipeline/kind": "partition"},
    description="index_day_job with each step run by a Celery worker (Redis broker): for backfills "
    "bigger than one machine (one partition).",
)

switch_generation_job = in_process_job(
    "switch_generation_job",
    # Statement vectors first: a new generation serves observations and beliefs from its first search.
    ("statement_vectors", "serving_generation", "hnsw_index"),
    "Embed pending statements, serve the new generation once nothing is pending for it "
    "(measuring its model once), then build its HNSW index: the global steps after day partitions.",
)

embed_statements_job = in_process_job(
    "embed_statements_job",
    ("statement_vectors",),
    "Embed observations and beliefs that have no vector for the generation being written "
    "(saved while the model was down, or imported); with its check.",
)

build_hnsw_index_job = in_process_job(
    "build_hnsw_index_job",
    ("hnsw_index",),
    "Create or repair the HNSW index of the active embedding profile.",
)

# The nightly job's assets, in the order their dependencies run them (the schedule's
# description is written from this list, so it names every one).
NIGHTLY_ASSETS = (
    "backlog",
    "entities",
    "keyword_champions",
    "statement_vectors",
    "serving_generation",
    "hnsw_index",
    "pipeline_stats",
    "retrieval_quality",
)

nightly_maintenance_job = in_process_job(
    "nightly_maintenance_job",
    NIGHTLY_ASSETS,
    "Index everything pending (canary first), promote recurring names, rebuild the keyword "
    "champion lists, embed pending "
    "observations and beliefs, switch a finished "
    "generation, maintain the HNSW index, ANALYZE, record the day's statistics and score each memory's "
    "labelled questions; with the checks.",
)
