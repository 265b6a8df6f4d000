"""Stages 2-4 per ingest day: chunks, embeddings (vectors of the written generation), entity mentions.

Each partition reads and writes its own day's rows only, and running it again leaves the same
rows: what is global (switching the serving generation, promoting recurring names, the HNSW
index) lives in the unpartitioned assets of ``maintenance``. Each returns its cheap checks with
the materialization, about its own day, so a UI backfill evaluates them too.
"""

import os

import dagster as dg

from memory_pipeline import indexing
from memory_pipeline.defs.assets._common import (
    CHUNKS_TABLE,
    EMBEDDING_POOL,
    EMBEDDINGS_TABLE,
    ENTITY_MENTIONS_TABLE,
    OWNERS,
    day_of,
)
from memory_pipeline.defs.assets.ingest import episodes
from memory_pipeline.defs.metadata import markdown_table
from memory_pipeline.defs.partitions import ingest_days
from memory_pipeline.resources import MemoryResource
from memory_pipeline.storage import entities_store, partition_store
from memory_pipeline.storage.profiles_store import writing_target


@dg.asset(
    partitions_def=ingest_days,
    group_name="index",
    deps=[episodes],
    kinds={"postgres"},
    owners=OWNERS,
    tags={"stage": "index"},
    metadata=CHUNKS_TABLE,
    check_specs=[dg.AssetCheckSpec(
        "every_episode_chunked", asset="chunks",
        description="Every episode of the day has its chunks.")],
    description=(
        "The day's episodes cut into chunks: paragraphs packed up to 1600 characters, no "
        "overlap, content-addressed ids (see memory_pipeline/domain/chunking.py)."
    ),
)
def chunks(context: dg.AssetExecutionContext, memory: MemoryResource) -> dg.MaterializeResult:
    day = day_of(context)
    report = indexing.chunk_pending(memory.db, day=day, anchors=memory.api.embed_settings.heading_anchors)
    with memory.db.connection() as conn:
        stats = partition_store.chunk_stats(conn, day)
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": stats["chunks"],
            "new_chunks": report.chunks,
            "episodes_chunked": report.episodes,
            "mean_chunk_chars": round(stats["characters"] / stats["chunks"], 1) if stats["chunks"] else 0.0,
            "seconds": round(report.seconds, 3),
            "chunks_per_second": round(report.chunks_per_second, 1),
            "preview": markdown_table(report.preview),
        },
        check_results=[dg.AssetCheckResult(
            check_name="every_episode_chunked",
            passed=stats["episodes_without_chunks"] == 0,
            metadata={"episodes": stats["episodes"], "episodes_without_chunks": stats["episodes_without_chunks"]},
        )],
    )


@dg.asset(
    partitions_def=ingest_days,
    group_name="index",
    deps=[chunks],
    kinds={"postgres", "pgvector"},
    owners=OWNERS,
    tags={"stage": "index", "calls": "embedding-model"},
    metadata=EMBEDDINGS_TABLE,
    pool=EMBEDDING_POOL,
    check_specs=[dg.AssetCheckSpec(
        "day_vectors_complete_and_normalized", asset="embeddings",
        description="Every chunk of the day has a vector in the generation being written, of the "
                    "profile's dimension and unit length (window vectors included).")],
    description=(
        "Vectors for the day's chunks under the configured embedding profile, stored as halfvec "
        "and stamped with profile and generation. A canary refuses a wrong or changed model "
        "before any write. Never switches what search serves: `serving_generation` does."
    ),
)
def embeddings(
    context: dg.AssetExecutionContext, memory: MemoryResource
) -> dg.MaterializeResult:
    day = day_of(context)
    model = memory.embedder
    report = indexing.embed_day(
        memory.db, model, day,
        on_progress=lambda r: context.log.debug(f"{r.episodes} episodes, {r.vectors} vectors so far"),
    )
    with memory.db.connection() as conn:
        target = writing_target(conn, memory.profile)
        found = partition_store.vector_integrity(conn, day, target) if target else partition_store.no_vectors(conn, day)
    context.log.info(
        f"{report.episodes} episodes, {report.vectors} vectors in {report.seconds:.1f}s "
        f"({report.vectors_per_second:.1f} vectors/s) with {report.profile}"
    )
    passed = found["missing"] == 0 and found["wrong_dimension"] == 0 and found["not_normalized"] == 0
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": found["vectors"],
            "profile": report.profile,
            "generation": target.generation if target else 0,
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
        },
        check_results=[dg.AssetCheckResult(
            check_name="day_vectors_complete_and_normalized",
            passed=passed,
            metadata={**found, "profile": report.profile, "generation": target.generation if target else 0},
            description=None if passed else "missing, mis-sized or non-unit vectors among the day's chunks",
        )],
    )


@dg.asset(
    partitions_def=ingest_days,
    group_name="index",
    deps=[episodes],
    kinds={"postgres"},
    owners=OWNERS,
    tags={"stage": "index"},
    metadata=ENTITY_MENTIONS_TABLE,
    check_specs=[dg.AssetCheckSpec(
        "every_episode_scanned_for_names", asset="entity_mentions",
        description="The proper names of every episode of the day were extracted.")],
    description=(
        "Links from the entities of a memory (imported with `memory-pipeline entities import`, or "
        "names promoted by `entities`) to the day's episodes that mention them; the graph channel "
        "of search follows these links. Writes only links to the day's episodes."
    ),
)
def entity_mentions(context: dg.AssetExecutionContext, memory: MemoryResource) -> dg.MaterializeResult:
    import time

    day = day_of(context)
    started = time.perf_counter()
    report = entities_store.EntityReport()
    with memory.db.connection() as conn:
        memories = entities_store.refresh_day(conn, day, report)
        stats = partition_store.entity_stats(conn, day)
        top = entities_store.top_entities(conn, memories)
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": stats["mentions"],
            "memories": len(memories),
            "new_mentions": report.mentions_added,
            "episodes_scanned_for_names": report.extracted_episodes,
            "seconds": round(time.perf_counter() - started, 3),
            "top_entities": markdown_table(top),
        },
        check_results=[dg.AssetCheckResult(
            check_name="every_episode_scanned_for_names",
            passed=stats["episodes_without_names"] == 0,
            metadata={"episodes_without_names": stats["episodes_without_names"]},
        )],
    )
