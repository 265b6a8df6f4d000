"""The statements benchmark still runs, against a loopback model server, and its two replays
keep their relation: scored against the chunks, a statement never has more chunks before it than
found by its own channel alone (its score only grows; no chunk's grows). Other statements may
pass it: they join too."""

from __future__ import annotations

import json

import pytest

from memory_pipeline_tests.helpers import run_benchmark
from memory_pipeline_tests.support.loopback import LoopbackEmbeddingServer


@pytest.mark.slow
def test_bench_statements_runs_and_no_chunk_passes_a_joined_statement(tmp_path):
    out = tmp_path / "statements.json"
    with LoopbackEmbeddingServer(dim=384) as server:
        done = run_benchmark("bench_statements.py", "--embed-url", server.url, "--json", str(out))
    assert done.returncode == 0, done.stderr
    figures = json.loads(out.read_text())
    rows = figures["questions"]
    assert figures["statements"] == 14 and len(rows) == 13
    for row in rows:
        assert row["own_channel_rank"] is not None and row["joined_rank"] is not None, row
        assert row["chunks_ahead_joined"] <= row["chunks_ahead_own_channel"], row
        assert row["search_place"] is None or 1 <= row["search_place"] <= 8
    assert figures["labelled_without_statements"]["questions"] == 28
    assert "own channel only" in done.stdout
