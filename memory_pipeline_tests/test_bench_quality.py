"""The quality scoring benchmark still runs, at a tiny size, through the product's commands and
its public API only."""

from __future__ import annotations

import json

import pytest

from memory_pipeline_tests.helpers import run_benchmark


@pytest.mark.slow  # ingest and index as processes of the console script
def test_bench_quality_scores_labelled_questions_on_the_kept_build(tmp_path):
    out = tmp_path / "quality.json"
    done = run_benchmark(
        "bench_quality.py",
        "--home", str(tmp_path / "kept"), "--notes", "1500", "--questions", "40",
        "--json", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    figures = json.loads(out.read_text())
    assert figures["questions"] == 40 and figures["median_seconds"] > 0
    # Five words of its own body find most notes among the first 8.
    assert figures["fused"]["recall_at_8"] >= 0.5
    assert {"vector", "keyword"} <= set(figures["channels"])
