"""Plain ``dagster dev`` in a project folder with no variable set: the first thing a Dagster user
types. It must start, see the CLI's data (the embedded server in the user's data folder), and the
sensor must index what the CLI ingests, with the partitions and checks showing it.

The folder is a fresh copy of the project's dagster.yaml and workspace.yaml, and the user's data
folder is the fixture's own (XDG_DATA_HOME in that folder). Everything else is as a user
has it: no MEMORY_PIPELINE_*, DAGSTER_* or OLLAMA_* variable, so the bundled local model embeds
and the sensors tick at their default interval.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import pytest

from memory_pipeline.storage.paths import PROJECT_ROOT
from memory_pipeline_tests.e2e.conftest import _stop, free_port, utc_today, wait_for
from memory_pipeline_tests.helpers import write_jsonl

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
ASSETS = ("episodes", "chunks", "embeddings", "entity_mentions")

PARTITIONS = """
query($key: AssetKeyInput!) {
  assetNodeOrError(assetKey: $key) {
    ... on AssetNode {
      partitionStats { numMaterialized numPartitions }
      assetChecksOrError { ... on AssetChecks { checks { name executionForLatestMaterialization { status } } } }
    }
  }
}"""


def _plain_env() -> dict[str, str]:
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MEMORY_PIPELINE_", "OLLAMA_", "DAGSTER_"))
    }


@pytest.fixture(scope="module")
def plain_dev():
    folder = Path(tempfile.mkdtemp(prefix="mpdev"))  # short: unix socket paths are limited
    for name in ("dagster.yaml", "workspace.yaml"):
        shutil.copy(PROJECT_ROOT / name, folder / name)
    env = {**_plain_env(), "XDG_DATA_HOME": str(folder / "xdg")}
    port = free_port()
    log_path = folder / "dev.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [str(BIN / "dagster"), "dev", "-p", str(port)],
            cwd=folder,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"

    def answers():
        if proc.poll() is not None:
            return True
        try:
            return (
                httpx.post(f"{url}/graphql", json={"query": "{ version }"}, timeout=5).status_code
                == 200
            )
        except httpx.HTTPError:
            return False

    try:
        wait_for(answers, timeout=120, interval=1, what="dagster dev to answer")
        assert proc.poll() is None, log_path.read_text(errors="replace")[-6000:]
        yield folder, url, env, proc
    finally:
        # SIGTERM ends a Python process without its exit handlers, so pgserver's count of the
        # embedded server's users can miss the last one and leave postgres running; docs/operations.md's
        # recovery (any command on the same home stops it) is what this judges, not a clean race.
        leftovers = _stop(
            proc,
            folder / "xdg" / "memory_pipeline",
            recover=lambda: subprocess.run(
                [str(BIN / "memory-pipeline"), "status"],
                cwd=folder,
                env=env,
                capture_output=True,
                timeout=120,
            ),
        )
        tail = log_path.read_text(errors="replace")[-4000:]
        shutil.rmtree(folder, ignore_errors=True)
        assert not leftovers, f"processes of {folder} outlived dagster dev: {leftovers}\n{tail}"


def _graphql(url: str, query: str, variables: dict) -> dict:
    body = httpx.post(
        f"{url}/graphql", json={"query": query, "variables": variables}, timeout=30
    ).json()
    assert not body.get("errors"), body["errors"]
    return body["data"]


def test_plain_dagster_dev_sees_the_cli_data_and_the_sensor_indexes_it(plain_dev, tmp_path):
    folder, url, env, _ = plain_dev
    path = write_jsonl(
        tmp_path / "e.jsonl",
        [
            {
                "memory": "plain",
                "kind": "note",
                "title": f"Harbour day {i}",
                "occurred_at": f"2026-06-0{i + 1}",
                "body": f"Day {i}: Marta Lindqvist fixed the boat engine in Rovinj harbour.",
            }
            for i in range(2)
        ],
    )
    ingest = subprocess.run(
        [str(BIN / "memory-pipeline"), "ingest", str(path), "--json"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ingest.returncode == 0 and "warning" not in ingest.stderr, ingest.stderr
    day = json.loads(ingest.stdout)["ingestDay"]
    assert day == utc_today()

    def checked(
        node,
    ) -> bool:  # its checks ran to an end (they may still run just after the materialization)
        return all(
            (c["executionForLatestMaterialization"] or {}).get("status")
            not in (None, "IN_PROGRESS")
            for c in node["assetChecksOrError"]["checks"]
        )

    def indexed():
        nodes = {
            a: _graphql(url, PARTITIONS, {"key": {"path": [a]}})["assetNodeOrError"] for a in ASSETS
        }
        done = all(
            n["partitionStats"]["numMaterialized"] == 1 and (a == "episodes" or checked(n))
            for a, n in nodes.items()
        )
        return nodes if done else None

    started = time.monotonic()
    nodes = wait_for(indexed, timeout=240, interval=3, what="the sensor to index the ingested day")
    print(f"indexed by the sensor {time.monotonic() - started:.0f}s after ingest")
    for asset, node in nodes.items():
        # The only partition is the day that holds data: 100% filled.
        assert node["partitionStats"] == {"numMaterialized": 1, "numPartitions": 1}, (asset, node)
        checks = node["assetChecksOrError"]["checks"]
        if asset != "episodes":
            assert checks and all(
                c["executionForLatestMaterialization"]["status"] == "SUCCEEDED" for c in checks
            ), (asset, checks)
    status = subprocess.run(
        [str(BIN / "memory-pipeline"), "status", "--json"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert status.returncode == 0, status.stderr
    doc = json.loads(status.stdout)
    assert doc["episodes"] == 2 and doc["pendingEpisodes"] == 0 and doc["vectors"] > 0
    # Plain `dagster dev` from the project folder and the CLI share the user's data folder.
    assert (Path(env["XDG_DATA_HOME"]) / "memory_pipeline" / "pgdata").is_dir()
    assert not (folder / ".memory_pipeline").exists()


def test_dg_knows_the_project_and_its_definitions_load(tmp_path):
    # From the checkout's root (where dg finds [tool.dg]); its own home, not the developer's data.
    env = {
        **_plain_env(),
        "VIRTUAL_ENV": str(BIN.parent),
        "MEMORY_PIPELINE_HOME": str(tmp_path / "home"),
    }
    result = subprocess.run(
        [str(BIN / "dg"), "check", "defs"],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "All definitions loaded successfully" in result.stdout + result.stderr
