"""Operational settings that are part of definitions: the sensors' interval, the nightly cron.

Dagster needs these when it builds the definitions, so ``defs/automation.py`` reads them inside
its ``@dg.definitions`` function, when the code location loads: never when a module is
imported. Every other setting is read by the resources when a run starts.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import dagster as dg

from memory_pipeline.config import env_float, env_int
from memory_pipeline.errors import ConfigurationError


@dataclass(frozen=True)
class OpsSettings:
    sensor_interval_s: int = 30
    nightly_cron: str = "0 3 * * *"
    nightly_timezone: str = "UTC"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> OpsSettings:
        environ = os.environ if environ is None else environ
        interval = env_int(
            environ, "MEMORY_PIPELINE_SENSOR_INTERVAL", cls.sensor_interval_s, maximum=86400
        )
        cron = environ.get("MEMORY_PIPELINE_NIGHTLY_CRON", "").strip() or cls.nightly_cron
        try:  # Dagster's own validation, through its public API
            dg.ScheduleDefinition(name="cron_probe", job_name="cron_probe", cron_schedule=cron)
        except dg.DagsterInvalidDefinitionError:
            raise ConfigurationError(
                f"MEMORY_PIPELINE_NIGHTLY_CRON={cron!r}: not a cron expression (e.g. '0 3 * * *')"
            ) from None
        tz = environ.get("MEMORY_PIPELINE_NIGHTLY_TIMEZONE", "").strip() or cls.nightly_timezone
        try:
            ZoneInfo(tz)
        except (ZoneInfoNotFoundError, ValueError):
            raise ConfigurationError(
                f"MEMORY_PIPELINE_NIGHTLY_TIMEZONE={tz!r}: not a time zone (e.g. Europe/Lisbon)"
            ) from None
        return cls(interval, cron, tz)


def backlog_max_age_hours(environ: Mapping[str, str] | None = None) -> float:
    environ = os.environ if environ is None else environ
    return env_float(environ, "MEMORY_PIPELINE_BACKLOG_MAX_AGE_HOURS", 24.0, unit="hours")


def index_max_lag_minutes(environ: Mapping[str, str] | None = None) -> float:
    """How long the index may stay behind an ingest before its ``index_is_current`` check fails
    as an error rather than a warning (``orchestration.freshness``)."""
    environ = os.environ if environ is None else environ
    return env_float(environ, "MEMORY_PIPELINE_INDEX_MAX_LAG_MINUTES", 60.0, unit="minutes")
