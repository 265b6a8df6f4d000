"""Sensors: pending episodes become partition runs; files dropped in the inbox get ingested.

Both request runs of ``index_day_job`` for an ingest day. Run keys make Dagster drop a request
it has already launched; the cursor remembers what was requested so a failed day is retried
only after ``RETRY_AFTER_S``, not on every tick.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from pathlib import Path

import dagster as dg

from memory_pipeline import config
from memory_pipeline.defs.jobs import index_day_job
from memory_pipeline.defs.partitions import ingest_days
from memory_pipeline.domain.sources import SUPPORTED_SUFFIXES
from memory_pipeline.embedders.factory import profile_of
from memory_pipeline.ingest import utc_today
from memory_pipeline.resources import DatabaseResource, EmbedderResource
from memory_pipeline.storage import index_store
from memory_pipeline.storage.profiles_store import writing_target

RETRY_AFTER_S = 300
IN_FLIGHT = [
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
]


def days_in_flight(instance: dg.DagsterInstance) -> set[str]:
    records = instance.get_run_records(dg.RunsFilter(job_name=index_day_job.name, statuses=IN_FLIGHT))
    return {r.dagster_run.tags.get("dagster/partition") for r in records} - {None}


def plan_requests(pending: dict[str, tuple[int, int]], in_flight: set[str], cursor: dict, now: float,
                  valid_days: set[str] | None = None) -> tuple[list[dg.RunRequest], dict]:
    """Pure decision: which days to request, and the next cursor."""
    requests, next_cursor = [], {}
    for day, (count, signature) in pending.items():
        entry = cursor.get(day)
        next_cursor[day] = entry
        if day in in_flight or (valid_days is not None and day not in valid_days):
            continue
        attempt = 0
        if entry and entry["sig"] == signature:
            if now - entry["at"] < RETRY_AFTER_S:
                continue  # requested recently and not yet done: don't hammer a failing day
            attempt = entry["attempt"] + 1
        requests.append(
            dg.RunRequest(
                run_key=f"{day}:{signature}:{attempt}",
                partition_key=day,
                tags={"memory_pipeline/trigger": "unindexed_episodes_sensor", "memory_pipeline/pending": str(count)},
            )
        )
        next_cursor[day] = {"sig": signature, "attempt": attempt, "at": now}
    return requests, {d: e for d, e in next_cursor.items() if e is not None}


def build_sensors(interval_s: int) -> list[dg.SensorDefinition]:
    @dg.sensor(
        name="unindexed_episodes_sensor",
        job=index_day_job,
        minimum_interval_seconds=interval_s,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Finds pending episodes (no chunks, or chunks without a vector for the profile and "
        "generation being written) and requests index_day_job for their ingest days.",
    )
    def unindexed_episodes_sensor(
        context: dg.SensorEvaluationContext, database: DatabaseResource, embedder: EmbedderResource
    ):
        with database.db.connection() as conn:
            target = writing_target(conn, profile_of(embedder.settings()))
            pending = {day: (p.count, p.newest_id) for day, p in index_store.pending_days(conn, target).items()}
        total = sum(n for n, _ in pending.values())
        if not pending:
            return dg.SensorResult(skip_reason=dg.SkipReason("nothing to index: 0 pending episodes"), cursor="{}")
        cursor = json.loads(context.cursor) if context.cursor else {}
        valid = set(ingest_days.get_partition_keys())
        requests, next_cursor = plan_requests(pending, days_in_flight(context.instance), cursor, time.time(), valid)
        if not requests:
            return dg.SensorResult(
                skip_reason=dg.SkipReason(
                    f"{total} pending episode(s) on {len(pending)} day(s); their runs are queued, in "
                    f"progress, or waiting {RETRY_AFTER_S}s before a retry"
                ),
                cursor=json.dumps(next_cursor),
            )
        return dg.SensorResult(run_requests=requests, cursor=json.dumps(next_cursor))

    @dg.sensor(
        name="inbox_sensor",
        job=index_day_job,
        minimum_interval_seconds=interval_s,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Files dropped into the inbox folder (MEMORY_PIPELINE_INBOX) are filed under "
        "today's ingest day and ingested by that day's episodes partition; changed day folders too.",
    )
    def inbox_sensor(context: dg.SensorEvaluationContext):
        inbox = config.inbox_dir()
        if not inbox.is_dir():
            return dg.SensorResult(skip_reason=dg.SkipReason(f"no inbox folder at {inbox}"))
        moved = file_loose_files(inbox, utc_today().isoformat())
        if moved:
            context.log.info(f"filed {len(moved)} file(s) under {utc_today().isoformat()}")
        cursor = json.loads(context.cursor) if context.cursor else {}
        valid = set(ingest_days.get_partition_keys())
        requests, seen = [], {}
        for day, signature in day_folder_signatures(inbox).items():
            seen[day] = signature
            if cursor.get(day) != signature and day in valid:
                requests.append(dg.RunRequest(run_key=f"inbox:{day}:{signature}", partition_key=day,
                                              tags={"memory_pipeline/trigger": "inbox_sensor"}))
        if not requests:
            return dg.SensorResult(skip_reason=dg.SkipReason(f"no new files in {inbox}"), cursor=json.dumps(seen))
        return dg.SensorResult(run_requests=requests, cursor=json.dumps(seen))

    return [unindexed_episodes_sensor, inbox_sensor]


def _is_day(name: str) -> bool:
    import datetime as dt

    try:
        dt.date.fromisoformat(name)
        return len(name) == 10
    except ValueError:
        return False


def file_loose_files(inbox: Path, day: str) -> list[Path]:
    """Move supported files lying directly in the inbox into its folder for ``day``."""
    moved = []
    for path in sorted(inbox.iterdir()):
        if path.is_file() and not path.name.startswith(".") and path.suffix.lower() in SUPPORTED_SUFFIXES:
            target_dir = inbox / day
            target_dir.mkdir(exist_ok=True)
            target = target_dir / path.name
            n = 1
            while target.exists():
                target = target_dir / f"{path.stem}-{n}{path.suffix}"
                n += 1
            shutil.move(str(path), target)  # a rename on one file system: keeps the mtime
            moved.append(target)
    return moved


def day_folder_signatures(inbox: Path) -> dict[str, str]:
    """Per day folder: a digest of its files' names, sizes and mtimes (changes when files do)."""
    signatures = {}
    for folder in sorted(p for p in inbox.iterdir() if p.is_dir() and _is_day(p.name)):
        digest = hashlib.sha256()
        for path in sorted(folder.rglob("*")):
            if path.is_file() and not path.name.startswith("."):
                stat = path.stat()
                digest.update(f"{path.relative_to(folder)}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
        signatures[folder.name] = digest.hexdigest()[:16]
    return signatures
