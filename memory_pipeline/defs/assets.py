"""The pipeline's assets: episodes -> chunks -> embeddings (per ingest day) -> hnsw_index.

Assets write through the database resource (no IO managers for the big tables), declare their
upstream tables with ``deps``, and return ``MaterializeResult`` with counts, seconds, throughput,
the profile and a short preview. Each partition run is idempotent: re-running a day stores
nothing twice.
"""


import datetime as dt
import time

import dagster as dg

from memory_pipeline import config, indexing
from memory_pipeline.defs.metadata import markdown_table
from memory_pipeline.defs.partitions import ingest_days
from memory_pipeline.ingest import ingest_paths
from memory_pipeline.resources import DatabaseResource, EmbedderResource
from memory_pipeline.storage import episodes_store, hnsw_store, index_store
from memory_pipeline.storage.profiles_store import active_profile


EMBEDDING_POOL = "embedding"


def _day(context: dg.AssetExecutionContext) -> dt.date:
    return dt.date.fromisoformat(context.partition_key)


@dg.asset(
    partitions_def=ingest_days,
    group_name="ingest",
    kinds={"postgres"},
    description=(
        "Episodes (notes, journal entries, chats, documents) ingested on this UTC day. "
        "Materializing a day loads the inbox folder INBOX/<day>/ (JSONL, Markdown, text) and "
        "reports every episode of the day, however it arrived (CLI, inbox, API)."
    ),
)
def episodes(context: dg.AssetExecutionContext, database: DatabaseResource) -> dg.MaterializeResult:
    day = _day(context)
    started = time.perf_counter()
    inbox = config.inbox_dir() / day.isoformat()
    loaded = None
    if inbox.is_dir():
        loaded = ingest_paths(database.db, [inbox], ingest_day=day)
        context.log.info(f"inbox {inbox}: {loaded.summary()}")
        for rejection in loaded.rejections:
            context.log.warning(str(rejection))
    with database.db.connection() as conn:
        summary = episodes_store.day_summary(conn, day)
        preview = episodes_store.day_preview(conn, day)
    total = sum(r["episodes"] for r in summary)
    metadata = {
        "dagster/row_count": total,
        "inbox": str(inbox),
        "inbox_new": loaded.inserted if loaded else 0,
        "inbox_duplicates": loaded.duplicates if loaded else 0,
        "inbox_rejected": len(loaded.rejections) if loaded else 0,
        "seconds": round(time.perf_counter() - started, 3),
        "by_memory_and_kind": markdown_table(summary),
        "preview": markdown_table(preview),
    }
    if loaded and loaded.rejections:
        metadata["rejections"] = dg.MetadataValue.md("\n".join(f"- `{r}`" for r in loaded.rejections[:50]))
    return dg.MaterializeResult(metadata=metadata)


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
    day = _day(context)
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
    day = _day(context)
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
    group_name="maintenance",
    kinds={"postgres", "pgvector"},
    pool=EMBEDDING_POOL,
    description=(
        "Everything pending, indexed: runs the canary check, index passes over every ingest day "
        "until nothing is pending (promoting a finished reindex), and refreshes the entity "
        "mentions of memories with unscanned episodes. The nightly schedule materializes it."
    ),
)
def backlog(
    context: dg.AssetExecutionContext, database: DatabaseResource, embedder: EmbedderResource
) -> dg.MaterializeResult:
    from memory_pipeline.storage import entities_store
    from memory_pipeline.storage.profiles_store import get_profile, register_profile

    model = embedder.embedder
    db = database.db
    before = indexing.pending_count(db, model)
    with db.connection() as conn:
        # The canary runs every night, pending work or not: a silent model swap must surface.
        target = register_profile(conn, model.profile).writing()
        cosine = indexing.check_canary(conn, model, target)
    report = indexing.index_until_done(db, model)
    entity_report = entities_store.EntityReport()
    with db.connection() as conn:
        memories = [r[0] for r in conn.execute(
            """SELECT DISTINCT e.memory FROM episodes e
               WHERE NOT EXISTS (SELECT 1 FROM episode_names n WHERE n.episode_id = e.id)""")]
        entities_store.refresh_memories(conn, memories, entity_report)
        stored = get_profile(conn, model.profile)
        by_day = index_store.pending_by_day(conn, stored.writing() if stored else None)
    if report.switched:
        context.log.info(report.switched)
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": sum(by_day.values()),
            "pending_before": before,
            "pending_after": sum(by_day.values()),
            "episodes_indexed": report.episodes,
            "new_vectors": report.vectors,
            "profile": report.profile,
            "canary_cosine": round(cosine, 5) if cosine is not None else "recorded now",
            "switched": report.switched or "no",
            "memories_refreshed_for_entities": len(memories),
            "new_entity_mentions": entity_report.mentions_added,
            "seconds": round(report.seconds, 3),
            "vectors_per_second": round(report.vectors_per_second, 2),
        }
    )


