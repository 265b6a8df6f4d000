"""The load benchmark (benchmarks/bench_service_load.py) runs end to end at a tiny size."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import bench_service_load  # noqa: E402 - a script beside the benchmarks


@pytest.mark.slow
def test_the_load_benchmark_runs_at_a_tiny_size(pg_server, monkeypatch):
    # Its fresh databases go to the tests' server instead of a second embedded one.
    monkeypatch.setenv("MEMORY_PIPELINE_DATABASE_URL", pg_server.uri("postgres"))
    figures = bench_service_load.main(
        ["--clients", "2", "--seconds", "3", "--chunks", "40", "--ingest-batch", "5"]
    )
    assert figures["chunks"] == 40 and figures["searches"] > 0 and figures["errors"] == {}
    assert figures["writer"]["episodes"] >= 5 and figures["writer"]["errors"] == 0
    assert figures["p50Ms"] <= figures["p95Ms"] and figures["serverTracebacks"] == 0
