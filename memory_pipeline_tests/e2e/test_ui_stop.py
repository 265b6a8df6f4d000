"""``kill -TERM`` of ``memory-pipeline ui`` ends everything it started.

``dagster dev`` runs in a process group of its own (it ignores SIGTERM from a non-interactive
parent), so a ``ui`` that a signal ends at once would leave the web server, the daemon, the code
server and the embedded PostgreSQL running. Only the ``ui`` process itself is signalled here, as
a service manager or ``kill PID`` does; every process it started must be gone soon after.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import httpx
import psutil
import pytest

from memory_pipeline_tests.e2e.conftest import (
    SCRIPT,
    STARTUP_TIMEOUT_S,
    _clean_env,
    free_port,
    wait_for,
)
from memory_pipeline_tests.support.loopback import LoopbackEmbeddingServer
from memory_pipeline_tests.support.processes import describe, processes_naming

pytestmark = pytest.mark.slow

# cmd_ui's stop: SIGTERM to dagster dev's group, 10 s, then SIGKILL to what is left, then the
# embedded server's stop as the process exits. A loaded machine, a margin.
STOPPED_WITHIN_S = 60


def _descendants(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def _alive(procs: list[psutil.Process]) -> list[psutil.Process]:
    alive = []
    for proc in procs:
        try:
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                alive.append(proc)
        except psutil.NoSuchProcess:
            pass
    return alive


def test_sigterm_to_ui_ends_dagster_and_the_embedded_server():
    home = Path(tempfile.mkdtemp(prefix="mpt"))  # short: unix socket paths are limited
    embed_server = LoopbackEmbeddingServer(dim=1024)
    port = free_port()
    log_path = home / "ui.log"
    started: list[psutil.Process] = []
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [str(SCRIPT), "ui", "--port", str(port)],
            env=_clean_env(home, embed_server.url),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    try:

        def answers() -> bool:
            if proc.poll() is not None:
                pytest.fail(f"ui exited {proc.returncode}: {log_path.read_text(errors='replace')}")
            try:
                response = httpx.post(
                    f"http://127.0.0.1:{port}/graphql", json={"query": "{ version }"}, timeout=5
                )
                return response.status_code == 200
            except httpx.HTTPError:
                return False

        wait_for(answers, timeout=STARTUP_TIMEOUT_S, what="memory-pipeline ui to answer")

        # The daemon starts a moment after the web server answers: wait for the whole family.
        def names() -> str:
            return " ".join(" ".join(p.cmdline()) for p in _alive(_descendants(proc.pid)))

        wait_for(
            lambda: "dagster._daemon run" in names(),
            timeout=120,
            what=lambda: f"dagster's daemon to start; descendants: {names()}",
        )
        started = _descendants(proc.pid) + processes_naming(f"{home}{os.sep}pgdata")
        assert any("webserver" in " ".join(p.cmdline()) for p in started), describe(started)

        os.kill(proc.pid, signal.SIGTERM)  # the ui process alone, not its group
        code = proc.wait(timeout=STOPPED_WITHIN_S)
        deadline = time.monotonic() + STOPPED_WITHIN_S
        while _alive(started) and time.monotonic() < deadline:
            time.sleep(0.5)
        left = _alive(started)
        assert not left, f"alive after SIGTERM of ui: {describe(left)}"
        assert code == 128 + signal.SIGTERM, log_path.read_text(errors="replace")[-4000:]
        assert "Traceback" not in log_path.read_text(errors="replace")
    finally:
        for leftover in _alive(started + _descendants(proc.pid)):
            try:
                leftover.kill()
            except psutil.Error:
                pass
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        embed_server.stop()
        shutil.rmtree(home, ignore_errors=True)
