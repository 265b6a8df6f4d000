"""`memory-pipeline demo` runs the named jobs a deployment runs, with every check evaluated: from
the installed wheel (``installed_package``), in a folder outside the checkout; a search from
another folder then finds the sample corpus."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from memory_pipeline_tests.support.loopback import LoopbackEmbeddingServer

pytestmark = pytest.mark.slow


def test_demo_runs_the_day_and_nightly_jobs_and_their_checks_pass(installed_package, tmp_path):
    home = Path(tempfile.mkdtemp(prefix="mpdemo"))  # short: unix socket paths are limited
    cli = str(installed_package.bin / "memory-pipeline")
    (tmp_path / "demo").mkdir()
    (tmp_path / "elsewhere").mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MEMORY_PIPELINE_", "OLLAMA_", "DAGSTER_"))
    }
    try:
        with LoopbackEmbeddingServer(dim=1024, delay_s=0.05) as server:
            env.update(
                MEMORY_PIPELINE_HOME=str(home),
                MEMORY_PIPELINE_EMBED_PROVIDER="ollama",
                OLLAMA_HOST=server.url,
                MEMORY_PIPELINE_PROGRESS_SECONDS="0.2",
            )
            done = subprocess.run(
                [cli, "demo"],
                env=env,
                cwd=tmp_path / "demo",
                capture_output=True,
                text=True,
                timeout=600,
            )
            found = subprocess.run(
                [cli, "search", "the Saturday sourdough loaf", "--memory", "mara", "--json"],
                env=env,
                cwd=tmp_path / "elsewhere",
                capture_output=True,
                text=True,
                timeout=300,
            )
    finally:
        shutil.rmtree(home, ignore_errors=True)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    # The corpus's README and question files are not episodes: nothing is rejected.
    assert "ingest: 30 new episode(s), 0 already stored, 0 rejected, from 8 file(s)" in out, out
    assert "rejected" not in done.stderr and "no memory" not in done.stderr, done.stderr
    # Named jobs (not Dagster's ephemeral one), each asset of both with rows, every check passed.
    assert "index_day_job: success, 4 of 4 check(s) passed" in out, out
    assert "nightly_maintenance_job: success, 7 of 7 check(s) passed" in out, out
    for asset in (
        "episodes",
        "chunks",
        "embeddings",
        "entities",
        "serving_generation",
        "hnsw_index",
        "retrieval_quality",
    ):
        line = next(line for line in out.splitlines() if line.strip().startswith(f"{asset}:"))
        assert int(line.split(":")[1].split()[0]) > 0, line
    # The corpus's labelled questions are loaded and scored (the retrieval_quality asset).
    assert "questions: 28 labelled question(s) for memory 'mara'" in out, out
    assert "1. Postmortem: duplicate invoices (LDG-4102)" in out
    # While it embeds, the demo says what it does and how far it is (stderr, no terminal here).
    assert "the bundled model embeds each chunk" in out or "index_day_job, partition" in out
    progress = [line for line in done.stderr.splitlines() if line.startswith("index: ")]
    assert progress and "/30 episodes, " in progress[-1], done.stderr[-3000:]
    assert found.returncode == 0, found.stdout[-3000:] + found.stderr[-3000:]
    titles = [r["title"] for r in json.loads(found.stdout)["results"]]
    assert "Sourdough: the Saturday loaf" in titles, titles
