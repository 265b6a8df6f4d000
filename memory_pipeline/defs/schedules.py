"""The nightly schedule: index everything pending, canary, HNSW maintenance, ANALYZE, stats."""

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
            description=f"Every night at '{cron}' ({timezone}): backlog -> hnsw_index -> pipeline_stats, with their checks.",
        )
    ]
