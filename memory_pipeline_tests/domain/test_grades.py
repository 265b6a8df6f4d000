"""A result's grade: its cosine placed on the profile's own scale and its share of the query's
keyword weight, against the cut-offs; the same evidence grades alike under models of other
baselines."""

from __future__ import annotations

import math

import pytest

from memory_pipeline.domain import grades
from memory_pipeline.domain.calibration import Calibration
from memory_pipeline.domain.grades import Cuts, Evidence

E5_LIKE = Calibration(query_floor=0.75, query_match=0.87, measured=True, reason=None)
WORDS_LIKE = Calibration(query_floor=0.02, query_match=0.32, measured=True, reason=None)


def test_position_is_the_fraction_from_floor_to_match_level():
    assert grades.position(0.75, E5_LIKE) == pytest.approx(0.0)
    assert grades.position(0.87, E5_LIKE) == pytest.approx(1.0)
    assert grades.position(0.81, E5_LIKE) == pytest.approx(0.5)
    assert grades.position(0.70, E5_LIKE) < 0 < 1 < grades.position(0.95, E5_LIKE)


def test_a_cosine_of_one_model_means_nothing_to_another():
    # 0.8 is barely above the unrelated baseline of an e5-like model, far beyond the answer
    # level of a word-vector model: the grade follows each model's calibration.
    assert grades.grade(Evidence(vector=grades.position(0.76, E5_LIKE))) == grades.NONE
    assert grades.grade(Evidence(vector=grades.position(0.8, WORDS_LIKE))) == grades.STRONG
    same_place = [grades.position(c.query_floor + 0.6 * (c.query_match - c.query_floor), c)
                  for c in (E5_LIKE, WORDS_LIKE)]  # fmt: skip
    assert {grades.grade(Evidence(vector=p)) for p in same_place} == {grades.WEAK}


def test_grades_follow_the_cut_offs():
    cuts = Cuts(vector=0.4, keyword=0.3, strong_position=1.0, strong_keyword=0.75)
    assert grades.grade(Evidence(vector=0.39), cuts) == grades.NONE
    assert grades.grade(Evidence(vector=0.4), cuts) == grades.WEAK
    assert grades.grade(Evidence(vector=1.0), cuts) == grades.STRONG
    assert grades.grade(Evidence(keyword=0.29), cuts) == grades.NONE
    assert grades.grade(Evidence(keyword=0.3), cuts) == grades.WEAK
    assert grades.grade(Evidence(keyword=0.75), cuts) == grades.STRONG
    # Either channel's evidence is enough; a date the question names is weak evidence.
    assert grades.grade(Evidence(vector=0.1, keyword=0.5), cuts) == grades.WEAK
    assert grades.grade(Evidence(vector=-2.0, date=True), cuts) == grades.WEAK
    # Nothing measured at all: no match.
    assert grades.grade(Evidence(), cuts) == grades.NONE


def test_keyword_share_reads_bm25_against_the_attainable():
    assert grades.keyword_share(3.0, 6.0) == pytest.approx(0.5)
    assert grades.keyword_share(-0.1, 6.0) == 0.0
    with pytest.raises(ValueError):
        grades.keyword_share(1.0, 0.0)
    with pytest.raises(ValueError):
        grades.position(math.nan, E5_LIKE)
    with pytest.raises(ValueError):
        grades.position(0.8, Calibration(query_floor=0.8, query_match=0.8))


def test_the_best_grade_of_a_search():
    assert grades.best([grades.NONE, grades.WEAK, grades.NONE]) == grades.WEAK
    assert grades.best([grades.WEAK, grades.STRONG]) == grades.STRONG
    assert grades.best([grades.NONE]) == grades.NONE
    assert grades.best([]) == grades.NONE


def test_evidence_serializes_rounded():
    assert Evidence(vector=0.123456, keyword=None, date=True).to_json() == {
        "vector": 0.1235,
        "keyword": None,
        "date": True,
    }
