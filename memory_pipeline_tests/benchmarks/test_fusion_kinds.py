"""Fusion held out by kind (``benchmarks/fusion_kinds.py``): the per-query vector weight reads
the vector channel's own lead, and a fold prefers a setting that keeps its training kinds level
with their best single channel."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
import fusion_kinds  # noqa: E402  (a benchmark script, importable for its replay)

from memory_pipeline.domain.calibration import Calibration  # noqa: E402

CALIBRATION = Calibration(query_floor=0.73, query_match=0.86, measured=True)


def scored(*cosines: float, keyword: float | None = None) -> dict:
    # One query word, in 1 of 10 chunks: the keyword scale's reach is 0.75 of its idf.
    return {
        "scores": {"vector": list(cosines), "keyword": [] if keyword is None else [keyword]},
        "dfs": [1],
        "chunks": 10,
        "unmatched": 0,
    }


def test_the_vector_weight_grows_only_with_a_clear_lead():
    setting = (2.0, 0.08, 0.06, None)
    span = 0.86 - 0.73
    assert fusion_kinds.vector_weight(scored(0.85, 0.85), setting, CALIBRATION) == 1.0
    assert fusion_kinds.vector_weight(scored(0.85, 0.85 - 0.05 * span), setting, CALIBRATION) == 1.0
    assert fusion_kinds.vector_weight(
        scored(0.85, 0.85 - 0.11 * span), setting, CALIBRATION
    ) == pytest.approx(2.0)
    assert fusion_kinds.vector_weight(scored(0.85, 0.6), setting, CALIBRATION) == 3.0
    assert fusion_kinds.vector_weight(scored(0.85, 0.6), fusion_kinds.TODAY, CALIBRATION) == 1.0
    # Against a keyword match at or above the cut the vector channel keeps today's weight.
    gated = (2.0, 0.08, 0.06, 0.5)
    assert fusion_kinds.vector_weight(scored(0.85, 0.6), gated, CALIBRATION) == 3.0
    assert fusion_kinds.vector_weight(scored(0.85, 0.6, keyword=0.1), gated, CALIBRATION) == 3.0
    assert fusion_kinds.vector_weight(scored(0.85, 0.6, keyword=5.0), gated, CALIBRATION) == 1.0


def labelled(kind: str, right: bool) -> dict:
    return {"kind": kind, "memory": kind}, {"first": float(right), "in3": float(right)}


def test_a_fold_prefers_the_setting_that_keeps_training_kinds_level():
    # Two kinds of two questions. "a" scores better on the objective but leaves kind x below
    # the vector channel alone; "b" keeps x level. Holding out y, the fold must take "b".
    items = [labelled("x", True)[0], labelled("x", True)[0]]
    items += [labelled("y", True)[0], labelled("y", True)[0]]

    def rows(*right: bool) -> list[dict]:
        return [{"first": float(r), "in3": float(r)} for r in right]

    table = {
        fusion_kinds.TODAY: rows(True, False, False, False),
        ("a",): rows(True, False, True, True),
        ("b",): rows(True, True, False, True),
    }
    singles = {
        "vector": rows(True, True, False, False),
        "keyword": rows(False, False, False, False),
    }
    folds = fusion_kinds.leave_one_kind_out(items, table, singles)
    assert folds["y"]["chosen"] == ["b"]
    assert folds["y"]["training_kinds_short"] == 0
    assert folds["y"]["held_out"] == {"first": 1, "questions": 2}
