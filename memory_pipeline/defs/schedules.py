"""The nightly schedule: nightly_maintenance_job (index everything pending, canary, keyword
lists, statement vectors, the serving generation, HNSW maintenance, ANALYZE, stats)."""

import dagster as dg

from memory_pipeline.defs import jobs


def build_schedules(cron: str, timezone: str) -> list[dg.ScheduleDefinition]:
    return [
        dg.ScheduleDefinition(
            name="nightly_maintenance_schedule",
            job=jobs.nightly_maintenance_job,
            cron_schedule=cron,
            execution_timezone=timezone,
            default_status=dg.DefaultScheduleStatus.RUNNING,
            description=(
                f"Every night at '{cron}' ({timezone}): {jobs.nightly_maintenance_job.name}, "
                f"{' -> '.join(jobs.NIGHTLY_ASSETS)}, with their checks."
            ),
        )
    ]
