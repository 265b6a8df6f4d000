"""End-to-end fixtures: the real ``memory-pipeline ui`` (dagster dev + daemon) and headless Chromium.

One ``memory-pipeline ui`` process serves the whole e2e package (startup takes ~10-20 s): it runs
on a free port with a short temporary MEMORY_PIPELINE_HOME (unix socket paths are limited to ~100
characters), the embedded PostgreSQL, and the ``ollama`` provider pointed at a
``LoopbackEmbeddingServer`` in this process, so runs never wait for a real model.

Teardown ends the process group, then fails if any process whose command line names the temporary
home (dagster children, run workers, postgres) is still alive; leftovers are killed first, so a
failing teardown never leaks processes into the next run.

Browser tests run after the GraphQL tests (see ``pytest_collection_modifyitems``) so screenshots
show materialized partitions. Set ``E2E_SCREENSHOT_DIR=DIR`` to keep a copy of every
screenshot (not a MEMORY_PIPELINE_* name: the root conftest clears those for the session).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from memory_pipeline_tests.support.chromium import chromium_or_skip
from memory_pipeline_tests.support.loopback import LoopbackEmbeddingServer
from memory_pipeline_tests.support.processes import describe, processes_naming

SCRIPT = Path(sys.executable).with_name("memory-pipeline")
REPOSITORY = {"repositoryLocationName": "memory_pipeline", "repositoryName": "__repository__"}
STARTUP_TIMEOUT_S = 180  # it answered after 83 s at load 20 on the shared 2-core machine
STOP_GRACE_S = 30
CHILDREN_GRACE_S = 60  # Dagster's code-server heartbeat timeout (45 s) and a margin


def pytest_collection_modifyitems(config, items):
    """Browser tests after the other e2e tests (their screenshots then show materialized
    partitions), in the same slots, so the e2e tests stay together around the shared server."""
    slots = [i for i, item in enumerate(items) if "/e2e/" in "/" + item.nodeid.replace("\\", "/")]
    ordered = sorted(
        (items[i] for i in slots),
        key=lambda item: "e2e/test_browser" in item.nodeid.replace("\\", "/"),
    )
    for slot, item in zip(slots, ordered):
        items[slot] = item


def utc_today() -> str:
    return dt.datetime.now(dt.UTC).date().isoformat()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(
    probe: Callable[[], Any],
    *,
    timeout: float,
    interval: float = 1.0,
    what: str | Callable[[], str] = "condition",
) -> Any:
    """Call ``probe`` until it returns something truthy; its last value is in the failure message
    (``what`` may be a callable, evaluated on timeout, to describe the state then)."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        last = probe()
        if last:
            return last
        if time.monotonic() >= deadline:
            description = what() if callable(what) else what
            pytest.fail(
                f"timed out after {timeout:.0f}s waiting for {description}; last value: {last!r}"
            )
        time.sleep(interval)


def metadata_values(entries: list[dict]) -> dict[str, Any]:
    """GraphQL ``metadataEntries`` -> {label: value} for the entry types our assets emit."""
    values: dict[str, Any] = {}
    for entry in entries:
        for field in ("intValue", "floatValue", "boolValue", "text", "mdStr", "path", "jsonString"):
            if field in entry and entry[field] is not None:
                values[entry["label"]] = entry[field]
                break
        else:
            if entry.get("intRepr") is not None:  # ints beyond 32 bits come only as a string
                values[entry["label"]] = int(entry["intRepr"])
            else:
                values[entry["label"]] = None
    return values


METADATA_FIELDS = """
    label
    __typename
    ... on IntMetadataEntry { intValue intRepr }
    ... on FloatMetadataEntry { floatValue }
    ... on BoolMetadataEntry { boolValue }
    ... on TextMetadataEntry { text }
    ... on MarkdownMetadataEntry { mdStr }
    ... on PathMetadataEntry { path }
    ... on JsonMetadataEntry { jsonString }
"""


