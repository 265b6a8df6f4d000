"""Unpartitioned, global work: the backlog, entities, keyword champion lists, statement vectors,
the serving generation, the HNSW index, stats.

These are the steps whose effect is not one day's: switching what search serves, promoting
names that recur across a memory, the index over every vector, statistics. They run nightly
(``nightly_maintenance_job``) and, for the generation switch, when the sensor sees a finished
reindex (``switch_generation_job``).
"""

import datetime as dt
import time

import dagster as dg

from memory_pipeline import calibration as model_calibration
from memory_pipeline import indexing, observations
from memory_pipeline.defs.assets._common import (
    EMBEDDING_POOL,
    ENTITIES_TABLE,
    OWNERS,
    PROFILES_TABLE,
    STATEMENT_VECTORS_TABLE,
    STATS_TABLE,
)
from memory_pipeline.defs.assets.index import chunks, embeddings, entity_mentions
from memory_pipeline.defs.assets.ingest import episodes
from memory_pipeline.defs.metadata import markdown_table
from memory_pipeline.defs.partitions import ingest_days
from memory_pipeline.resources import MemoryResource
from memory_pipeline.storage import (
    entities_store,
    health_store,
    hnsw_store,
    index_store,
    keyword_store,
    observations_store,
    partition_store,
)
from memory_pipeline.storage.profiles_store import active_profile, register_profile, writing_target


@dg.asset(
    group_name="maintenance",
    kinds={"postgres", "pgvector"},
    owners=OWNERS,
    tags={"stage": "maintenance", "calls": "embedding-model"},
    pool=EMBEDDING_POOL,
    description=(
        "Everything pending, indexed day by day with the partitions' own steps (chunks, "
        "embeddings, entity mentions of each pending day), each day recorded as a materialization "
        "of those partitions so the UI's partition status stays true; runs the canary even when "
        "nothing is pending. The nightly schedule materializes it; the sensor usually leaves it "
        "nothing to do."
    ),
)
def backlog(context: dg.AssetExecutionContext, memory: MemoryResource) -> dg.MaterializeResult:
    model = memory.embedder
    db = memory.db
    pending = indexing.pending_by_day(db, model)
    if pending:
        context.instance.add_dynamic_partitions(ingest_days.name, sorted(pending))
    total = indexing.IndexReport(profile=model.profile.name)
    mentions = 0
    for day in sorted(pending):
        date = dt.date.fromisoformat(day)
        chunked = indexing.chunk_pending(db, day=date, anchors=model.heading_anchors)
        embedded = indexing.embed_day(db, model, date)
        total.add(chunked)
        total.add(embedded)
        if embedded.canary_checked and not total.canary_checked:
            total.canary_checked, total.canary_cosine = True, embedded.canary_cosine
            model_calibration.after_index(db, model, True)  # once per generation
        entity_report = entities_store.EntityReport()
        with db.connection() as conn:
            entities_store.refresh_day(conn, date, entity_report)
        mentions += entity_report.mentions_added
        for asset, row_meta in (
            (episodes, {}),
            (chunks, {"new_chunks": chunked.chunks}),
            (embeddings, {"new_vectors": embedded.vectors, "profile": embedded.profile}),
            (entity_mentions, {"new_mentions": entity_report.mentions_added}),
        ):
            context.log_event(
                dg.AssetMaterialization(
                    asset_key=asset.key,
                    partition=day,
                    metadata={
                        **row_meta,
                        "materialized_by": "backlog",
                        "run_id": context.run.run_id,
                    },
                )
            )
    cosine = total.canary_cosine
    if not total.canary_checked:
        # Nothing was pending: the canary runs every night all the same, so that a silent model
        # swap surfaces before the next ingest.
        with db.connection() as conn:
            cosine = indexing.check_canary(
                conn, model, register_profile(conn, model.profile).writing()
            )
    after = indexing.pending_count(db, model)
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": after,
            "pending_before": sum(pending.values()),
            "pending_after": after,
            "days_indexed": len(pending),
            "episodes_indexed": total.episodes,
            "new_vectors": total.vectors,
            "new_window_vectors": total.windows,
            "new_entity_mentions": mentions,
            "profile": total.profile,
            "canary_cosine": round(cosine, 5) if cosine is not None else "recorded now",
            "seconds": round(total.seconds, 3),
            "vectors_per_second": round(total.vectors_per_second, 2),
        }
    )


