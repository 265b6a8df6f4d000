"""How well one search result matches its question: strong, weak or none, from the evidence the
channels already measured, read against the embedding profile's calibration.

Fused scores are normalized within one search, so the best result of a question the memory
cannot answer still scores near the top of the scale. A grade is not relative to the search:

* the vector evidence is the result's cosine placed on the profile's own scale, the fraction of
  the way from ``query_floor`` (what the model gives a question and a passage about something
  else) to ``query_match`` (a question and the passage that answers it), both measured on the
  built-in probe set (``domain.calibration``): 0 at the floor, 1 at the match level, whatever
  the model's baseline;
* the keyword evidence is the share of the query's attainable BM25 its best chunk scores
  (``domain.evidence``): 1 when a chunk holds each of the question's words.

A result is ``none`` unless its vector position reaches ``VECTOR_CUT``, its keyword share
``KEYWORD_CUT``, or a date the question names holds it (the date channel listed it); one that
clears that is ``strong`` when either reaches its channel's full evidence (the model's typical
answer, ``STRONG_POSITION``; the keyword channel's ``evidence.KEYWORD_REACH``), ``weak``
otherwise. The two cut-offs were chosen leave-one-memory-out over the sample corpus and the
small memories, for the bundled model and a loopback model of another baseline together (one
pair for every model: the calibration carries what differs), allowing at most 5% of the
answerable questions' notes to be graded none (``benchmarks/bench_nomatch.py``). A question
asked in other words than its note's can sit as low as an unrelated one, so many unanswerable
questions still grade ``weak``: ``none`` is a firm no, ``weak`` is not a firm yes.
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
