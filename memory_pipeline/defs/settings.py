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

from memory_pipeline.errors import ConfigurationError


@dataclass(frozen=True)
class OpsSettings:
    sensor_interval_s: int = 30
    nightly_cron: str = "0 3 * * *"
    nightly_timezone: str = "UTC"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> "OpsSettings":
        environ = os.environ if environ is None else environ
        raw = environ.get("MEMORY_PIPELINE_SENSOR_INTERVAL", "").strip() or "30"
        if not raw.isdigit() or not 1 <= int(raw) <= 86400:
            raise ConfigurationError(f"MEMORY_PIPELINE_SENSOR_INTERVAL={raw!r}: expected seconds between 1 and 86400")
        cron = environ.get("MEMORY_PIPELINE_NIGHTLY_CRON", "").strip() or cls.nightly_cron
        if not is_valid_cron_string(cron):
            raise ConfigurationError(f"MEMORY_PIPELINE_NIGHTLY_CRON={cron!r}: not a cron expression (e.g. '0 3 * * *')")
        tz = environ.get("MEMORY_PIPELINE_NIGHTLY_TIMEZONE", "").strip() or cls.nightly_timezone
        try:
            ZoneInfo(tz)
        except (ZoneInfoNotFoundError, ValueError):
            raise ConfigurationError(f"MEMORY_PIPELINE_NIGHTLY_TIMEZONE={tz!r}: not a time zone (e.g. Europe/Lisbon)") from None
        return cls(int(raw), cron, tz)


def backlog_max_age_hours(environ: Mapping[str, str] | None = None) -> float:
    environ = os.environ if environ is None else environ
    raw = environ.get("MEMORY_PIPELINE_BACKLOG_MAX_AGE_HOURS", "").strip() or "24"
    try:
        value = float(raw)
    except ValueError:
        raise ConfigurationError(f"MEMORY_PIPELINE_BACKLOG_MAX_AGE_HOURS={raw!r}: expected a number of hours") from None
    if value <= 0:
        raise ConfigurationError(f"MEMORY_PIPELINE_BACKLOG_MAX_AGE_HOURS={raw!r}: must be positive")
    return value