@dataclass
class UiServer:
    """The running ``memory-pipeline ui`` and the means to talk to it."""

    url: str
    home: Path
    env: dict[str, str]
    embed_server: LoopbackEmbeddingServer
    log_path: Path
    proc: subprocess.Popen

    def graphql(self, query: str, variables: dict | None = None, timeout: float = 30) -> dict:
        response = httpx.post(
            f"{self.url}/graphql",
            json={"query": query, "variables": variables or {}},
            timeout=timeout,
        )
        assert response.status_code == 200, (
            f"GraphQL HTTP {response.status_code}: {response.text[:2000]}"
        )
        body = response.json()
        assert not body.get("errors"), (
            f"GraphQL errors: {json.dumps(body['errors'], indent=1)[:4000]}"
        )
        return body["data"]

    def cli(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        """The console script with the server's environment (same home, same embedder)."""
        return subprocess.run(
            [str(SCRIPT), *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def log_tail(self, chars: int = 6000) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            return f"(no log: {exc})"
        return text[-chars:]

    def materializations(self, asset: str, partition: str, limit: int = 50) -> list[dict]:
        """Materialization events of ``asset`` for ``partition``, newest first."""
        data = self.graphql(
            """query($key: AssetKeyInput!, $partitions: [String!], $limit: Int) {
                 assetOrError(assetKey: $key) {
                   __typename
                   ... on Asset {
                     assetMaterializations(partitions: $partitions, limit: $limit) {
                       runId partition timestamp
                       metadataEntries { METADATA_FIELDS }
                     }
                   }
                 }
               }""".replace("METADATA_FIELDS", METADATA_FIELDS),
            {"key": {"path": [asset]}, "partitions": [partition], "limit": limit},
        )
        node = data["assetOrError"]
        if node["__typename"] == "AssetNotFoundError":
            return []  # never materialized yet
        assert node["__typename"] == "Asset", node
        return [
            {**m, "metadata": metadata_values(m["metadataEntries"])}
            for m in node["assetMaterializations"]
        ]


def _clean_env(home: Path, embed_url: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MEMORY_PIPELINE_", "OLLAMA_", "DAGSTER_"))
    }
    env.update(
        {
            "MEMORY_PIPELINE_HOME": str(home),
            "MEMORY_PIPELINE_EMBED_PROVIDER": "ollama",
            "OLLAMA_HOST": embed_url,
            "MEMORY_PIPELINE_SENSOR_INTERVAL": "5",
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


def _stop(
    proc: subprocess.Popen, home: Path, recover: Callable[[], object] | None = None
) -> list[str]:
    """End the ``ui`` process group; return the processes naming ``home`` that outlived it.

    ``recover``, when given, is what docs/operations.md tells a user to do about a leftover (run any
    command on the same home): called once if something outlived the group, then judged again.
    """
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=10)
    # dagster dev's children live in their own group (cmd_ui ends it) and postgres in yet another
    # (pgserver stops it when its last user exits): give both a moment, then judge. A code server
    # whose shutdown request was lost (a loaded machine) ends by itself when its heartbeats stop
    # (--heartbeat-timeout 45), and postgres after it: that is within the bound too.
    deadline = time.monotonic() + CHILDREN_GRACE_S
    marker = f"{home}{os.sep}"  # postgres -D HOME/pgdata, dagster's --instance-ref HOME/dagster
    leftovers = processes_naming(marker)
    while leftovers and time.monotonic() < deadline:
        time.sleep(0.5)
        leftovers = processes_naming(marker)
    if leftovers and recover is not None:
        recover()
        deadline = time.monotonic() + 15
        leftovers = processes_naming(marker)
        while leftovers and time.monotonic() < deadline:
            time.sleep(0.5)
            leftovers = processes_naming(marker)
    report = describe(leftovers)
    for leftover in leftovers:  # never leak into the next run, even when the assertion fails
        try:
            leftover.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(leftovers, timeout=10)
    return report


@pytest.fixture(scope="package")
def ui() -> UiServer:
    """``memory-pipeline ui --port N`` on a temporary home, ready to answer GraphQL."""
    home = Path(tempfile.mkdtemp(prefix="mp"))
    embed_server = LoopbackEmbeddingServer(dim=1024)
    env = _clean_env(home, embed_server.url)
    port = free_port()
    log_path = home / "ui.log"
    log = log_path.open("wb")
    started = time.monotonic()
    proc = subprocess.Popen(
        [str(SCRIPT), "ui", "--port", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    server = UiServer(f"http://127.0.0.1:{port}", home, env, embed_server, log_path, proc)

    def answers() -> bool:
        if proc.poll() is not None:
            return True  # reported below
        try:
            response = httpx.post(f"{server.url}/graphql", json={"query": "{ version }"}, timeout=5)
            return response.status_code == 200 and bool(
                response.json().get("data", {}).get("version")
            )
        except (httpx.HTTPError, ValueError):
            return False

    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while not answers() and time.monotonic() < deadline:
        time.sleep(0.5)
    if proc.poll() is not None or not answers():
        reason = (
            f"exited with code {proc.returncode}"
            if proc.poll() is not None
            else f"did not answer {{ version }} within {STARTUP_TIMEOUT_S}s"
        )
        leftovers = _stop(proc, home)
        log.close()
        output = server.log_tail(20000)
        print(f"memory-pipeline ui {reason}; its output:\n{output}")
        embed_server.stop()
        shutil.rmtree(home, ignore_errors=True)
        pytest.fail(
            f"memory-pipeline ui {reason} (leftover processes: {leftovers}); output:\n{output[-6000:]}"
        )
    print(
        f"memory-pipeline ui answered after {time.monotonic() - started:.1f}s on {server.url} (home {home})"
    )
    try:
        yield server
    finally:
        leftovers = _stop(proc, home)
        log.close()
        embed_server.stop()
        tail = server.log_tail(4000)
        shutil.rmtree(home, ignore_errors=True)
        assert not leftovers, (
            f"processes of {home} outlived `memory-pipeline ui`: {leftovers}\nlog tail:\n{tail}"
        )


# -- Chromium -----------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def chromium_path() -> str:
    """Debian's Chromium; installed with apt when missing and we are root, else skip."""
    return chromium_or_skip()
