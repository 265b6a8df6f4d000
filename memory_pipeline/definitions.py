"""The Dagster entry point (``workspace.yaml`` and ``pyproject.toml`` point here)."""

import dagster as dg

from memory_pipeline.defs import assets, checks, jobs, model_changes, search
from memory_pipeline.defs.resources import default_resources
from memory_pipeline.defs.schedules import build_schedules
from memory_pipeline.defs.sensors import build_sensors
from memory_pipeline.defs.settings import OpsSettings

_ops = OpsSettings.from_env()

defs = dg.Definitions(
    assets=dg.load_assets_from_modules([assets]),
    asset_checks=dg.load_asset_checks_from_modules([checks]),
    jobs=[
        jobs.index_day_job,
        jobs.build_hnsw_index_job,
        jobs.nightly_maintenance_job,
        search.search_memory_job,
        model_changes.start_reindex_job,
        model_changes.rollback_generation_job,
    ],
    sensors=build_sensors(_ops.sensor_interval_s),
    schedules=build_schedules(_ops.nightly_cron, _ops.nightly_timezone),
    resources=default_resources(),
)
