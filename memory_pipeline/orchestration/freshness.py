"""The index's freshness in Dagster: the ``index_is_current`` check of the ``embeddings`` asset.

Search reads the vectors of the serving generation; an episode that was ingested but is still
pending is not found by meaning. Dagster's ``FreshnessPolicy`` cannot say so: it measures the time
since an asset's last materialization (a quiet memory, fully indexed, would fail it) and only the
daemon evaluates it. So the index's freshness is this check, evaluated from what is pending and
recorded by whoever changed it: ``memory-pipeline ingest`` and ``index`` (and the servers) through
``DagsterReporter.index_lag``, the ``embeddings`` asset with its materialization. With the daemon
stopped, the asset graph still shows the index behind right after an ingest, and current again
after ``index``.

Passed: nothing is pending. Failed with WARN: episodes are pending, the oldest for less than
``MEMORY_PIPELINE_INDEX_MAX_LAG_MINUTES`` (60); failed with ERROR: for longer.
"""

from __future__ import annotations

import datetime as dt

import dagster as dg

from memory_pipeline.indexing.pending import IndexLag

ASSET = "embeddings"
CHECK = "index_is_current"

SPEC = dg.AssetCheckSpec(
    CHECK,
    asset=ASSET,
    description="Every ingested episode is indexed: failed (WARN) while episodes are pending, "
    "ERROR once the oldest has waited longer than MEMORY_PIPELINE_INDEX_MAX_LAG_MINUTES (60).",
)


def _outcome(lag: IndexLag, max_lag_minutes: float, now: dt.datetime) -> dict:
    """The check's fields (passed, severity, description, metadata) for ``lag`` at ``now``."""
    if lag.oldest_ingested_at is None or lag.episodes == 0:
        return {
            "passed": True,
            "severity": dg.AssetCheckSeverity.WARN,
            "description": "every ingested episode is indexed",
            "metadata": {
                "pending_episodes": 0,
                "behind_minutes": 0.0,
                "window_minutes": max_lag_minutes,
            },
        }
    behind = max(0.0, (now - lag.oldest_ingested_at).total_seconds() / 60)
    since = lag.oldest_ingested_at.astimezone(dt.UTC)
    late = behind >= max_lag_minutes
    return {
        "passed": False,
        "severity": dg.AssetCheckSeverity.ERROR if late else dg.AssetCheckSeverity.WARN,
        "description": (
            f"{lag.episodes} episode{'s' if lag.episodes != 1 else ''} pending since "
            f"{since:%Y-%m-%d %H:%M} UTC: the index is {behind:.0f} minutes behind ingest "
            f"({'beyond' if late else 'within'} the {max_lag_minutes:g}-minute window)"
        ),
        "metadata": {
            "pending_episodes": lag.episodes,
            "behind_minutes": round(behind, 1),
            "window_minutes": max_lag_minutes,
            "oldest_pending_ingested_at": since.isoformat(),
        },
    }


def index_check_result(lag: IndexLag, max_lag_minutes: float) -> dg.AssetCheckResult:
    """As the ``embeddings`` asset returns it with its materialization."""
    return dg.AssetCheckResult(
        check_name=CHECK, **_outcome(lag, max_lag_minutes, dt.datetime.now(dt.UTC))
    )


def index_check_evaluation(lag: IndexLag, max_lag_minutes: float) -> dg.AssetCheckEvaluation:
    """As work outside a run (the CLI, the servers) reports it to the instance."""
    return dg.AssetCheckEvaluation(
        asset_key=dg.AssetKey(ASSET),
        check_name=CHECK,
        **_outcome(lag, max_lag_minutes, dt.datetime.now(dt.UTC)),
    )
