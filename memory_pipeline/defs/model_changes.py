"""Model changes from the UI: start (or resume) a reindex, or roll back, as Launchpad jobs."""

import dagster as dg

from memory_pipeline.orchestration.resources import MemoryResource


@dg.op(
    description="Start (or resume) a new generation of the configured embedding profile. The "
    "unindexed_episodes_sensor (or a backfill of index_day_job) then builds it; once nothing is "
    "pending for it, switch_generation_job (requested by the sensor) makes search serve it."
)
def start_reindex_op(context: dg.OpExecutionContext, memory_api: MemoryResource) -> dict:
    stored, resumed = memory_api.api.models.start_reindex()
    verb = "resumed" if resumed else "started"
    context.log.info(f"{verb} generation {stored.building_generation} of {stored.name}")
    context.add_output_metadata(
        {
            "profile": stored.name,
            "building_generation": stored.building_generation,
            "serving_generation": stored.generation,
            "resumed": resumed,
        }
    )
    return {"profile": stored.name, "generation": stored.building_generation, "resumed": resumed}


@dg.op(
    description="Serve the previous generation of the active profile again (its vectors were kept)."
)
def rollback_generation_op(context: dg.OpExecutionContext, memory_api: MemoryResource) -> str:
    try:
        message = memory_api.api.models.rollback()
    except LookupError as exc:
        raise dg.Failure(description=str(exc), allow_retries=False) from None
    context.log.info(message)
    context.add_output_metadata({"result": message})
    return message


@dg.job(
    description="Re-embed everything as a new generation while search keeps serving the current one.",
    executor_def=dg.in_process_executor,
)
def start_reindex_job():
    start_reindex_op()


@dg.job(
    description="Roll search back to the previous generation of the active profile.",
    executor_def=dg.in_process_executor,
)
def rollback_generation_job():
    rollback_generation_op()
