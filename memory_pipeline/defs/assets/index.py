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
import os
import time

import dagster as dg

from memory_pipeline import calibration as model_calibration
from memory_pipeline import indexing
from memory_pipeline.defs.assets._common import (
    BACKFILL_POLICY,
    CHUNKS_TABLE,
    EMBEDDING_POOL,
    EMBEDDINGS_TABLE,
    ENTITY_MENTIONS_TABLE,
    OWNERS,
    days_label,
    days_of,
)
from memory_pipeline.defs.assets.ingest import episodes
from memory_pipeline.defs.metadata import markdown_table
from memory_pipeline.defs.partitions import ingest_days
from memory_pipeline.domain import calibration
from memory_pipeline.resources import MemoryResource
from memory_pipeline.storage import entities_store, partition_store
from memory_pipeline.storage.profiles_store import stored_calibration, writing_target


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
    deps=[episodes],
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
        report = indexing.chunk_pending(
            memory.db, day=day, anchors=memory.api.embed_settings.heading_anchors
        )
        with memory.db.connection() as conn:
            stats = partition_store.chunk_stats(conn, day)
        context.add_asset_metadata(
            {
                "dagster/row_count": stats["chunks"],
                "new_chunks": report.chunks,
                "episodes_chunked": report.episodes,
                "mean_chunk_chars": round(stats["characters"] / stats["chunks"], 1)
                if stats["chunks"]
                else 0.0,
                "seconds": round(report.seconds, 3),
                "chunks_per_second": round(report.chunks_per_second, 1),
                "preview": markdown_table(report.preview),
            },
            partition_key=day.isoformat(),
        )
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
    deps=[chunks],
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
    failing, totals = [], {}
    generation = 0
    for day in days:
        report = indexing.embed_day(
            memory.db,
            model,
            day,
            on_progress=lambda r: context.log.debug(
                f"{r.episodes} episodes, {r.vectors} vectors so far"
            ),
        )
        model_calibration.after_index(memory.db, model, report.canary_checked)
        with memory.db.connection() as conn:
            target = writing_target(conn, memory.profile)
            found = (
                partition_store.vector_integrity(conn, day, target)
                if target
                else partition_store.no_vectors(conn, day)
            )
            measured = (
                stored_calibration(conn, target.id, target.generation) if target else None
            ) or calibration.DEFAULT
        generation = target.generation if target else 0
        context.log.info(
            f"{day}: {report.episodes} episodes, {report.vectors} vectors in {report.seconds:.1f}s "
            f"({report.vectors_per_second:.1f} vectors/s) with {report.profile}"
        )
        context.add_asset_metadata(
            {
                "dagster/row_count": found["vectors"],
                "profile": report.profile,
                "generation": generation,
                "episodes_indexed": report.episodes,
                "new_vectors": report.vectors,
                "new_window_vectors": report.windows,
                "model_calls": report.model_calls,
                "pending_after": report.pending_after or 0,
                "seconds": round(report.seconds, 3),
                "embed_seconds": round(report.embed_seconds, 3),
                "store_seconds": round(report.store_seconds, 3),
                "vectors_per_second": round(report.vectors_per_second, 2),
                # Which process embedded: tells a distributed executor's workers apart.
                "worker_pid": os.getpid(),
                "preview": markdown_table(report.preview),
                # The profile's measured cut-offs (domain.calibration), or the defaults and why.
                "calibration": dg.MetadataValue.json(measured.to_json()),
                "close_statement_cut_off": round(measured.close, 4),
            },
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
    deps=[episodes],
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
        started = time.perf_counter()
        report = entities_store.EntityReport()
        with memory.db.connection() as conn:
            memories = entities_store.refresh_day(conn, day, report)
            stats = partition_store.entity_stats(conn, day)
            top = entities_store.top_entities(conn, memories)
        context.add_asset_metadata(
            {
                "dagster/row_count": stats["mentions"],
                "memories": len(memories),
                "new_mentions": report.mentions_added,
                "episodes_scanned_for_names": report.extracted_episodes,
                "seconds": round(time.perf_counter() - started, 3),
                "top_entities": markdown_table(top),
            },
            partition_key=day.isoformat(),
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
