"""A run whose worker dies mid-embedding gives its ``embedding`` pool slot back by itself.

The real ``memory-pipeline ui`` (its daemon with run monitoring, as dagster.yaml configures it):
a run of ``index_day_job`` is held inside the embedding model call (the loopback server answers
slowly), its run worker is killed with SIGKILL while it holds the pool's only slot, and the next
run must get that slot and embed the day. Without the monitoring daemon freeing the slots of
ended runs, the next run waits at "blocked by limit for pool embedding" for good.
"""

from __future__ import annotations

import json
import os
import re
import signal
import time

import psutil
import pytest

from memory_pipeline.orchestration.instance import EMBEDDING_POOL
from memory_pipeline_tests.e2e.conftest import REPOSITORY, UiServer, wait_for
from memory_pipeline_tests.e2e.test_webserver import (
    LAUNCH_RUN,
    RUN_STATUS,
    TERMINAL,
    _run_failure_details,
    _runs_summary,
)
from memory_pipeline_tests.helpers import write_jsonl

pytestmark = pytest.mark.slow

# dagster.yaml: the daemon looks every 15 s and frees slots 30 s after a run's end; the code server
# marks a run whose process died as failed within a second. A loaded 2-core machine, a margin.
FREED_WITHIN_S = 180
HELD_DELAY_S = 90  # below the embedder's 120 s timeout: the run must be inside the call when killed

POOL = """
query($key: String!) {
  instance { concurrencyLimit(concurrencyKey: $key) {
    slotCount claimedSlots { runId stepKey } pendingSteps { runId stepKey }
  } }
}"""

RUN_PIDS = """
query($runId: ID!) {
  logsForRun(runId: $runId, limit: 1000) {
    ... on EventConnection { events { __typename ... on EngineEvent { message } } }
  }
}"""


def _pool(ui: UiServer) -> dict:
    return ui.graphql(POOL, {"key": EMBEDDING_POOL})["instance"]["concurrencyLimit"]


def _run_status(ui: UiServer, run_id: str) -> str:
    run = ui.graphql(RUN_STATUS, {"runId": run_id})["runOrError"]
    assert run["__typename"] == "Run", run
    return run["status"]


def _run_worker_pid(ui: UiServer, run_id: str) -> int | None:
    """The pid Dagster logged for the run's process ("Started process for run (pid: N).")."""
    events = ui.graphql(RUN_PIDS, {"runId": run_id})["logsForRun"].get("events") or []
    for event in events:
        found = re.search(r"Started process for run \(pid: (\d+)\)", event.get("message") or "")
        if found:
            return int(found.group(1))
    return None


def _launch(ui: UiServer, day: str) -> str:
    params = {
        "selector": {**REPOSITORY, "jobName": "index_day_job"},
        "executionMetadata": {"tags": [{"key": "dagster/partition", "value": day}]},
    }
    launched = ui.graphql(LAUNCH_RUN, {"params": params})["launchRun"]
    assert launched["__typename"] == "LaunchRunSuccess", launched
    return launched["run"]["runId"]


def test_a_killed_run_worker_frees_its_embedding_slot_and_the_next_run_embeds(
    ui: UiServer, tmp_path
):
    server = ui.embed_server
    episodes = [
        {
            "memory": "e2e-crash",
            "kind": "note",
            "title": f"Ferry log {i}",
            "occurred_at": f"2026-07-0{i + 1}",
            "body": f"Crossing {i}: the ferry to Cres left late because of the bora wind.",
        }
        for i in range(3)
    ]
    server.delay_s = HELD_DELAY_S
    try:
        requests_before = len(server.requests)
        ingest = ui.cli("ingest", str(write_jsonl(tmp_path / "crash.jsonl", episodes)), "--json")
        assert ingest.returncode == 0, ingest.stderr
        day = json.loads(ingest.stdout)["ingestDay"]
        first = _launch(
            ui, day
        )  # the sensor may launch one of its own too: whichever holds the slot

        def holder() -> str | None:
            """The run holding the pool's slot once its model call reached the server."""
            claimed = _pool(ui)["claimedSlots"]
            if claimed and len(server.requests) > requests_before:
                return claimed[0]["runId"]
            return None

        victim = wait_for(
            holder,
            timeout=240,
            interval=1,
            what=lambda: f"a run inside the embedding call; pool {_pool(ui)}\n{_runs_summary(ui)}",
        )
        pid = wait_for(lambda: _run_worker_pid(ui, victim), timeout=30, what="the run's pid")
        worker = psutil.Process(pid)
        assert worker.is_running(), f"run {victim}'s worker {pid} is not running"
        os.kill(pid, signal.SIGKILL)
        killed_at = time.monotonic()
        worker.wait(timeout=30)
    finally:
        server.delay_s = 0.0

    # The code server sees its run process gone and fails the run ...
    wait_for(
        lambda: _run_status(ui, victim) == "FAILURE",
        timeout=60,
        what=lambda: f"run {victim} to be marked failed (now {_run_status(ui, victim)})",
    )
    # ... and the slot it held comes back without anyone touching it.
    wait_for(
        lambda: all(s["runId"] != victim for s in _pool(ui)["claimedSlots"]),
        timeout=FREED_WITHIN_S,
        interval=2,
        what=lambda: f"run {victim}'s embedding slot to be freed; pool {_pool(ui)}",
    )
    freed_after = time.monotonic() - killed_at
    print(f"slot of the killed run {victim[:8]} freed {freed_after:.0f}s after the kill")

    # The next run gets the slot and embeds the day (the first launch, when the sensor's run was
    # the one killed, else a new launch: the sensor retries a failed day only minutes later).
    retry = (
        first if first != victim and _run_status(ui, first) not in TERMINAL else _launch(ui, day)
    )
    status = wait_for(
        lambda: (s := _run_status(ui, retry)) in TERMINAL and s,
        timeout=240,
        interval=2,
        what=lambda: f"run {retry} to finish; pool {_pool(ui)}\n{_runs_summary(ui)}",
    )
    assert status == "SUCCESS", f"run {retry} ended {status}:\n{_run_failure_details(ui, retry)}"
    embedded = [m for m in ui.materializations("embeddings", day) if m["runId"] == retry]
    assert len(embedded) == 1, f"run {retry} did not materialize embeddings of {day}"
    assert embedded[0]["metadata"]["pending_after"] == 0, embedded[0]["metadata"]

    last: dict = {}

    def found_by_meaning() -> bool:  # a new home serves its first generation once it is switched
        nonlocal last
        search = ui.cli("search", "bora wind ferry", "--memory", "e2e-crash", "--json")
        assert search.returncode == 0, search.stderr
        last = json.loads(search.stdout)
        return last["vector"]["status"] == "ok" and any(
            r["ranks"].get("vector") is not None for r in last["results"]
        )

    wait_for(found_by_meaning, timeout=150, interval=3, what=lambda: json.dumps(last)[:3000])
