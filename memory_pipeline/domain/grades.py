"""How well one search result matches its question: strong, weak or none, from the evidence the
channels already measured, read against the embedding profile's calibration.

Fused scores are relative to one search; a grade is not. The vector evidence is the result's
cosine placed between the profile's ``query_floor`` and ``query_match`` (``domain.calibration``),
the keyword evidence the share of the query's attainable BM25 its best chunk scores
(``domain.evidence``). ``none`` unless one reaches its cut (or a date the question names holds
the result); ``strong`` when one reaches its channel's full evidence. The cuts were chosen
leave-one-memory-out by ``benchmarks/bench_nomatch.py``. ``none`` is a firm no; ``weak`` is not
a firm yes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from memory_pipeline.domain.calibration import Calibration
from memory_pipeline.domain.evidence import KEYWORD_REACH

STRONG = "strong"
WEAK = "weak"
NONE = "none"
ORDER = (NONE, WEAK, STRONG)  # worst first

STRONG_POSITION = 1.0
VECTOR_CUT = 0.4
KEYWORD_CUT = 0.3


@dataclass(frozen=True)
class Evidence:
    """What the channels measured for one result: ``vector``, its cosine's position between the
    calibration's floor and match level (None: the vector channel did not list it); ``keyword``,
    its share of the query's attainable BM25 (None: the keyword channel did not list it or had
    no scale); ``date``: the date channel listed it."""

    vector: float | None = None
    keyword: float | None = None
    date: bool = False

    def to_json(self) -> dict:
        def rounded(value: float | None) -> float | None:
            return None if value is None else round(value, 4)

        return {
            "vector": rounded(self.vector),
            "keyword": rounded(self.keyword),
            "date": self.date,
        }


@dataclass(frozen=True)
class Cuts:
    """The cut-offs a grade reads (the module's constants by default; the benchmark tries
    others)."""

    vector: float = VECTOR_CUT
    keyword: float = KEYWORD_CUT
    strong_position: float = STRONG_POSITION
    strong_keyword: float = KEYWORD_REACH


def position(cosine: float, calibration: Calibration) -> float:
    """``cosine`` as the fraction of the way from the calibration's query floor to its match
    level (below 0 under the floor, above 1 beyond the match level)."""
    span = calibration.query_match - calibration.query_floor
    if not (math.isfinite(cosine) and span > 0):
        raise ValueError(f"cannot place cosine {cosine!r} on {calibration!r}")
    return (cosine - calibration.query_floor) / span


def keyword_share(bm25: float, attainable: float) -> float:
    """A BM25 score as the share of the query's attainable BM25 (``evidence.attainable_bm25``)."""
    if not (math.isfinite(bm25) and attainable > 0):
        raise ValueError(f"cannot read BM25 {bm25!r} against attainable {attainable!r}")
    return max(bm25, 0.0) / attainable


def grade(evidence: Evidence, cuts: Cuts = Cuts()) -> str:
    """``strong``, ``weak`` or ``none`` for one result (see the module docstring)."""
    vector = -math.inf if evidence.vector is None else evidence.vector
    keyword = -math.inf if evidence.keyword is None else evidence.keyword
    if not (vector >= cuts.vector or keyword >= cuts.keyword or evidence.date):
        return NONE
    if vector >= cuts.strong_position or keyword >= cuts.strong_keyword:
        return STRONG
    return WEAK


def best(grades: list[str]) -> str:
    """The best of some grades; ``none`` for no grades at all (nothing matched)."""
    return max(grades, key=ORDER.index, default=NONE)
