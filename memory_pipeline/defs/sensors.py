"""Sensors: pending episodes become partition runs; files dropped in the inbox get ingested.

Both request runs of ``index_day_job`` for an ingest day, adding the day's partition first if
the episodes came by a path that did not (the HTTP API, another process). Run keys make Dagster
drop a request it has already launched; the cursor remembers what was requested so a failed
day is retried only after ``RETRY_AFTER_S``, not on every tick. Once no episode is pending, the
first sensor requests ``switch_generation_job`` when a new generation is complete (it embeds
pending statements first) or search lacks what the global steps leave (the serving HNSW index,
the generation's calibration: day partitions leave them to the unpartitioned assets), else ``embed_statements_job`` when observations or beliefs lack a
vector (saved while the model was down, imported), at most once per ``RETRY_AFTER_S`` for the
same statements.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from collections.abc import Iterable
from pathlib import Path

import dagster as dg

from memory_pipeline import config
from memory_pipeline.defs import jobs
from memory_pipeline.defs.partitions import ingest_days
from memory_pipeline.domain.sources import SUPPORTED_SUFFIXES
from memory_pipeline.memory import utc_today
from memory_pipeline.orchestration.instance import PARTITIONS
from memory_pipeline.orchestration.resources import MemoryResource

RETRY_AFTER_S = 300
PARTITION_TAG = "dagster/partition"
RANGE_START_TAG = "dagster/asset_partition_range_start"
RANGE_END_TAG = "dagster/asset_partition_range_end"
IN_FLIGHT = [
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
]


def days_in_flight(instance: dg.DagsterInstance, days: Iterable[str]) -> set[str]:
    """Those of ``days`` that a queued or running run of any job covers: one day's run (the
    sensor's, the schedule's) or a backfill's run of a range of days (``BackfillPolicy.multi_run``
    tags the range's ends; every partitioned asset here is partitioned by ingest day, and ISO
    days sort as text)."""
    covered, ranges = set(), []
    for record in instance.get_run_records(dg.RunsFilter(statuses=IN_FLIGHT)):
        tags = record.dagster_run.tags
        if PARTITION_TAG in tags:
            covered.add(tags[PARTITION_TAG])
        elif RANGE_START_TAG in tags and RANGE_END_TAG in tags:
            ranges.append((tags[RANGE_START_TAG], tags[RANGE_END_TAG]))
    return {
        day for day in days if day in covered or any(start <= day <= end for start, end in ranges)
    }


def in_flight(instance: dg.DagsterInstance, job: str) -> bool:
    return bool(instance.get_run_records(dg.RunsFilter(job_name=job, statuses=IN_FLIGHT), limit=1))


def missing_partitions(instance: dg.DagsterInstance, days: set[str]) -> list[str]:
    return sorted(days - set(instance.get_dynamic_partitions(PARTITIONS)))


def plan_requests(
    pending: dict[str, tuple[int, int]],
    in_flight: set[str],
    cursor: dict,
    now: float,
    valid_days: set[str] | None = None,
) -> tuple[list[dg.RunRequest], dict]:
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
                job_name=jobs.index_day_job.name,
                partition_key=day,
                tags={
                    "memory_pipeline/trigger": "unindexed_episodes_sensor",
                    "memory_pipeline/pending": str(count),
                },
            )
        )
        next_cursor[day] = {"sig": signature, "attempt": attempt, "at": now}
    return requests, {d: e for d, e in next_cursor.items() if e is not None}


def build_sensors(interval_s: int) -> list[dg.SensorDefinition]:
    """The two sensors, each evaluated every ``interval_s`` seconds."""
    return [unindexed_episodes_sensor(interval_s), inbox_sensor(interval_s)]


def unindexed_episodes_sensor(interval_s: int) -> dg.SensorDefinition:
    @dg.sensor(
        name="unindexed_episodes_sensor",
        jobs=[jobs.index_day_job, jobs.switch_generation_job, jobs.embed_statements_job],
        minimum_interval_seconds=interval_s,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Finds pending episodes (no chunks, or chunks without a vector for the profile and "
        "generation being written) and requests index_day_job for their ingest days; when nothing is "
        "pending and a new generation is complete, or the serving HNSW index or the model's "
        "calibration is missing, requests switch_generation_job; else, when "
        "observations or beliefs lack a vector, embed_statements_job.",
    )
    def unindexed_episodes_sensor(context: dg.SensorEvaluationContext, memory_api: MemoryResource):
        return evaluate_unindexed(context, memory_api.api.upkeep.outlook())

    return unindexed_episodes_sensor


def evaluate_unindexed(context: dg.SensorEvaluationContext, work) -> dg.SensorResult:
    """Runs of ``index_day_job`` for the days with pending episodes; with none pending, what
    ``idle_request`` asks for. ``work``: the upkeep outlook."""
    pending = {day: (p.count, p.newest_id) for day, p in work.pending.items()}
    new_days = missing_partitions(context.instance, work.days)
    partition_requests = [ingest_days.build_add_request(new_days)] if new_days else []
    if not pending:
        request = idle_request(context.instance, work)
        return dg.SensorResult(
            run_requests=[request] if request else None,
            skip_reason=None if request else dg.SkipReason("nothing to index: 0 pending episodes"),
            dynamic_partitions_requests=partition_requests,
            cursor="{}",
        )
    cursor = json.loads(context.cursor) if context.cursor else {}
    valid = set(context.instance.get_dynamic_partitions(PARTITIONS)) | set(new_days)
    requests, next_cursor = plan_requests(
        pending, days_in_flight(context.instance, pending), cursor, time.time(), valid
    )
    total = sum(n for n, _ in pending.values())
    return dg.SensorResult(
        run_requests=requests or None,
        skip_reason=None
        if requests
        else dg.SkipReason(
            f"{total} pending episode(s) on {len(pending)} day(s); their runs are queued, in "
            f"progress, or waiting {RETRY_AFTER_S}s before a retry"
        ),
        cursor=json.dumps(next_cursor),
        dynamic_partitions_requests=partition_requests,
    )


def idle_request(instance: dg.DagsterInstance, work) -> dg.RunRequest | None:
    """With no episode pending: ``switch_generation_job`` when a new generation is complete or
    search is unready, else ``embed_statements_job`` when statements lack a vector; None when
    neither is due or its job is already in flight."""
    target, statements = work.target, work.statements
    to_switch = work.switch_due or work.search_unready
    window = int(time.time() // RETRY_AFTER_S)
    if to_switch:
        if in_flight(instance, jobs.switch_generation_job.name):
            return None
        return dg.RunRequest(
            # Search left unready (no HNSW index, no calibration yet) is asked
            # for again only after RETRY_AFTER_S: an empty generation has none.
            run_key=None
            if work.switch_due
            else f"search:{target.id if target else 0}:"
            f"{target.generation if target else 0}:{window}",
            job_name=jobs.switch_generation_job.name,
            tags={"memory_pipeline/trigger": "unindexed_episodes_sensor"},
        )
    if target is None or not statements or in_flight(instance, jobs.embed_statements_job.name):
        return None
    # The same pending statements are asked for again only after RETRY_AFTER_S.
    return dg.RunRequest(
        run_key=f"statements:{target.id}:{target.generation}:{statements}:{window}",
        job_name=jobs.embed_statements_job.name,
        tags={
            "memory_pipeline/trigger": "unindexed_episodes_sensor",
            "memory_pipeline/pending_statements": str(statements),
        },
    )


def inbox_sensor(interval_s: int) -> dg.SensorDefinition:
    @dg.sensor(
        name="inbox_sensor",
        job=jobs.index_day_job,
        minimum_interval_seconds=interval_s,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Files dropped into the inbox folder (MEMORY_PIPELINE_INBOX) are filed under "
        "today's ingest day and ingested by that day's episodes partition; changed day folders too.",
    )
    def inbox_sensor(context: dg.SensorEvaluationContext):
        return evaluate_inbox(context, config.inbox_dir())

    return inbox_sensor


def evaluate_inbox(context: dg.SensorEvaluationContext, inbox: Path) -> dg.SensorResult:
    """Files loose files under today's folder and requests a run for each day folder whose
    files changed since the cursor's signature."""
    if not inbox.is_dir():
        return dg.SensorResult(skip_reason=dg.SkipReason(f"no inbox folder at {inbox}"))
    moved = file_loose_files(inbox, utc_today().isoformat())
    if moved:
        context.log.info(f"filed {len(moved)} file(s) under {utc_today().isoformat()}")
    cursor = json.loads(context.cursor) if context.cursor else {}
    seen = day_folder_signatures(inbox)
    requests = [
        dg.RunRequest(
            run_key=f"inbox:{day}:{signature}",
            partition_key=day,
            tags={"memory_pipeline/trigger": "inbox_sensor"},
        )
        for day, signature in seen.items()
        if cursor.get(day) != signature
    ]
    if not requests:
        return dg.SensorResult(
            skip_reason=dg.SkipReason(f"no new files in {inbox}"), cursor=json.dumps(seen)
        )
    # A day folder is a day that receives episodes: its partition exists from now on.
    new_days = missing_partitions(
        context.instance, {r.partition_key for r in requests if r.partition_key}
    )
    return dg.SensorResult(
        run_requests=requests,
        cursor=json.dumps(seen),
        dynamic_partitions_requests=[ingest_days.build_add_request(new_days)] if new_days else [],
    )


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
        if (
            path.is_file()
            and not path.name.startswith(".")
            and path.suffix.lower() in SUPPORTED_SUFFIXES
        ):
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
                digest.update(
                    f"{path.relative_to(folder)}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode()
                )
        signatures[folder.name] = digest.hexdigest()[:16]
    return signatures
