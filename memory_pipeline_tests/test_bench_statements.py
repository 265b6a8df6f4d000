"""The statements benchmark still runs, against a loopback model server, and its two replays
keep their relation: a statement scored against the chunks never ranks below itself found by its
own channel alone (its score only grows; the chunks' only stay or shrink)."""

from __future__ import annotations

import json

import pytest

from memory_pipeline_tests.helpers import run_benchmark
from memory_pipeline_tests.support.loopback import LoopbackEmbeddingServer


@pytest.mark.slow
def test_bench_statements_runs_and_a_joined_statement_never_ranks_lower(tmp_path):
    out = tmp_path / "statements.json"
    with LoopbackEmbeddingServer(dim=384) as server:
        done = run_benchmark("bench_statements.py", "--embed-url", server.url, "--json", str(out))
    assert done.returncode == 0, done.stderr
    figures = json.loads(out.read_text())
    rows = figures["questions"]
    assert figures["statements"] == 14 and len(rows) == 13
    for row in rows:
        assert row["own_channel_rank"] is not None and row["joined_rank"] <= row["own_channel_rank"], row
        assert row["search_place"] is None or 1 <= row["search_place"] <= 8
    assert figures["summary"]["joined_first"] >= figures["summary"]["own_channel_first"]
    assert figures["labelled_without_statements"]["questions"] == 28
    assert "own channel only" in done.stdout
