"""The heading-anchor benchmark still runs: its quick mode against a loopback model server."""

from __future__ import annotations

import json

import pytest

from memory_pipeline_tests.helpers import run_benchmark
from memory_pipeline_tests.support.loopback import LoopbackEmbeddingServer


@pytest.mark.slow
def test_bench_anchors_quick_runs_and_reports_both_conditions(tmp_path):
    out = tmp_path / "anchors.json"
    with LoopbackEmbeddingServer(dim=384) as server:
        done = run_benchmark(
            "bench_anchors.py", "--quick", "--embed-url", server.url, "--json", str(out)
        )
    assert done.returncode == 0, done.stderr
    figures = json.loads(out.read_text())
    assert figures["questions"] == 12
    anchors, plain = figures["conditions"]["anchors"], figures["conditions"]["plain"]
    assert anchors["chunks"] == plain["chunks"] and anchors["anchored_chunks"] == anchors["chunks"]
    assert plain["anchored_chunks"] == 0
    for row in ("vector", "keyword", "fused default"):
        assert 0 <= anchors["rows"][row]["recall@1"] <= anchors["rows"][row]["recall@5"] <= 1
    assert "fused default" in done.stdout
