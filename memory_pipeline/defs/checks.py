"""Asset checks of the global assets that are not returned with their materialization: index
recall (slow: 50 exact searches) and backlog age. The per-day checks come with each partition
(``assets/index.py``), the serving generation's with ``serving_generation``."""

import datetime as dt

import dagster as dg

from memory_pipeline.orchestration.resources import MemoryResource
from memory_pipeline.orchestration.settings import backlog_max_age_hours

MIN_INDEX_RECALL = 0.95


@dg.asset_check(
    asset="hnsw_index",
    description=f"Recall@10 of the HNSW index against exact search is at least {MIN_INDEX_RECALL}.",
)
def hnsw_index_recall(memory_api: MemoryResource) -> dg.AssetCheckResult:
    recall = memory_api.api.upkeep.index_recall()
    if recall is None:
        return dg.AssetCheckResult(passed=True, description="no vectors to measure yet")
    return dg.AssetCheckResult(
        passed=recall >= MIN_INDEX_RECALL,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "recall_at_10": round(recall, 4),
            "threshold": MIN_INDEX_RECALL,
            "sample_queries": 50,
        },
    )


@dg.asset_check(
    asset="backlog",
    description="The oldest pending episode is younger than MEMORY_PIPELINE_BACKLOG_MAX_AGE_HOURS (24 h).",
)
def backlog_is_fresh(memory_api: MemoryResource) -> dg.AssetCheckResult:
    limit_h = backlog_max_age_hours()
    # Pending for the configured profile, as the sensor and the index passes count it.
    oldest = memory_api.api.upkeep.oldest_pending()
    if oldest is None:
        return dg.AssetCheckResult(
            passed=True, metadata={"oldest_pending_hours": 0.0, "limit_hours": limit_h}
        )
    age_h = (dt.datetime.now(dt.UTC) - oldest).total_seconds() / 3600
    return dg.AssetCheckResult(
        passed=age_h < limit_h,
        metadata={
            "oldest_pending_hours": round(age_h, 2),
            "limit_hours": limit_h,
            "oldest_pending_ingested_at": oldest.isoformat(),
        },
    )
