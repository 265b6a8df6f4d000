"""The small-memories benchmark still runs: its quick mode through the product's commands against
a loopback model server, and its data keeps the rules its README states."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from memory_pipeline_tests.helpers import run_benchmark
from memory_pipeline_tests.support.loopback import LoopbackEmbeddingServer

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import bench_small_memories  # noqa: E402  (a benchmark script, importable for its loader)


def test_the_labelled_set_is_large_and_points_at_one_episode_each():
    memories, questions = bench_small_memories.load(bench_small_memories.DATA)
    assert len(memories) >= 3 and len(questions) >= 40
    assert len({q["q"] for q in questions}) == len(questions)
    for name, folder in memories.items():
        notes = sum(bench_small_memories.titles_of(folder).values())
        assert 10 <= notes <= 30, (name, notes)
        assert any(q["memory"] == name for q in questions), name


@pytest.mark.slow
def test_bench_small_memories_quick_runs_every_row(tmp_path):
    out = tmp_path / "small.json"
    with LoopbackEmbeddingServer(dim=384) as server:
        done = run_benchmark(
            "bench_small_memories.py", "--quick", "--embed-url", server.url, "--json", str(out)
        )
    assert done.returncode == 0, done.stderr
    figures = json.loads(out.read_text())
    scores = figures["scores"]["all"]
    assert scores["questions"] == bench_small_memories.QUICK_QUESTIONS
    for row in bench_small_memories.ROWS:
        assert 0 <= scores[row]["first"] <= scores[row]["in_3"] <= scores["questions"]
    assert figures["episodes"] >= 10 and figures["chunks"] >= figures["episodes"]
    assert "fused default" in done.stdout
