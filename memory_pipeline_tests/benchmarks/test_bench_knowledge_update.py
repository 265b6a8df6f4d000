"""The knowledge-update benchmark still runs: its quick mode through the product's commands
against a loopback model server, and its data keeps the rules its README states."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import pytest

from memory_pipeline_tests.helpers import run_benchmark
from memory_pipeline_tests.support.loopback import LoopbackEmbeddingServer

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import bench_knowledge_update  # noqa: E402  (a benchmark script, importable for its loader)


def test_three_memories_of_30_to_50_notes_with_a_third_of_questions_about_the_past():
    memories = bench_knowledge_update.load()
    assert len(memories) >= 3
    tenses: Counter = Counter()
    for memory in memories:
        assert 30 <= len(memory.titles) <= 50, memory.name
        assert len(memory.questions) >= 30, memory.name
        assert len({q["q"] for q in memory.questions}) == len(memory.questions)
        assert all(2 <= len(ids) <= 4 for ids in memory.subjects.values()), memory.name
        tenses.update(q["tense"] for q in memory.questions)
    assert sum(tenses.values()) >= 90
    assert 0.6 <= tenses["present"] / sum(tenses.values()) <= 0.7


def test_a_present_question_expecting_an_older_note_is_refused(tmp_path):
    data = bench_knowledge_update.DATA
    notes = (data / "maya.jsonl").read_text("utf-8")
    subjects = json.loads((data / "maya.subjects.json").read_text("utf-8"))
    older = subjects["home"][0]
    (tmp_path / "maya.jsonl").write_text(notes, "utf-8")
    (tmp_path / "maya.subjects.json").write_text(json.dumps(subjects), "utf-8")
    (tmp_path / "maya.questions.json").write_text(
        json.dumps([{"q": "where do I live?", "expect": older, "tense": "present"}]), "utf-8"
    )
    with pytest.raises(SystemExit, match="latest note"):
        bench_knowledge_update.load(tmp_path)


@pytest.mark.slow
def test_bench_knowledge_update_quick_runs_every_row(tmp_path):
    out = tmp_path / "ku.json"
    with LoopbackEmbeddingServer(dim=384) as server:
        done = run_benchmark(
            "bench_knowledge_update.py", "--quick", "--embed-url", server.url, "--json", str(out)
        )
    assert done.returncode == 0, done.stderr
    figures = json.loads(out.read_text())
    scores = figures["scores"]["all"]
    assert scores["questions"] == bench_knowledge_update.QUICK_QUESTIONS
    assert scores["present"] == scores["past"] == bench_knowledge_update.QUICK_QUESTIONS // 2
    for row in bench_knowledge_update.ROWS:
        s = scores[row]
        assert 0 <= s["present_first"] + s["past_first"] <= s["in_3"] <= scores["questions"]
    assert figures["episodes"] >= 30 and figures["chunks"] >= figures["episodes"]
    assert "fused default" in done.stdout
