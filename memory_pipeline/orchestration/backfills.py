"""Backfills submitted straight to the instance, as ``dagster job backfill`` does, for the daemon.

``memory-pipeline backfill`` needs no web server: it records a backfill of a partitioned job
(``PartitionBackfill``, status REQUESTED) in the project's instance, and the Dagster daemon
(``memory-pipeline ui``, ``dagster dev`` or ``dagster-daemon run``) submits its runs, queued
behind the instance's run limits and the backfill policy (up to ten days a run), exactly as
for a backfill launched from the UI: it is on the Backfills page (``/runs/b/<id>``) and can be
cancelled there. Its state is read back from the instance: the backfill's status and its runs
(tagged ``dagster/backfill``), each covering one day or a range of days.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field

import dagster as dg
from dagster._core.execution.backfill import BulkActionStatus, PartitionBackfill
from dagster._core.remote_origin import (
    ManagedGrpcPythonEnvCodeLocationOrigin,
    RemotePartitionSetOrigin,
    RemoteRepositoryOrigin,
)
from dagster._core.types.loadable_target_origin import LoadableTargetOrigin
from dagster._core.utils import make_new_backfill_id

# The code location workspace.yaml defines (the daemon finds it by this name).
LOCATION = "memory_pipeline"
MODULE = "memory_pipeline.definitions"
REPOSITORY = "__repository__"
# The daemon's heartbeat is this fresh while it runs (it beats every few seconds).
DAEMON_FRESH_SECONDS = 60.0
# A run or a backfill in one of these states changes no more.
TERMINAL_RUN = {"SUCCESS", "FAILURE", "CANCELED"}
FINISHED_BACKFILL = {"COMPLETED", "COMPLETED_SUCCESS", "COMPLETED_FAILED", "FAILED", "CANCELED"}


@dataclass
class BackfillState:
    backfill_id: str
    status: str
    runs: dict[str, str | None] = field(
        default_factory=dict
    )  # partition -> run status (None: not launched yet)
    run_ids: dict[str, str] = field(
        default_factory=dict
    )  # partition -> its run (a run may hold several days)
    job_name: str = ""
    partition_names: list[str] = field(default_factory=list)

    @property
    def finished(self) -> bool:
        if self.status in {"CANCELED", "FAILED"}:
            return all(s is None or s in TERMINAL_RUN for s in self.runs.values())
        return self.status in FINISHED_BACKFILL and all(
            s in TERMINAL_RUN for s in self.runs.values()
        )

    def count(self, status: str) -> int:
        return sum(1 for s in self.runs.values() if s == status)


def submit(instance, job: str, days: list[str], tags: dict[str, str]) -> str:
    """Record a backfill of ``job`` over the partitions ``days`` (which must exist) for the
    daemon to run; its id."""
    origin = RemotePartitionSetOrigin(
        repository_origin=RemoteRepositoryOrigin(
            code_location_origin=ManagedGrpcPythonEnvCodeLocationOrigin(
                loadable_target_origin=LoadableTargetOrigin(
                    executable_path=sys.executable, module_name=MODULE
                ),
                location_name=LOCATION,
            ),
            repository_name=REPOSITORY,
        ),
        partition_set_name=f"{job}_partition_set",
    )
    backfill_id = make_new_backfill_id()
    instance.add_backfill(
        PartitionBackfill(
            backfill_id=backfill_id,
            partition_set_origin=origin,
            status=BulkActionStatus.REQUESTED,
            partition_names=list(days),
            from_failure=False,
            reexecution_steps=None,
            tags=dict(tags),
            backfill_timestamp=time.time(),
        )
    )
    return backfill_id


def daemon_running(instance) -> bool:
    """Whether a Dagster daemon with a backfill loop beats on this instance now."""
    beats = instance.get_daemon_heartbeats()
    beat = beats.get("BACKFILL")
    return beat is not None and time.time() - beat.timestamp < DAEMON_FRESH_SECONDS


def state(instance, backfill_id: str, days: list[str]) -> BackfillState:
    """The backfill's status and each day's run status (None: no run covers it yet)."""
    backfill = instance.get_backfill(backfill_id)
    if backfill is None:
        raise LookupError(f"no backfill {backfill_id} in this instance")
    runs: dict[str, str | None] = {day: None for day in days}
    run_ids: dict[str, str] = {}
    for run in instance.get_runs(dg.RunsFilter(tags={"dagster/backfill": backfill_id})):
        tags = run.tags
        if "dagster/partition" in tags:
            covered = [tags["dagster/partition"]]
        else:
            start = tags.get("dagster/asset_partition_range_start", "")
            end = tags.get("dagster/asset_partition_range_end", "")
            covered = [d for d in days if start <= d <= end]
        for day in covered:
            runs[day], run_ids[day] = run.status.value, run.run_id
    return BackfillState(
        backfill_id,
        backfill.status.value,
        runs,
        run_ids,
        backfill.job_name or "",
        list(backfill.partition_names or []),
    )


def cancel(instance, backfill_id: str) -> None:
    """Ask the daemon to cancel the backfill (its queued runs are not started)."""
    backfill = instance.get_backfill(backfill_id)
    if backfill is not None and backfill.status == BulkActionStatus.REQUESTED:
        instance.update_backfill(backfill.with_status(BulkActionStatus.CANCELING))


def wait(
    instance, backfill_id: str, days: list[str], *, poll_s: float = 1.0, on_change=None
) -> BackfillState:
    last = None
    while True:
        now = state(instance, backfill_id, days)
        if on_change and now != last:
            on_change(now)
        last = now
        if now.finished:
            return now
        time.sleep(poll_s)
