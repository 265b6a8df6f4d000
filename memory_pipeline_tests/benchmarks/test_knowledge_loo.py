"""The leave-one-memory-out choice of what is true now's constants (``benchmarks/knowledge_loo.py``):
its replay is the product's function, and a fold never takes a setting that costs a training
memory a question."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import knowledge_loo  # noqa: E402  (a benchmark script, importable for its replay)


def item(memory: str, q: str, expect: str) -> dict:
    """A question whose fused first is the 2023 note of a subject told again in 2026."""
    return {
        "memory": memory,
        "q": q,
        "expect": expect,
        "order": ["old", "new", "other"],
        "title": {"old": "2023 note", "new": "2026 note", "other": "unrelated"},
        "written": {
            "old": "2023-03-01T00:00:00+00:00",
            "new": "2026-03-01T00:00:00+00:00",
            "other": "2025-01-01T00:00:00+00:00",
        },
        "closeness": {"old": 0.85, "new": 0.84, "other": 0.80},
        "score": {"old": 1.0, "new": 0.9, "other": 0.2},
        "likeness": {"new": 0.9, "other": 0.7},
        "medians": {"same": 0.97, "unrelated": 0.79},  # the bundled model's, about
    }


SETTING = (0.03, 0.6, 0.385, 3)  # the same-subject cut 0.385 of the way: 0.859


def test_the_replay_moves_the_latest_note_first_for_a_question_of_today():
    it = item("a", "which dentist do I go to?", "2026 note")
    assert knowledge_loo.replay(it, None)[0] == "2023 note"
    assert knowledge_loo.replay(it, SETTING)[0] == "2026 note"
    assert knowledge_loo.replay(it, (0.03, 0.6, 0.7, 3))[0] == "2023 note"  # cut 0.916: not alike
    # A model whose cosines run lower gets a lower cut: the same position groups its notes.
    low = {
        **it,
        "likeness": {"new": 0.6, "other": 0.2},
        "medians": {"same": 0.88, "unrelated": 0.18},
    }
    assert knowledge_loo.replay(low, SETTING)[0] == "2026 note"


def test_a_fold_refuses_a_setting_that_costs_a_training_memory():
    groups = {
        "gains": [item("gains", "which dentist do I go to?", "2026 note")] * 3,
        "loses": [item("loses", "what is the dentist like?", "2023 note")],
        "held": [item("held", "which dentist do I see?", "2026 note")],
    }
    scores = knowledge_loo.Scores(groups)
    assert scores.choose(["gains"], [None, SETTING]) == SETTING
    assert scores.choose(["gains", "loses"], [None, SETTING]) is None
