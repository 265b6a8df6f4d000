"""Sensors and the nightly schedule, built when the code location loads (their interval and cron
are part of their definitions, so they are read then, never at import)."""

import dagster as dg

from memory_pipeline.defs.schedules import build_schedules
from memory_pipeline.defs.sensors import build_sensors
from memory_pipeline.orchestration.settings import OpsSettings


@dg.definitions
def automation() -> dg.Definitions:
    ops = OpsSettings.from_env()
    return dg.Definitions(
        sensors=build_sensors(ops.sensor_interval_s),
        schedules=build_schedules(ops.nightly_cron, ops.nightly_timezone),
    )
