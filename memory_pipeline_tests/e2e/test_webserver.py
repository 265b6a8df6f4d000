"""The web UI's GraphQL API over the real ``memory-pipeline ui``: runs, partitions, the sensor.

Every test uses its own memory so they can share one server (and today's partition) in any order.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import time
import uuid

import pytest

from memory_pipeline_tests.e2e.conftest import REPOSITORY, UiServer, utc_today, wait_for
from memory_pipeline_tests.helpers import write_jsonl
from memory_pipeline_tests.support.dagster_api import DagsterApi

pytestmark = pytest.mark.slow

PROFILE = "ollama/qwen3-embedding:0.6b@512"
TERMINAL = {"SUCCESS", "FAILURE", "CANCELED"}

LAUNCH_RUN = """
mutation($params: ExecutionParams!) {
  launchRun(executionParams: $params) {
    __typename
    ... on LaunchRunSuccess { run { runId status } }
    ... on PythonError { message stack }
    ... on RunConfigValidationInvalid { errors { message } }
    ... on InvalidSubsetError { message }
    ... on PipelineNotFoundError { message }
  }
}"""

RUN_STATUS = """
query($runId: ID!) {
  runOrError(runId: $runId) {
    __typename
    ... on Run { status }
    ... on PythonError { message }
  }
}"""

RUN_ERRORS = """
query($runId: ID!) {
  logsForRun(runId: $runId, limit: 1000) {
    __typename
    ... on EventConnection {
      events {
        __typename
        ... on MessageEvent { message level stepKey }
        ... on ExecutionStepFailureEvent { error { message stack } }
        ... on RunFailureEvent { error { message } }
      }
    }
  }
}"""

PARTITION_STATUS = """
query($key: AssetKeyInput!) {
  assetNodeOrError(assetKey: $key) {
    __typename
    ... on AssetNode {
      partitionStats { numMaterialized numPartitions }
      assetPartitionStatuses {
        __typename
        ... on DefaultPartitionStatuses { materializedPartitions }
        ... on TimePartitionStatuses { ranges { status startKey endKey } }
      }
    }
  }
}"""

SENSORS = """
query($selector: RepositorySelector!) {
  sensorsOrError(repositorySelector: $selector) {
    __typename
    ... on Sensors { results { name minIntervalSeconds sensorState { status } } }
    ... on PythonError { message }
  }
}"""


def _episodes(memory: str, n: int, word: str = "harbour") -> list[dict]:
    # Recurring proper names so the entity_mentions stage links something.
    return [
        {
            "memory": memory,
            "kind": "journal",
            "title": f"Day {i} in Rovinj",
            "occurred_at": f"2026-06-1{i}T08:00:00Z",
            "body": f"Morning {i}: I met Marta Lindqvist at the {word} in Rovinj and we talked about boats.\n\n"
            + ("We walked along the old town walls and counted the fishing boats. " * (3 + i)),
        }
        for i in range(n)
    ]


def _run_failure_details(ui: UiServer, run_id: str) -> str:
    data = ui.graphql(RUN_ERRORS, {"runId": run_id})
    events = data["logsForRun"].get("events") or []
    lines = []
    for event in events:
        if event["__typename"] in ("ExecutionStepFailureEvent", "RunFailureEvent") and event.get(
            "error"
        ):
            lines.append(f"{event['__typename']}: {event['error']['message']}")
        elif event.get("level") in ("ERROR", "CRITICAL"):
            lines.append(f"{event['level']} {event.get('stepKey')}: {event['message']}")
    return "\n".join(lines)[-6000:] or "(no error events)"


def _runs_summary(ui: UiServer) -> str:
    runs = ui.graphql(
        """{ runsOrError(limit: 20) { ... on Runs { results {
               runId status creationTime startTime endTime tags { key value } } } } }"""
    )["runsOrError"]["results"]
    lines = []
    for run in reversed(runs):
        tags = {t["key"]: t["value"] for t in run["tags"]}
        start, end = run["startTime"], run["endTime"]
        lines.append(
            f"run {run['runId'][:8]} {run['status']:8} created {run['creationTime']:.1f} "
            f"queued {((start or run['creationTime']) - run['creationTime']):.1f}s "
            f"ran {((end or start or 0) - (start or 0)):.1f}s "
            f"trigger={tags.get('memory_pipeline/trigger', 'manual')} partition={tags.get('dagster/partition')}"
        )
    return "\n".join(lines)


def _wait_for_run(ui: UiServer, run_id: str, timeout: float = 150) -> str:
    def finished():
        run = ui.graphql(RUN_STATUS, {"runId": run_id})["runOrError"]
        assert run["__typename"] == "Run", run
        return run["status"] if run["status"] in TERMINAL else None

    return wait_for(finished, timeout=timeout, interval=1.0, what=f"run {run_id} to finish")


def _materialized_partitions(ui: UiServer, asset: str) -> list[str]:
    """The partitions the UI shows as materialized (daily partitions come as ranges of days)."""
    node = ui.graphql(PARTITION_STATUS, {"key": {"path": [asset]}})["assetNodeOrError"]
    assert node["__typename"] == "AssetNode", node
    statuses = node["assetPartitionStatuses"]
    if statuses["__typename"] == "DefaultPartitionStatuses":
        return statuses["materializedPartitions"]
    assert statuses["__typename"] == "TimePartitionStatuses", statuses
    days = []
    for r in statuses["ranges"]:
        if r["status"] == "MATERIALIZED":
            day, end = dt.date.fromisoformat(r["startKey"]), dt.date.fromisoformat(r["endKey"])
            while day <= end:
                days.append(day.isoformat())
                day += dt.timedelta(days=1)
    return days


def test_cli_ingest_shows_the_days_episodes_partition_as_materialized(ui: UiServer, tmp_path):
    rows = _episodes("e2e-cli", 3)
    path = write_jsonl(tmp_path / "cli.jsonl", rows)
    result = ui.cli("ingest", str(path), "--json")
    assert result.returncode == 0, result.stderr
    assert "could not record the ingest in Dagster" not in result.stderr, result.stderr
    report = json.loads(result.stdout)
    day = report["ingestDay"]
    assert day == utc_today() and report["inserted"] == 3

    # A runless materialization (ingest ran outside Dagster), visible to the web UI at once; the
    # wait only covers a loaded machine's slow GraphQL answers (15 s was seen to fall short).
    partitions = wait_for(
        lambda: day in _materialized_partitions(ui, "episodes"),
        timeout=60,
        what=f"episodes partition {day} to show as materialized",
    )
    assert partitions
    events = ui.materializations("episodes", day)
    by_cli = [e for e in events if e["metadata"].get("ingested_by") == "memory-pipeline ingest"]
    assert by_cli, events
    latest = by_cli[0]
    assert latest["partition"] == day and not latest["runId"], latest
    assert latest["metadata"]["new"] == 3 and latest["metadata"]["dagster/row_count"] >= 3


def test_launched_index_day_run_materializes_the_partition_with_metadata(ui: UiServer, tmp_path):
    # Ingested with the CLI, not dropped into the inbox: the inbox sensor would start a second run
    # of the day, while the pending-episodes sensor skips a day whose run is already queued.
    # Counted before the ingest: the sensor's run may embed the new episodes before ours.
    served_before = ui.embed_server.served
    ingest = ui.cli(
        "ingest", str(write_jsonl(tmp_path / "run.jsonl", _episodes("e2e-run", 4))), "--json"
    )
    assert ingest.returncode == 0, ingest.stderr
    day = json.loads(ingest.stdout)["ingestDay"]

    params = {
        "selector": {**REPOSITORY, "jobName": "index_day_job"},
        "executionMetadata": {"tags": [{"key": "dagster/partition", "value": day}]},
    }
    launched = ui.graphql(LAUNCH_RUN, {"params": params})["launchRun"]
    assert launched["__typename"] == "LaunchRunSuccess", launched
    run_id = launched["run"]["runId"]

    status = _wait_for_run(ui, run_id)
    print(_runs_summary(ui))
    assert status == "SUCCESS", f"run {run_id} ended {status}:\n{_run_failure_details(ui, run_id)}"

    # The sensor may index the same day in a run of its own at the same time (if it ticked between
    # the ingest and the launch, or for another test's episodes): so no exact "new" counts here,
    # only what must hold either way.
    meta = {}
    for asset in ("episodes", "chunks", "embeddings", "entity_mentions"):
        mine = [m for m in ui.materializations(asset, day) if m["runId"] == run_id]
        assert len(mine) == 1, f"{asset}: {len(mine)} materializations of {day} by run {run_id}"
        assert mine[0]["partition"] == day
        meta[asset] = mine[0]["metadata"]
        # entity_mentions links to entities the memory already has: none yet for a new memory.
        assert meta[asset]["dagster/row_count"] > 0 or asset == "entity_mentions", (
            asset,
            meta[asset],
        )

    assert meta["episodes"]["dagster/row_count"] >= 4, meta["episodes"]
    assert meta["chunks"]["dagster/row_count"] >= 4
    assert meta["embeddings"]["profile"] == PROFILE
    assert meta["embeddings"]["pending_after"] == 0
    assert meta["embeddings"]["dagster/row_count"] >= meta["chunks"]["dagster/row_count"]
    assert meta["entity_mentions"]["memories"] >= 1
    # The vectors came from the loopback server, through a run worker's HTTP client.
    assert ui.embed_server.served > served_before
    assert day in _materialized_partitions(ui, "embeddings")


def test_episode_ingested_while_the_ui_runs_becomes_searchable(ui: UiServer, tmp_path):
    sensors = ui.graphql(SENSORS, {"selector": REPOSITORY})["sensorsOrError"]
    assert sensors["__typename"] == "Sensors", sensors
    sensor = {s["name"]: s for s in sensors["results"]}.get("unindexed_episodes_sensor")
    if sensor is None:
        pytest.skip(
            "waiting for the sensor: unindexed_episodes_sensor is not in the loaded definitions"
        )
    assert sensor["sensorState"]["status"] == "RUNNING", (
        f"unindexed_episodes_sensor is {sensor['sensorState']['status']}: new episodes need it running by default"
    )
    assert sensor["minIntervalSeconds"] == 5, "MEMORY_PIPELINE_SENSOR_INTERVAL=5 was not applied"

    word = "zqx" + uuid.uuid4().hex[:8]  # a word no other episode contains
    path = write_jsonl(tmp_path / "sensor.jsonl", _episodes("e2e-sensor", 1, word=word))
    started = time.monotonic()
    ingest = ui.cli("ingest", str(path), "--json")
    assert ingest.returncode == 0, ingest.stderr

    last: dict = {}

    def found():
        nonlocal last
        search = ui.cli("search", word, "--memory", "e2e-sensor", "--json")
        assert search.returncode == 0, search.stderr
        last = json.loads(search.stdout)
        return last["vector"]["status"] == "ok" and any(
            word in r["text"] and r["ranks"].get("vector") is not None for r in last["results"]
        )

    wait_for(
        found,
        timeout=150,
        interval=3,
        what=lambda: (
            f"{word!r} to be found by the vector channel; last search: {json.dumps(last)[:3000]}"
        ),
    )
    print(
        f"searchable {time.monotonic() - started:.1f}s after ingest; last response: "
        f"vector={last['vector']}, results={len(last['results'])}"
    )


ADD_PARTITION = """
mutation($key: String!, $selector: RepositorySelector!) {
  addDynamicPartition(partitionsDefName: "ingest_days", partitionKey: $key, repositorySelector: $selector) {
    __typename
    ... on PythonError { message }
  }
}"""

RUN_CHECKS = """
query($runId: ID!) {
  logsForRun(runId: $runId, limit: 1000) {
    ... on EventConnection { events { __typename
      ... on AssetCheckEvaluationEvent { evaluation { checkName success assetKey { path } } } } }
  }
}"""

BACKFILL_DAYS = ["2026-03-02", "2026-03-03", "2026-03-04"]


def _backfill_runs(ui: UiServer, backfill_id: str) -> dict[str, tuple[str, str]]:
    state = DagsterApi(ui.url).backfill(backfill_id)  # the product's client
    return {day: (state.run_ids[day], status) for day, status in state.runs.items()}


def test_three_day_backfill_launched_through_graphql_runs_its_partition_checks(ui: UiServer):
    """Three past days arrive through the inbox; a backfill of index_day_job (as the UI's
    "Launch backfill" makes it) loads, indexes and checks them in one run (the backfill policy:
    up to ten days a run), and each day shows as its own materialized partition."""
    inbox = ui.home / "inbox"
    for i, day in enumerate(BACKFILL_DAYS):
        (inbox / day).mkdir(parents=True, exist_ok=True)
        write_jsonl(inbox / day / "day.jsonl", _episodes(f"e2e-backfill-{i}", 2))
        added = ui.graphql(ADD_PARTITION, {"key": day, "selector": REPOSITORY})[
            "addDynamicPartition"
        ]
        assert added["__typename"] in (
            "AddDynamicPartitionSuccess",
            "DuplicateDynamicPartitionError",
        ), added
    # What the UI's "Launch backfill" sends (launchPartitionBackfill), through the product's client.
    backfill_id = DagsterApi(ui.url).launch_backfill("index_day_job", BACKFILL_DAYS, {})

    def done():
        runs = _backfill_runs(ui, backfill_id)
        return (
            runs
            if len(runs) == 3 and all(status in TERMINAL for _, status in runs.values())
            else None
        )

    runs = wait_for(
        done,
        timeout=240,
        interval=2,
        what=lambda: f"backfill {backfill_id}: {_backfill_runs(ui, backfill_id)}",
    )
    assert len({run_id for run_id, _ in runs.values()}) == 1, runs
    for day, (run_id, status) in runs.items():
        assert status == "SUCCESS", (
            f"{day}: run {run_id} ended {status}:\n{_run_failure_details(ui, run_id)}"
        )
        events = ui.graphql(RUN_CHECKS, {"runId": run_id})["logsForRun"]["events"]
        checks = {
            e["evaluation"]["checkName"]: e["evaluation"]["success"]
            for e in events
            if e["__typename"] == "AssetCheckEvaluationEvent"
        }
        # How far the index is behind depends on what else this server holds: present is enough.
        assert checks.pop("index_is_current") in (True, False), checks
        assert checks == {
            "every_episode_chunked": True,
            "day_vectors_complete_and_normalized": True,
            "every_episode_scanned_for_names": True,
        }, (day, checks)
        assert ui.materializations("embeddings", day)[0]["metadata"]["dagster/row_count"] > 0
    for asset in ("episodes", "chunks", "embeddings", "entity_mentions"):
        assert set(BACKFILL_DAYS) <= set(_materialized_partitions(ui, asset)), asset


def test_cli_backfill_is_a_dagster_backfill_and_waits_for_it(ui: UiServer):
    if not all(day in _materialized_partitions(ui, "episodes") for day in BACKFILL_DAYS):
        pytest.skip(
            "needs the days of test_three_day_backfill_launched_through_graphql_runs_its_partition_checks"
        )
    result = ui.cli(
        "backfill",
        "--from",
        "2026-03-01",
        "--to",
        BACKFILL_DAYS[-1],
        "--rechunk",
        "--dagster-url",
        ui.url,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    first = result.stdout.splitlines()
    assert (
        "index_day_job over 3 day(s) that hold episodes (1 day(s) in the range received nothing)"
        in result.stdout
    )
    backfill_id = (
        next(line for line in first if line.startswith("backfill ")).split()[1].rstrip(":")
    )
    assert any(line.endswith(f"; {ui.url}/runs/b/{backfill_id}") for line in first), first
    for day in BACKFILL_DAYS:
        assert f"{day}: success" in result.stdout, result.stdout
    # On the Backfills page, with the run(s) of the named job, tagged as the CLI's.
    state = DagsterApi(ui.url).backfill(backfill_id)
    assert state.job_name == "index_day_job" and sorted(state.partition_names) == BACKFILL_DAYS
    runs = _backfill_runs(ui, backfill_id)
    assert {status for _, status in runs.values()} == {"SUCCESS"}
    # --rechunk deleted the days' chunks first; the days hold chunks again (made by the backfill's
    # runs, or by a sensor run that got there first: both are index_day_job).
    for day in BACKFILL_DAYS:
        chunks = [m for m in ui.materializations("chunks", day) if m["runId"] == runs[day][0]]
        assert chunks and chunks[0]["metadata"]["dagster/row_count"] > 0, (day, chunks)


def test_a_backfill_cancelled_through_graphql_ends_canceled_and_the_cli_says_so(ui: UiServer):
    """``cancelPartitionBackfill`` (what the Backfills page's "Cancel" sends) while the CLI waits:
    the backfill ends CANCELED and ``memory-pipeline backfill`` says so in one line, exit 10."""
    from memory_pipeline_tests.e2e.conftest import SCRIPT

    if not all(day in _materialized_partitions(ui, "episodes") for day in BACKFILL_DAYS):
        pytest.skip(
            "needs the days of test_three_day_backfill_launched_through_graphql_runs_its_partition_checks"
        )
    proc = subprocess.Popen(
        [
            str(SCRIPT),
            "backfill",
            "--from",
            BACKFILL_DAYS[0],
            "--to",
            BACKFILL_DAYS[-1],
            "--dagster-url",
            ui.url,
        ],
        env={**ui.env, "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first = proc.stdout.readline()
        assert first.startswith("backfill "), first + proc.stderr.read()
        backfill_id = first.split()[1].rstrip(":")
        DagsterApi(ui.url).cancel_backfill(backfill_id)
        out, errors = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 10, first + out + errors
    assert "Traceback" not in errors
    assert (
        errors.strip()
        .splitlines()[-1]
        .startswith(f"memory-pipeline: backfill {backfill_id} was cancelled")
    ), errors
    assert f"backfill {backfill_id} canceled:" in out, out
    assert DagsterApi(ui.url).backfill(backfill_id).status == "CANCELED"


def test_cli_backfill_names_no_web_server_and_the_daemon_runs_it(ui: UiServer):
    """No web server named (no --dagster-url, no MEMORY_PIPELINE_DAGSTER_UI): the backfill goes
    to the instance all the same, the command says where to find it, and the daemon that
    `memory-pipeline ui` runs completes it."""
    if not any(day in _materialized_partitions(ui, "episodes") for day in BACKFILL_DAYS):
        pytest.skip("needs days that hold episodes")
    result = ui.cli("backfill", "--from", BACKFILL_DAYS[0], "--to", BACKFILL_DAYS[0], timeout=300)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    first = result.stdout.splitlines()[0]
    backfill_id = first.split()[1].rstrip(":")
    assert first.endswith(
        f"in Dagster's UI (`memory-pipeline ui`): Backfills, or /runs/b/{backfill_id}"
    )
    assert f"{BACKFILL_DAYS[0]}: success" in result.stdout, result.stdout
    assert DagsterApi(ui.url).backfill(backfill_id).status in ("COMPLETED", "COMPLETED_SUCCESS")


def test_ui_starts_without_misleading_warnings(ui: UiServer):
    """Dagster runs in the home `memory-pipeline ui` prepares: it uses the project's dagster.yaml
    (no "will not be used"), keeps its storage (no "will be removed"), and the superseded-command
    notice of `dagster dev` is not shown."""
    log = ui.log_tail(200_000)
    assert "Serving dagster-webserver" in log, log[-3000:]
    for misleading in ("will not be used", "will be removed", "superseded", "Warning"):
        assert misleading not in log, log[-3000:]
