"""Run the real ``memory-pipeline`` console script in a subprocess."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

SCRIPT = Path(sys.executable).with_name("memory-pipeline")


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self):
        return json.loads(self.out)


@contextlib.contextmanager
def sigint_default_for_children():
    """Commands started inside get SIGINT's default, even when this test run ignores it.

    A test run started in the background by a shell without job control (`pytest &` in a
    script) ignores SIGINT, and an ignored signal survives exec: a command it starts would ignore
    the test's Ctrl-C and run to its end. A handled signal is reset by exec, so Python's handler
    is set while the command starts, and the run's own disposition restored after.
    """
    ignored = signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    if ignored:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        if ignored:
            signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.fixture
def cli(tmp_path, db_url):
    """``cli(*args, env={...})``: the command against the test database, home in tmp_path."""

    def environment(env: dict | None) -> dict:
        base = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("MEMORY_PIPELINE_", "OLLAMA_", "DAGSTER_"))
        }
        base.update(
            {"MEMORY_PIPELINE_HOME": str(tmp_path / "home"), "MEMORY_PIPELINE_DATABASE_URL": db_url}
        )
        for key, value in (env or {}).items():
            if value is None:
                base.pop(key, None)
            else:
                base[key] = value
        return base

    def run(*args: str, env: dict | None = None, timeout: float = 180) -> Result:
        proc = subprocess.run(
            [str(SCRIPT), *args],
            env=environment(env),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        return Result(proc.returncode, proc.stdout, proc.stderr)

    def start(*args: str, env: dict | None = None) -> subprocess.Popen:
        """The command started, not waited for (``cli.start``): signals, timing."""
        with sigint_default_for_children():
            return subprocess.Popen(
                [str(SCRIPT), *args],
                env=environment(env),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )

    run.start = start
    run.environment = environment
    return run