@dg.asset(
    group_name="maintenance",
    deps=[entity_mentions, backlog],
    kinds={"postgres"},
    owners=OWNERS,
    tags={"stage": "maintenance"},
    metadata=ENTITIES_TABLE,
    description=(
        "Entities of every memory: imported ones, plus proper names that recur in at least two "
        "episodes of a memory (global by nature: it reads every day's names). A name promoted "
        "here is linked to every episode of its memory that mentions it."
    ),
)
def entities(context: dg.AssetExecutionContext, memory: MemoryResource) -> dg.MaterializeResult:
    started = time.perf_counter()
    report = entities_store.EntityReport()
    with memory.db.connection() as conn:
        memories = entities_store.promote_memories(conn, report)
        entities_store.compact_mention_counts(conn)
        total = entities_store.count_entities(conn)
        top = entities_store.top_entities(conn, memories)
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": total,
            "memories": len(memories),
            "new_entities": report.promoted,
            "new_mentions": report.mentions_added,
            "seconds": round(time.perf_counter() - started, 3),
            "top_entities": markdown_table(top),
        }
    )


@dg.asset(
    group_name="maintenance",
    deps=[backlog],
    kinds={"postgres"},
    owners=OWNERS,
    tags={"stage": "maintenance"},
    description=(
        "The keyword channel's champion lists, rebuilt for every memory of more than "
        f"{keyword_store.CAP} chunks: each common word's {keyword_store.CHAMPIONS} best chunks by "
        "BM25, which a one-word lookup of it reads instead of the word's whole posting list. "
        "Writes keep them right in between; rebuilding re-centres them on the current lengths. "
        "A rebuild reads beside the writers; the memory's chunk writers only wait for its swap "
        "(lock_held_seconds)."
    ),
)
def keyword_champions(
    context: dg.AssetExecutionContext, memory: MemoryResource
) -> dg.MaterializeResult:
    started = time.perf_counter()
    with memory.db.connection() as conn:
        builds = keyword_store.refresh_all_champions(conn)
    for build in builds:
        if build.outcome != "built":
            context.log.warning(
                f"keyword champion lists of {build.memory!r} not rebuilt: {build.outcome}"
            )
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": sum(b.rows for b in builds),
            "memories": len(builds),
            "seconds": round(time.perf_counter() - started, 3),
            "lock_held_seconds": round(sum(b.lock_seconds for b in builds), 3),
            "builds": markdown_table(
                [
                    {
                        "memory": b.memory,
                        "outcome": b.outcome,
                        "rows": b.rows,
                        "lists": b.lists,
                        "seconds": round(b.seconds, 2),
                        "lock_held_s": round(b.lock_seconds, 3),
                        "backlog": b.backlog,
                    }
                    for b in builds[:20]
                ]
            ),
        }
    )


@dg.asset(
    group_name="maintenance",
    deps=[backlog],
    kinds={"postgres", "pgvector"},
    owners=OWNERS,
    tags={"stage": "maintenance", "calls": "embedding-model"},
    metadata=STATEMENT_VECTORS_TABLE,
    pool=EMBEDDING_POOL,
    check_specs=[
        dg.AssetCheckSpec(
            "every_live_statement_has_a_normalized_vector",
            asset="statement_vectors",
            description="Every active or contested observation and belief has a vector in the generation "
            "search serves, of the profile's dimension and unit length.",
        )
    ],
    description=(
        "Vectors of observations and beliefs (`memory-pipeline observe`, `observations import`) "
        "for the generation being written, with the same model, canary and HNSW index rules as "
        "chunks. Unpartitioned: a statement belongs to a memory, not to an ingest day (it is "
        "saved any day and may cite episodes of many). Usually embedded when saved; this picks "
        "up those saved while the model was down, and a new generation's, before the switch."
    ),
)
def statement_vectors(
    context: dg.AssetExecutionContext, memory: MemoryResource
) -> dg.MaterializeResult:
    model = memory.embedder
    written = observations.embed_pending(memory.db, model)
    with memory.db.connection() as conn:
        serving = active_profile(conn)
        found = observations_store.vector_integrity(conn, serving) if serving else None
    passed = found is None or not (
        found["missing"] or found["wrong_dimension"] or found["not_normalized"]
    )
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": found["vectors"] if found else 0,
            "new_vectors": written,
            "profile": model.profile.name,
        },
        check_results=[
            dg.AssetCheckResult(
                check_name="every_live_statement_has_a_normalized_vector",
                passed=passed,
                metadata={
                    **(found or {}),
                    "serving": f"{serving.name} generation {serving.generation}"
                    if serving
                    else "none",
                },
                description=None
                if passed
                else "live statements without a vector, or mis-sized or non-unit vectors",
            )
        ],
    )


