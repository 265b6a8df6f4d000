"""Unpartitioned, global work: the backlog, entities, keyword champion lists, statement vectors,
the serving generation, the HNSW index, stats.

These are the steps whose effect is not one day's: switching what search serves and measuring
its model, promoting names that recur across a memory, the index over every vector, statistics.
They run nightly (``nightly_maintenance_job``) and, for the generation switch, the model's
calibration and the HNSW index, when the sensor sees nothing pending and a finished reindex or
search left unready by the day partitions (``switch_generation_job``).
"""

import datetime as dt
import time
from typing import Any

import dagster as dg

from memory_pipeline.errors import MemoryPipelineError
from memory_pipeline.memory import CHAMPIONS, KEYWORD_LIST_CAP, IndexReport, Memory
from memory_pipeline.orchestration import day_metadata, freshness
from memory_pipeline.orchestration.assets import (
    ENTITIES_TABLE,
    PROFILES_TABLE,
    STATEMENT_VECTORS_TABLE,
    STATS_TABLE,
    code_referenced,
    stage_asset,
)
from memory_pipeline.orchestration.instance import add_partitions
from memory_pipeline.orchestration.metadata import markdown_table
from memory_pipeline.orchestration.progress import RunProgress
from memory_pipeline.orchestration.quality_guard import (
    QUALITY_GUARD_SPEC,
    SwitchConfig,
    quality_guard_result,
)
from memory_pipeline.orchestration.reporting import day_materializations
from memory_pipeline.orchestration.resources import MemoryResource
from memory_pipeline.orchestration.settings import index_max_lag_minutes
from memory_pipeline.progress import Progress, figures


@stage_asset("maintenance", kinds={"postgres", "pgvector"}, calls_model=True)
def backlog(context: dg.AssetExecutionContext, memory_api: MemoryResource) -> dg.MaterializeResult:
    """Everything pending, indexed day by day with the partitions' own steps (chunks,
    embeddings, entity mentions of each pending day), each day recorded as a materialization of
    those partitions so the UI's partition status stays true; runs the canary even when nothing
    is pending. The nightly schedule materializes it; the sensor usually leaves it nothing to
    do."""
    mem = memory_api.api
    pending = mem.days.pending()
    if pending:
        add_partitions(context.instance, pending)
    # Global work, once for all the days below. The canary runs every night, even with nothing
    # pending, so that a silent model swap surfaces before the next ingest; the generation's
    # model is measured when it has no calibration yet, before the days, so each day's
    # embeddings record its cut-offs.
    cosine = mem.upkeep.check_canary()
    mem.upkeep.calibrate_after_canary()
    progress = RunProgress(context.log)
    total, mentions = _index_days(context, mem, pending, progress)
    ready = mem.upkeep.leave_search_fast()  # once for every day above (and the canary-only night)
    after = mem.days.pending_count()
    # The days' embeddings were written here: their index_is_current check says so too.
    context.log_event(
        freshness.index_check_evaluation(mem.upkeep.index_lag(), index_max_lag_minutes())
    )
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
            "wall_seconds": round(total.seconds, 3),
            "vectors_per_second": round(total.vectors_per_second, 2),
            **progress.metadata("backlog"),
            **day_metadata.search_ready(ready),
        }
    )


def _index_days(
    context: dg.AssetExecutionContext,
    mem: Memory,
    pending: dict[str, int],
    progress: RunProgress,
) -> tuple[IndexReport, int]:
    """Each pending day indexed with its partitions' own steps and recorded as their
    materializations; what was done, and the entity mentions added."""
    total = IndexReport(profile=mem.embedder.profile.name)
    mentions = 0
    overall = sum(pending.values())
    finished = [0]  # episodes of the days done
    days = sorted(pending)
    for number, day in enumerate(days, 1):

        def tell(p: Progress, number: int = number, day: str = day) -> None:
            # The whole backlog in episodes: the finished days' and this day's so far.
            if p.stage == "index" and p.also:
                progress(
                    Progress(
                        "backlog",
                        finished[0] + p.also[0].done,
                        overall,
                        "episodes",
                        note=f"day {number}/{len(days)} ({day}): " + figures(p),
                    )
                )

        done = mem.days.index(dt.date.fromisoformat(day), on_progress=tell)
        total.add(done.chunked.report)
        total.add(done.embedded.report)
        finished[0] += done.embedded.report.episodes
        mentions += done.linked.report.mentions_added
        # The day's partitions, recorded as their own runs record them.
        by = {"materialized_by": "backlog", "run_id": context.run.run_id}
        for event in day_materializations(
            day,
            {
                "episodes": {**day_metadata.episodes(mem.days.episodes(done.chunked.day)), **by},
                "chunks": {**day_metadata.chunks(done.chunked), **by},
                "embeddings": {**day_metadata.embeddings(done.embedded), **by},
                "entity_mentions": {**day_metadata.entity_mentions(done.linked), **by},
            },
        ):
            context.log_event(event)
    if days:
        progress(Progress("backlog", finished[0], overall, "episodes", finished=True))
    return total, mentions


