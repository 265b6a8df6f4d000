"""Unpartitioned upkeep, run nightly: the backlog, the HNSW index, daily statistics."""


import dagster as dg

from memory_pipeline import indexing
from memory_pipeline.defs.assets._common import EMBEDDING_POOL
from memory_pipeline.defs.metadata import markdown_table
from memory_pipeline.resources import DatabaseResource, EmbedderResource
from memory_pipeline.storage import hnsw_store, index_store
from memory_pipeline.embedders.factory import profile_of
from memory_pipeline.storage.profiles_store import active_profile, writing_target
from memory_pipeline.defs.assets.index import embeddings


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
    from memory_pipeline.storage.profiles_store import register_profile

    model = embedder.embedder
    db = database.db
    before = indexing.pending_count(db, model)
    report = indexing.index_until_done(db, model)  # each pass with work checks the canary first
    cosine = report.canary_cosine
    if not report.canary_checked:
        # Nothing was pending: the canary runs every night all the same, so that a silent model
        # swap surfaces before the next ingest.
        with db.connection() as conn:
            cosine = indexing.check_canary(conn, model, register_profile(conn, model.profile).writing())
    entity_report = entities_store.EntityReport()
    with db.connection() as conn:
        memories = [r[0] for r in conn.execute(
            """SELECT DISTINCT e.memory FROM episodes e
               WHERE NOT EXISTS (SELECT 1 FROM episode_names n WHERE n.episode_id = e.id)""")]
        entities_store.refresh_memories(conn, memories, entity_report)
    if report.switched:
        context.log.info(report.switched)
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": report.pending_after,
            "pending_before": before,
            "pending_after": report.pending_after,
            "episodes_indexed": report.episodes,
            "new_vectors": report.vectors,
            "new_window_vectors": report.windows,
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
    group_name="maintenance",
    deps=[hnsw_index],
    kinds={"postgres"},
    description=(
        "Daily statistics: episodes, chunks, pending, per-kind counts, and the last 24 hours of "
        "search telemetry (searches, latency p50/p95, reranker fallbacks). One row per day in "
        "the pipeline_stats table."
    ),
)
def pipeline_stats(
    context: dg.AssetExecutionContext, database: DatabaseResource, embedder: EmbedderResource
) -> dg.MaterializeResult:
    import datetime as _dt

    from memory_pipeline.storage import health_store

    now = _dt.datetime.now(_dt.timezone.utc)
    with database.db.connection() as conn:
        stats = health_store.daily_stats(conn, now - _dt.timedelta(hours=24))
        profile = active_profile(conn)
        # Pending for the configured profile, as the sensor and the index passes count it.
        target = writing_target(conn, profile_of(embedder.settings()))
        stats["pending"] = sum(index_store.pending_by_day(conn, target).values())
        stats["active_profile"] = f"{profile.name} generation {profile.generation}" if profile else None
        health_store.save_daily_stats(conn, now.date(), stats)
    metadata = {k: v for k, v in stats.items() if isinstance(v, (int, float)) and v is not None}
    metadata["episodes_by_kind"] = markdown_table(
        [{"kind": k, "episodes": n} for k, n in stats["episodes_by_kind"].items()]
    )
    metadata["active_profile"] = stats["active_profile"] or "none"
    metadata["dagster/row_count"] = stats["episodes"]
    return dg.MaterializeResult(metadata=metadata)
