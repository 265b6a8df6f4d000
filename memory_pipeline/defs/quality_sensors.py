"""Scoring after an index run: ``retrieval_quality_sensor`` requests ``score_retrieval_quality_job``
once nothing is pending and a memory with labelled questions got episodes (or questions) since
the last ``retrieval_quality`` materialization, whichever path indexed them (the sensor's day
runs, ``memory-pipeline index``, the HTTP API)."""

import datetime as dt

import dagster as dg

from memory_pipeline.orchestration.resources import MemoryResource

score_retrieval_quality_job = dg.define_asset_job(
    "score_retrieval_quality_job",
    selection=dg.AssetSelection.assets("retrieval_quality"),
    executor_def=dg.in_process_executor,
    description="Score each memory's labelled questions (retrieval_quality), with its check.",
)


@dg.sensor(
    name="retrieval_quality_sensor",
    job=score_retrieval_quality_job,
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="After an index run that changed a memory with labelled questions (nothing "
    "pending, episodes or questions newer than the last retrieval_quality), requests "
    "score_retrieval_quality_job.",
)
def retrieval_quality_sensor(context: dg.SensorEvaluationContext, memory_api: MemoryResource):
    last = context.instance.get_latest_materialization_event(dg.AssetKey("retrieval_quality"))
    since = None if last is None else dt.datetime.fromtimestamp(last.timestamp, dt.UTC)
    mem = memory_api.api
    if mem.upkeep.outlook().pending:
        return dg.SkipReason("episodes are pending: scored once the index run is done")
    changed = mem.questions_changed_since(since)
    if not changed:
        return dg.SkipReason("no memory with labelled questions changed since the last scoring")
    return dg.RunRequest(
        # One request per scoring: the key stays until a new materialization moves ``since``.
        run_key=f"quality:{since.isoformat() if since else 'never'}",
        tags={"memory_pipeline/trigger": "retrieval_quality_sensor"},
    )