@stage_asset(
    "maintenance",
    deps=["entity_mentions", "backlog"],
    metadata=ENTITIES_TABLE,
)
def entities(context: dg.AssetExecutionContext, memory_api: MemoryResource) -> dg.MaterializeResult:
    """Entities of every memory: imported ones, plus proper names that recur in at least two
    episodes of a memory (global by nature: it reads every day's names). A name promoted here is
    linked to every episode of its memory that mentions it."""
    promoted = memory_api.api.upkeep.promote_entities()
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": promoted.total,
            "memories": len(promoted.memories),
            "new_entities": promoted.report.promoted,
            "new_mentions": promoted.report.mentions_added,
            "wall_seconds": round(promoted.seconds, 3),
            "top_entities": markdown_table(promoted.top),
        }
    )


@stage_asset(
    "maintenance",
    deps=["backlog"],
    description=(
        "The keyword channel's champion lists, rebuilt for every memory of more than "
        f"{KEYWORD_LIST_CAP} chunks: each common word's {CHAMPIONS} best chunks by "
        "BM25, which a one-word lookup of it reads instead of the word's whole posting list. "
        "Writes keep them right in between; rebuilding re-centres them on the current lengths. "
        "A rebuild reads beside the writers; the memory's chunk writers only wait for its swap "
        "(lock_held_seconds)."
    ),
)
def keyword_champions(
    context: dg.AssetExecutionContext, memory_api: MemoryResource
) -> dg.MaterializeResult:
    started = time.perf_counter()
    builds = memory_api.api.rebuild_keyword_lists()
    for build in builds:
        if build.outcome != "built":
            context.log.warning(
                f"keyword champion lists of {build.memory!r} not rebuilt: {build.outcome}"
            )
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": sum(b.rows for b in builds),
            "memories": len(builds),
            "wall_seconds": round(time.perf_counter() - started, 3),
            "lock_held_seconds": round(sum(b.lock_seconds for b in builds), 3),
            "builds": markdown_table(
                [
                    {
                        "memory": b.memory,
                        "outcome": b.outcome,
                        "rows": b.rows,
                        "lists": b.lists,
                        "wall_seconds": round(b.seconds, 2),
                        "lock_held_s": round(b.lock_seconds, 3),
                        "backlog": b.backlog,
                    }
                    for b in builds[:20]
                ]
            ),
        }
    )


STATEMENTS_CHECK = dg.AssetCheckSpec(
    "every_live_statement_has_a_normalized_vector",
    asset="statement_vectors",
    description="Every active or contested observation and belief has a vector in the generation "
    "search serves, of the profile's dimension and unit length.",
)