@dg.asset(
    group_name="maintenance",
    deps=[embeddings, backlog, statement_vectors],
    kinds={"postgres"},
    owners=OWNERS,
    tags={"stage": "maintenance"},
    metadata=PROFILES_TABLE,
    check_specs=[
        dg.AssetCheckSpec(
            "serving_generation_complete_and_normalized",
            asset="serving_generation",
            description="The generation search serves has every vector, of the profile's dimension, normalized.",
        )
    ],
    description=(
        "Which embedding profile and generation search serves. A new generation (a reindex, a "
        "changed model) is switched to here, and only here, once nothing at all is pending for it; "
        "until then search keeps serving the previous one."
    ),
)
def serving_generation(
    context: dg.AssetExecutionContext, memory: MemoryResource
) -> dg.MaterializeResult:
    model = memory.embedder
    db = memory.db
    pending = indexing.pending_count(db, model)
    switched = indexing.promote_when_complete(db, model, pending=pending)
    if switched:
        context.log.info(switched)
    with db.connection() as conn:
        profile = active_profile(conn)
        found = health_store.vector_integrity(conn, profile) if profile else None
    passed = (
        bool(found)
        and found["missing"] == 0
        and found["wrong_dimension"] == 0
        and found["not_normalized"] == 0
    )
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": found["vectors"] if found else 0,
            "profile": profile.name if profile else "none",
            "generation": profile.generation if profile else 0,
            "configured_profile": model.profile.name,
            "pending_for_configured": pending,
            "switched": switched or "no",
        },
        check_results=[
            dg.AssetCheckResult(
                check_name="serving_generation_complete_and_normalized",
                passed=passed,
                metadata={**(found or {}), "profile": profile.name if profile else "none"},
                description=None
                if passed
                else (
                    "no active embedding profile yet"
                    if not found
                    else "missing, mis-sized or non-unit vectors in the serving generation"
                ),
            )
        ],
    )


@dg.asset(
    group_name="maintenance",
    deps=[serving_generation],
    kinds={"pgvector"},
    owners=OWNERS,
    tags={"stage": "maintenance"},
    description=(
        "The HNSW index (cosine, halfvec) over the active profile's serving generation. Built "
        "concurrently when missing, invalid, or when the active profile or generation changed; "
        "otherwise reused. Tables are ANALYZEd afterwards so the planner sees current sizes."
    ),
)
def hnsw_index(context: dg.AssetExecutionContext, memory: MemoryResource) -> dg.MaterializeResult:
    with memory.db.connection() as conn:  # autocommit: CREATE INDEX CONCURRENTLY needs it
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
            "build_seconds": round(state.build_seconds, 3)
            if state.build_seconds is not None
            else 0.0,
            "rebuilt": state.build_seconds is not None,
            "m": state.m,
            "ef_construction": state.ef_construction,
        }
    )


@dg.asset(
    group_name="maintenance",
    deps=[hnsw_index],
    kinds={"postgres"},
    owners=OWNERS,
    tags={"stage": "maintenance"},
    metadata=STATS_TABLE,
    description=(
        "Daily statistics: episodes, chunks, pending, per-kind counts, and the last 24 hours of "
        "search telemetry (searches, latency p50/p95 in ms, reranker fallbacks). One row per day "
        "in the pipeline_stats table."
    ),
)
def pipeline_stats(
    context: dg.AssetExecutionContext, memory: MemoryResource
) -> dg.MaterializeResult:
    now = dt.datetime.now(dt.UTC)
    with memory.db.connection() as conn:
        stats = health_store.daily_stats(conn, now - dt.timedelta(hours=24))
        profile = active_profile(conn)
        # Pending for the configured profile, as the sensor and the index passes count it.
        target = writing_target(conn, memory.profile)
        stats["pending"] = sum(index_store.pending_by_day(conn, target).values())
        stats["active_profile"] = (
            f"{profile.name} generation {profile.generation}" if profile else None
        )
        stats["days_with_episodes"] = len(partition_store.days_with_episodes(conn))
        health_store.save_daily_stats(conn, now.date(), stats)
    metadata = {k: v for k, v in stats.items() if isinstance(v, (int, float)) and v is not None}
    metadata["episodes_by_kind"] = markdown_table(
        [{"kind": k, "episodes": n} for k, n in stats["episodes_by_kind"].items()]
    )
    metadata["active_profile"] = stats["active_profile"] or "none"
    metadata["dagster/row_count"] = stats["episodes"]
    return dg.MaterializeResult(metadata=metadata)
