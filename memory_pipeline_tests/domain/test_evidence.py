"""The keyword channel's evidence scale (``domain.evidence``) and how fusion reads a channel
against a scale (``fusion.ChannelScale``)."""

from __future__ import annotations

import datetime as dt
import math

import pytest

from memory_pipeline.domain import evidence, fusion

NOW = dt.datetime(2026, 6, 1, tzinfo=dt.UTC)


def facts(*keys):
    return {k: fusion.ChunkFacts(0.5, NOW) for k in keys}


def test_the_attainable_bm25_is_the_idf_of_each_word_once():
    # bm25_weight at tf 1 and average length is exactly idf, whatever k1 and b.
    assert evidence.attainable_bm25([1, 3], 10) == pytest.approx(
        math.log(1 + 9.5 / 1.5) + math.log(1 + 7.5 / 3.5)
    )
    with_unmatched = evidence.attainable_bm25([1], 10, 2, unmatched_share=0.5)
    assert with_unmatched == pytest.approx(math.log(1 + 9.5 / 1.5) + 2 * 0.5 * math.log(1 + 21))


def test_keyword_scale_needs_statistics_and_sits_between_floor_and_reach():
    assert evidence.keyword_scale([], 10) is None
    assert evidence.keyword_scale([1], 0) is None
    scale = evidence.keyword_scale([1, 2], 20, 1, floor=0.1, reach=0.75, unmatched_share=0.75)
    attainable = evidence.attainable_bm25([1, 2], 20, 1, unmatched_share=0.75)
    assert scale == fusion.ChannelScale(0.1 * attainable, 0.75 * attainable)
    assert scale.strength(0.0) == 0.0 and scale.strength(attainable) == 1.0
    assert scale.strength(0.425 * attainable) == pytest.approx(0.5)


def test_a_scale_must_rise():
    with pytest.raises(ValueError):
        fusion.ChannelScale(1.0, 1.0)
    with pytest.raises(ValueError):
        fusion.ChannelScale(0.0, math.inf)


def test_a_lone_weak_candidate_is_not_normalized_to_one():
    scale = fusion.ChannelScale(0.0, 10.0)
    assert fusion.normalized_scores([2.0]) == [1.0]
    assert fusion.normalized_scores([2.0], scale=scale) == [pytest.approx(0.2)]
    # The channel's own spread is kept, scaled by its best score's strength.
    assert fusion.normalized_scores([4.0, 3.0, 2.0], scale=scale) == pytest.approx([0.4, 0.2, 0.0])
    assert fusion.normalized_scores([20.0, 10.0], scale=scale) == [1.0, 0.0]


def test_a_weak_keyword_match_no_longer_beats_the_vectors_first():
    # The case: one incidental word matches note b; the vector channel put a first.
    ranked = {"vector": ["a", "b", "c"], "keyword": ["b"]}
    scores = {"vector": [0.85, 0.84, 0.80], "keyword": [1.5]}
    plain = fusion.fuse(ranked, facts("a", "b", "c"), now=NOW, scores=scores)
    assert plain[0].key == "b"
    scaled = fusion.fuse(
        ranked,
        facts("a", "b", "c"),
        now=NOW,
        scores=scores,
        scales={"keyword": evidence.keyword_scale([2, 1, 1], 18, 3)},
    )
    assert scaled[0].key == "a"
    # A match covering the question's words keeps the keyword channel's whole weight.
    strong = fusion.fuse(
        ranked,
        facts("a", "b", "c"),
        now=NOW,
        scores={"vector": scores["vector"], "keyword": [evidence.attainable_bm25([2], 18)]},
        scales={"keyword": evidence.keyword_scale([2], 18)},
    )
    assert strong[0].key == "b"