@dg.asset(
    group_name="maintenance",
    deps=[embeddings, backlog],
    kinds={"pgvector"},
    description=(
        "The HNSW index (cosine, halfvec) over the active profile's serving generation. Built "
        "concurrently when missing, invalid, or when the active profile or generation changed; "
        "otherwise reused. Tables are ANALYZEd afterwards so the planner sees current sizes."
    ),
)
def hnsw_index(context: dg.AssetExecutionContext, database: DatabaseResource) -> dg.MaterializeResult:
    from memory_pipeline.storage import health_store

    with database.db.connection() as conn:  # autocommit: CREATE INDEX CONCURRENTLY needs it
        profile = active_profile(conn)
        if profile is None:
            raise dg.Failure("no embedding profile is active yet: materialize embeddings first")
        state = hnsw_store.ensure_index(conn, profile)
        health_store.analyze(conn)
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": state.rows,
            "index": state.name,
            "profile": profile.name,
            "generation": profile.generation,
            "valid": state.valid,
            "size_bytes": state.size_bytes,
            "size": dg.MetadataValue.text(f"{state.size_bytes / 1e6:.2f} MB"),
            "build_seconds": round(state.build_seconds, 3) if state.build_seconds is not None else 0.0,
            "rebuilt": state.build_seconds is not None,
            "m": state.m,
            "ef_construction": state.ef_construction,
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

    day = _day(context)
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


@dg.asset(
    group_name="maintenance",
    deps=[hnsw_index],
    kinds={"postgres"},
    description=(
        "Daily statistics: episodes, chunks, pending, per-kind counts, and the last 24 hours of "
        "search telemetry (searches, latency p50/p95, reranker fallbacks). One row per day in "
        "the pipeline_stats table."
    ),
)
def pipeline_stats(context: dg.AssetExecutionContext, database: DatabaseResource) -> dg.MaterializeResult:
    import datetime as _dt

    from memory_pipeline.storage import health_store

    now = _dt.datetime.now(_dt.timezone.utc)
    with database.db.connection() as conn:
        stats = health_store.daily_stats(conn, now - _dt.timedelta(hours=24))
        profile = active_profile(conn)
        by_day = index_store.pending_by_day(conn, profile.writing() if profile else None)
        stats["pending"] = sum(by_day.values())
        stats["active_profile"] = f"{profile.name} generation {profile.generation}" if profile else None
        health_store.save_daily_stats(conn, now.date(), stats)
    metadata = {k: v for k, v in stats.items() if isinstance(v, (int, float)) and v is not None}
    metadata["episodes_by_kind"] = markdown_table(
        [{"kind": k, "episodes": n} for k, n in stats["episodes_by_kind"].items()]
    )
    metadata["active_profile"] = stats["active_profile"] or "none"
    metadata["dagster/row_count"] = stats["episodes"]
    return dg.MaterializeResult(metadata=metadata)
