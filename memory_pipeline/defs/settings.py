"""Operational settings that Dagster needs when it loads the definitions.

A sensor's interval and a schedule's cron string are part of their definitions, so these few
values are read when ``memory_pipeline.definitions`` is loaded (by the code server), unlike
every other setting, which resources read when a run starts.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from dagster._utils.schedules import is_valid_cron_string

from memory_pipeline.config import env_float, env_int
from memory_pipeline.errors import ConfigurationError


@dataclass(frozen=True)
class OpsSettings:
    sensor_interval_s: int = 30
    nightly_cron: str = "0 3 * * *"
    nightly_timezone: str = "UTC"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> "OpsSettings":
        environ = os.environ if environ is None else environ
        interval = env_int(environ, "MEMORY_PIPELINE_SENSOR_INTERVAL", cls.sensor_interval_s, maximum=86400)
        cron = environ.get("MEMORY_PIPELINE_NIGHTLY_CRON", "").strip() or cls.nightly_cron
        if not is_valid_cron_string(cron):
            raise ConfigurationError(f"MEMORY_PIPELINE_NIGHTLY_CRON={cron!r}: not a cron expression (e.g. '0 3 * * *')")
        tz = environ.get("MEMORY_PIPELINE_NIGHTLY_TIMEZONE", "").strip() or cls.nightly_timezone
        try:
            ZoneInfo(tz)
        except (ZoneInfoNotFoundError, ValueError):
            raise ConfigurationError(f"MEMORY_PIPELINE_NIGHTLY_TIMEZONE={tz!r}: not a time zone (e.g. Europe/Lisbon)") from None
        return cls(interval, cron, tz)


def backlog_max_age_hours(environ: Mapping[str, str] | None = None) -> float:
    environ = os.environ if environ is None else environ
    return env_float(environ, "MEMORY_PIPELINE_BACKLOG_MAX_AGE_HOURS", 24.0, unit="hours")