@stage_asset(
    "maintenance",
    deps=["backlog"],
    kinds={"postgres", "pgvector"},
    calls_model=True,
    metadata=STATEMENT_VECTORS_TABLE,
    check_specs=[STATEMENTS_CHECK],
)
def statement_vectors(
    context: dg.AssetExecutionContext, memory_api: MemoryResource
) -> dg.MaterializeResult:
    """Vectors of observations and beliefs (`memory-pipeline observe`, `observations import`)
    for the generation being written, with the same model, canary and HNSW index rules as
    chunks. Unpartitioned: a statement belongs to a memory, not to an ingest day (it is saved any
    day and may cite episodes of many). Usually embedded when saved; this picks up those saved
    while the model was down, and a new generation's, before the switch."""
    mem = memory_api.api
    written = mem.upkeep.embed_statements()
    serving, found = mem.upkeep.statement_integrity()
    passed = found is None or not (
        found["missing"] or found["wrong_dimension"] or found["not_normalized"]
    )
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": found["vectors"] if found else 0,
            "new_vectors": written,
            "profile": mem.embedder.profile.name,
        },
        check_results=[
            dg.AssetCheckResult(
                check_name=STATEMENTS_CHECK.name,
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


SERVING_CHECK = dg.AssetCheckSpec(
    "serving_generation_complete_and_normalized",
    asset="serving_generation",
    description="The generation search serves has every vector, of the profile's dimension, "
    "normalized.",
)


@stage_asset(
    "maintenance",
    deps=["embeddings", "backlog", "statement_vectors"],
    calls_model=True,
    metadata=PROFILES_TABLE,
    check_specs=[SERVING_CHECK, QUALITY_GUARD_SPEC],
)
def serving_generation(
    context: dg.AssetExecutionContext, memory_api: MemoryResource, config: SwitchConfig
) -> dg.MaterializeResult:
    """Which embedding profile and generation search serves. A new generation (a reindex, a
    changed model) is switched to here, and only here, once nothing at all is pending for it;
    until then search keeps serving the previous one. The generation's model is measured here
    once (its similarity cut-offs) when no writer has measured it yet."""
    mem = memory_api.api
    guard = mem.switch_guard(accept_worse=config.accept_worse)
    pending, switched = mem.upkeep.switch_generation(guard=guard.allows)
    if switched:
        context.log.info(switched)
    try:
        measured = mem.upkeep.calibrate()
    except MemoryPipelineError as exc:  # the switch stands; the next run measures it
        context.log.warning(f"the model's calibration was not measured: {exc}")
        measured = None
    profile, found = mem.upkeep.serving_integrity()
    passed = (
        found is not None
        and found["missing"] == 0
        and found["wrong_dimension"] == 0
        and found["not_normalized"] == 0
    )
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": found["vectors"] if found else 0,
            "profile": profile.name if profile else "none",
            "generation": profile.generation if profile else 0,
            "configured_profile": mem.embedder.profile.name,
            "pending_for_configured": pending,
            "switched": switched or "no",
            "calibration": dg.MetadataValue.json(measured.to_json() if measured else {}),
        },
        check_results=[
            dg.AssetCheckResult(
                check_name=SERVING_CHECK.name,
                passed=passed,
                metadata={**(found or {}), "profile": profile.name if profile else "none"},
                description=None
                if passed
                else (
                    "no active embedding profile yet"
                    if not found
                    else "missing, mis-sized or non-unit vectors in the serving generation"
                ),
            ),
            quality_guard_result(guard.verdict),
        ],
    )


@stage_asset("maintenance", deps=["serving_generation"], kinds={"pgvector"})
def hnsw_index(
    context: dg.AssetExecutionContext, memory_api: MemoryResource
) -> dg.MaterializeResult:
    """The HNSW index (cosine, halfvec) over the active profile's serving generation. Built
    concurrently when missing, invalid, or when the active profile or generation changed;
    otherwise reused. Tables are ANALYZEd afterwards so the planner sees current sizes."""
    try:
        profile, state = memory_api.api.upkeep.ensure_hnsw_index()
    except LookupError as exc:
        raise dg.Failure(str(exc)) from None
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


@stage_asset("maintenance", deps=["hnsw_index"], metadata=STATS_TABLE)
def pipeline_stats(
    context: dg.AssetExecutionContext, memory_api: MemoryResource
) -> dg.MaterializeResult:
    """Daily statistics: episodes, chunks, pending, per-kind counts, and the last 24 hours of
    search telemetry (searches, latency p50/p95 in ms, reranker fallbacks). One row per day in
    the pipeline_stats table."""
    # Pending for the configured profile, as the sensor and the index passes count it.
    stats = memory_api.api.upkeep.daily_stats()
    metadata: dict[str, Any] = {
        k: v for k, v in stats.items() if isinstance(v, (int, float)) and v is not None
    }
    metadata["episodes_by_kind"] = markdown_table(
        [{"kind": k, "episodes": n} for k, n in stats["episodes_by_kind"].items()]
    )
    metadata["active_profile"] = stats["active_profile"] or "none"
    metadata["dagster/row_count"] = stats["episodes"]
    return dg.MaterializeResult(metadata=metadata)


@dg.definitions
def defs() -> dg.Definitions:
    return code_referenced(
        [
            backlog,
            entities,
            keyword_champions,
            statement_vectors,
            serving_generation,
            hnsw_index,
            pipeline_stats,
        ]
    )
