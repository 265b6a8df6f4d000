"""The no-match benchmark still runs: its quick mode through the product's commands against a
loopback model server, and its data keeps the rules its README states."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from memory_pipeline_tests.helpers import run_benchmark

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import bench_nomatch  # noqa: E402  (a benchmark script, importable for its loader)


def test_the_unanswerable_set_is_large_varied_and_spread_over_every_memory():
    memories, questions = bench_nomatch.load_questions()
    unanswerable = [q for q in questions if q["expect"] is None]
    answerable = [q for q in questions if q["expect"] is not None]
    assert len(unanswerable) >= 60 and len(answerable) >= 60
    assert len({q["q"] for q in questions}) == len(questions)
    for name in memories:
        assert sum(q["memory"] == name for q in unanswerable) >= 12, name
    lines = (bench_nomatch.DATA / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    kinds = {json.loads(line)["kind"] for line in lines if line.strip()}
    assert kinds == {"unrelated", "absent", "language"}


def test_cut_offs_are_chosen_on_training_memories_only():
    # Two memories whose evidence wants opposite cut-offs: each fold must use the other's.
    def row(memory, expect, vector):
        evidence = {"vector": vector, "keyword": None, "date": False}
        return {"memory": memory, "q": f"{memory}{vector}{expect}", "expect": expect,
                "results": [{"title": "t", "grade": None, "evidence": evidence}]}  # fmt: skip

    rows = [row("a", "t", 0.9), row("a", None, 0.6), row("b", "t", 0.5), row("b", None, 0.2)]
    totals, folds = bench_nomatch.leave_one_out({"p": rows})
    chosen = {f["held_out"]: f["vector_cut"] for f in folds}
    # On "b" alone the best cut lies in (0.2, 0.5]; on "a" alone in (0.6, 0.9].
    assert 0.2 < chosen["a"] <= 0.5 and 0.6 < chosen["b"] <= 0.9
    # Held out, "a"'s unanswerable (0.6) clears b's cut, and "b"'s answerable note (0.5) fails
    # a's: neither fold looks at its own memory.
    assert totals["p"]["reported_none"] == 1 and totals["p"]["expected_graded_none"] == 1


@pytest.mark.slow
def test_bench_nomatch_quick_runs_and_reports_held_out_figures(tmp_path):
    out = tmp_path / "nomatch.json"
    done = run_benchmark(
        "bench_nomatch.py", "--quick", "--profiles", "words", "--json", str(out), timeout=900
    )
    assert done.returncode == 0, done.stderr
    figures = json.loads(out.read_text())
    held = figures["held_out"]["words"]
    assert held["unanswerable"] == len(bench_nomatch.QUICK_MEMORIES) * bench_nomatch.QUICK_QUESTIONS
    assert 0 <= held["reported_none"] <= held["unanswerable"]
    assert held["answerable_found"] + held["answerable_missed"] == held["unanswerable"]
    assert {f["held_out"] for f in figures["folds"]} == set(bench_nomatch.QUICK_MEMORIES)
    rows = figures["rows"]["words"]
    # Every result came back graded, with the evidence behind its grade.
    assert all(r["match"]["grade"] in ("strong", "weak", "none") for r in rows)
    assert all(x["evidence"]["vector"] is not None for r in rows for x in r["results"][:1])
    assert "held out" in done.stdout
