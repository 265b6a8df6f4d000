"""The revisions benchmark still runs: a tiny folder through the product's commands, its checks
(current counts, no superseded revision without history, every old one with it) all met."""

from __future__ import annotations

import json

import pytest

from memory_pipeline_tests.helpers import run_benchmark


@pytest.mark.slow
def test_bench_revisions_tiny_meets_its_checks(tmp_path):
    out = tmp_path / "revisions.json"
    done = run_benchmark(
        "bench_revisions.py", "--notes", "12", "--queries", "4", "--json", str(out)
    )
    assert done.returncode == 0, done.stderr
    figures = json.loads(out.read_text())
    assert figures["ok"] is True
    assert (figures["current_episodes"], figures["listed_two_revisions"]) == (12, 12)
    assert figures["old_revision_found_with_history"] == figures["queries"] == 4
    assert figures["stale_results_without_history"] == 0
