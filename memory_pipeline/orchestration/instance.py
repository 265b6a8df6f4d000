"""This project's Dagster instance for the CLI: its home folder, its partitions, its pool limits.

The instance's storage resolves itself (``orchestration.dagster_storage``); this module gives CLI
commands a persistent DAGSTER_HOME (HOME/dagster, with the project's dagster.yaml), opened at
once or on a thread meanwhile, so that commands outside Dagster can tell it what they did
(``orchestration.reporting``).
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterable, Mapping, MutableMapping
from concurrent.futures import Future

from memory_pipeline import config
from memory_pipeline.storage.paths import DAGSTER_YAML

PARTITIONS = "ingest_days"  # the name of defs.partitions.ingest_days
# Every step that calls the embedding model takes a slot of this pool, so a 100-day backfill
# queues behind the model server's capacity instead of flooding it.
EMBEDDING_POOL = "embedding"


def prepare_dagster_env(
    environ: MutableMapping[str, str] | None = None,
) -> MutableMapping[str, str]:
    """Set DAGSTER_HOME (HOME/dagster with the project's dagster.yaml) and an absolute
    MEMORY_PIPELINE_HOME, so child processes (``dagster dev``) use the same instance and data
    whatever their working directory. Returns the environment (``os.environ`` by default)."""
    environ = os.environ if environ is None else environ
    home = config.usable_folder(config.home_dir(environ))
    dagster_home = config.usable_folder(home / "dagster")
    target = dagster_home / "dagster.yaml"
    if not target.exists() or target.read_bytes() != DAGSTER_YAML.read_bytes():
        shutil.copyfile(DAGSTER_YAML, target)
    environ["MEMORY_PIPELINE_HOME"] = str(home)
    environ["DAGSTER_HOME"] = str(dagster_home)
    return environ


def open_instance():
    import dagster as dg

    environ = prepare_dagster_env()
    return dg.DagsterInstance.from_config(environ["DAGSTER_HOME"])


def open_instance_meanwhile() -> Future:
    """``open_instance`` on a daemon thread, for a command that records its work at its end
    (``memory-pipeline index``): importing Dagster and setting up its storage take seconds, which
    then overlap the command's work instead of adding to it; a daemon thread, so a command that
    fails is never held back by it. The environment is prepared on the calling thread first
    (other threads may be reading ``os.environ``)."""
    home = prepare_dagster_env()["DAGSTER_HOME"]
    future: Future = Future()

    def run() -> None:
        try:
            import dagster as dg

            future.set_result(dg.DagsterInstance.from_config(home))
        except BaseException as exc:  # noqa: BLE001 - the caller reports it
            future.set_exception(exc)

    threading.Thread(target=run, name="open Dagster instance", daemon=True).start()
    return future


def add_partitions(instance, days: Iterable[str]) -> list[str]:
    """Add the days' partitions that do not exist yet, keeping the list in date order; returns
    those added.

    Dagster lists dynamic partitions in the order they were added, and its range bars read
    first to last: a day added after a later one would read "2026-12-02 ... 2026-12-01". So a
    day earlier than the last partition is added by taking the later partitions out and adding
    them back after it (a partition is a name in a list: its materializations and checks are
    kept, and found again). That is done only while no run or backfill is in progress (one
    could be about to read the list); otherwise the day is appended and the next call that
    finds the instance idle puts the list in order (``in_date_order``)."""
    existing = instance.get_dynamic_partitions(PARTITIONS)
    new = sorted(set(days) - set(existing))
    if new and existing and new[0] < existing[-1] and _idle(instance):
        later = [d for d in existing if d > new[0]]
        for day in later:
            instance.delete_dynamic_partition(PARTITIONS, day)
        instance.add_dynamic_partitions(PARTITIONS, sorted(set(later) | set(new)))
    elif new:
        instance.add_dynamic_partitions(PARTITIONS, new)
        if existing != sorted(existing):
            in_date_order(instance)
    elif existing != sorted(existing):
        in_date_order(instance)
    return new


def in_date_order(instance) -> bool:
    """Put the partitions in date order (those from the first out of place on are taken out
    and added back) when no run or backfill is in progress; whether the list is in order now."""
    existing = instance.get_dynamic_partitions(PARTITIONS)
    ordered = sorted(existing)
    if existing == ordered:
        return True
    if not _idle(instance):
        return False
    first = next(i for i, (a, b) in enumerate(zip(existing, ordered)) if a != b)
    tail = existing[first:]
    for day in tail:
        instance.delete_dynamic_partition(PARTITIONS, day)
    instance.add_dynamic_partitions(PARTITIONS, sorted(tail))
    return True


def _idle(instance) -> bool:
    """No run queued or going, no backfill requested: nobody is about to read the partitions."""
    import dagster as dg
    from dagster._core.execution.backfill import BulkActionStatus

    going = dg.RunsFilter(
        statuses=[
            dg.DagsterRunStatus.QUEUED,
            dg.DagsterRunStatus.NOT_STARTED,
            dg.DagsterRunStatus.STARTING,
            dg.DagsterRunStatus.STARTED,
            dg.DagsterRunStatus.CANCELING,
        ]
    )
    if instance.get_runs_count(going):
        return False
    return not instance.get_backfills(status=BulkActionStatus.REQUESTED, limit=1)


def embed_concurrency(environ: Mapping[str, str] | None = None) -> int:
    from memory_pipeline.config import env_int

    return env_int(
        os.environ if environ is None else environ, "MEMORY_PIPELINE_EMBED_CONCURRENCY", 1
    )


def apply_pool_limits(instance, environ: Mapping[str, str] | None = None) -> int:
    """Set the embedding pool's limit in the instance (what the UI's Concurrency page shows)."""
    limit = embed_concurrency(environ)
    instance.event_log_storage.set_concurrency_slots(EMBEDDING_POOL, limit)
    return limit
