"""Stages 2-4 per ingest day: chunks, embeddings (vectors of the written generation), entity mentions."""

import time

import dagster as dg

from memory_pipeline import indexing
from memory_pipeline.defs.assets._common import EMBEDDING_POOL, day_of
from memory_pipeline.defs.metadata import markdown_table
from memory_pipeline.defs.partitions import ingest_days
from memory_pipeline.resources import DatabaseResource, EmbedderResource
from memory_pipeline.storage import index_store
from memory_pipeline.storage.profiles_store import active_profile
from memory_pipeline.defs.assets.ingest import episodes


@dg.asset(
    partitions_def=ingest_days,
    group_name="index",
    deps=[episodes],
    kinds={"postgres"},
    description=(
        "The day's episodes cut into chunks: paragraphs packed up to 1600 characters, no "
        "overlap, content-addressed ids (see memory_pipeline/domain/chunking.py)."
    ),
)
def chunks(context: dg.AssetExecutionContext, database: DatabaseResource) -> dg.MaterializeResult:
    day = day_of(context)
    report = indexing.chunk_pending(database.db, day=day)
    with database.db.connection() as conn:
        total, chars = conn.execute(
            """SELECT count(*), coalesce(sum(length(c.text)), 0) FROM chunks c
               JOIN episodes e ON e.id = c.episode_id WHERE e.ingest_day = %s""",
            (day,),
        ).fetchone()
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": total,
            "new_chunks": report.chunks,
            "episodes_chunked": report.episodes,
            "mean_chunk_chars": round(chars / total, 1) if total else 0,
            "seconds": round(report.seconds, 3),
            "chunks_per_second": round(report.chunks_per_second, 1),
            "preview": markdown_table(report.preview),
        }
    )


@dg.asset(
    partitions_def=ingest_days,
    group_name="index",
    deps=[chunks],
    kinds={"postgres", "pgvector"},
    # Every step that calls the embedding model takes a slot of this pool, so a 100-day
    # backfill queues behind the model server's capacity instead of flooding it.
    pool=EMBEDDING_POOL,
    description=(
        "Vectors for the day's chunks under the active embedding profile, stored as halfvec "
        "and stamped with profile and generation. A probe refuses a wrong model before any write."
    ),
)
def embeddings(
    context: dg.AssetExecutionContext, database: DatabaseResource, embedder: EmbedderResource
) -> dg.MaterializeResult:
    day = day_of(context)
    model = embedder.embedder
    report = indexing.index_until_done(
        database.db,
        model,
        day=day,
        on_progress=lambda r: context.log.debug(f"{r.episodes} episodes, {r.vectors} vectors so far"),
    )
    with database.db.connection() as conn:
        profile = active_profile(conn)
        counts = index_store.count_summary(conn, profile)
    context.log.info(
        f"{report.episodes} episodes, {report.vectors} vectors in {report.seconds:.1f}s "
        f"({report.vectors_per_second:.1f} vectors/s) with {report.profile}"
    )
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": counts["vectors"],
            "profile": report.profile,
            "generation": profile.generation if profile else 0,
            "episodes_indexed": report.episodes,
            "new_chunks": report.chunks,
            "new_vectors": report.vectors,
            "new_window_vectors": report.windows,
            "model_calls": report.model_calls,
            "pending_after": report.pending_after or 0,
            "seconds": round(report.seconds, 3),
            "embed_seconds": round(report.embed_seconds, 3),
            "store_seconds": round(report.store_seconds, 3),
            "vectors_per_second": round(report.vectors_per_second, 2),
            "preview": markdown_table(report.preview),
        }
    )


@dg.asset(
    partitions_def=ingest_days,
    group_name="index",
    deps=[episodes],
    kinds={"postgres"},
    description=(
        "Links from entities (imported with `memory-pipeline entities import`, or proper names "
        "that recur in a memory) to the episodes that mention them; the graph channel of search "
        "follows these links. A day refreshes every memory that received episodes that day."
    ),
)
def entity_mentions(context: dg.AssetExecutionContext, database: DatabaseResource) -> dg.MaterializeResult:
    from memory_pipeline.storage import entities_store

    day = day_of(context)
    started = time.perf_counter()
    report = entities_store.EntityReport()
    with database.db.connection() as conn:
        memories = [r[0] for r in conn.execute("SELECT DISTINCT memory FROM episodes WHERE ingest_day = %s", (day,))]
        entities_store.refresh_memories(conn, memories, report)
        total_entities, total_mentions = conn.execute(
            "SELECT (SELECT count(*) FROM entities WHERE memory = ANY(%(m)s)),"
            " (SELECT count(*) FROM entity_mentions WHERE memory = ANY(%(m)s))",
            {"m": memories},
        ).fetchone()
        top = entities_store.top_entities(conn, memories)
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": total_mentions,
            "memories": len(memories),
            "entities": total_entities,
            "new_entities": report.promoted,
            "new_mentions": report.mentions_added,
            "episodes_scanned_for_names": report.extracted_episodes,
            "seconds": round(time.perf_counter() - started, 3),
            "top_entities": markdown_table(top),
        }
    )
