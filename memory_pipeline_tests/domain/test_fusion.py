"""Tests for rank fusion: exact RRF arithmetic, the recency and salience curves, and ordering."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory_pipeline.domain.fusion import (
    CHANNEL_WEIGHTS,
    DEFAULT_SALIENCE_WEIGHT,
    NEAR_TIE,
    RECENCY_FLOOR,
    RECENCY_HALF_LIFE_DAYS,
    RRF_K,
    ChunkFacts,
    Fused,
    fuse,
    normalized_scores,
    rank_step,
    recency_factor,
    reciprocal_rank_fusion,
    salience_factor,
)

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


def _facts(*keys: str, salience: float = 0.5, age_days: float = 0.0) -> dict[str, ChunkFacts]:
    return {key: ChunkFacts(salience, NOW - timedelta(days=age_days)) for key in keys}


# --- constants ---------------------------------------------------------------------------------


# The formula tests use the classic constants (Cormack et al.'s k = 60), not the shipped ones,
# which leave-one-conversation-out chose on LoCoMo (benchmarks/locomo_loo.py) and may change.
CLASSIC = {
    "k": 60,
    "weights": {"vector": 1.0, "keyword": 1.0, "graph": 0.7, "observation": 1.0, "belief": 0.7},
}


def test_constants():
    assert RRF_K == 60
    assert CHANNEL_WEIGHTS == {
        "vector": 1.0,
        "keyword": 1.0,
        "graph": 0.0,
        "date": 1.5,
        "observation": 0.5,
        "belief": 0.5,
    }
    assert rank_step(CHANNEL_WEIGHTS, RRF_K) > 0  # a zero weight is not the lightest channel
    assert RECENCY_HALF_LIFE_DAYS == 180
    assert 0 < RECENCY_FLOOR < 1


# --- reciprocal rank fusion --------------------------------------------------------------------


def test_rank_one_in_vector_and_keyword_is_two_over_61():
    assert reciprocal_rank_fusion({"vector": ["a"], "keyword": ["a"]}, **CLASSIC) == {"a": 2 / 61}


def test_graph_channel_weighs_point_seven():
    scores = reciprocal_rank_fusion({"graph": ["a", "b", "c"]}, **CLASSIC)
    assert scores == {"a": 0.7 / 61, "b": 0.7 / 62, "c": 0.7 / 63}


def test_ranks_are_one_based_positions():
    scores = reciprocal_rank_fusion({"vector": ["a", "b", "c"]}, **CLASSIC)
    assert scores == {"a": 1 / 61, "b": 1 / 62, "c": 1 / 63}


def test_key_in_one_channel_only_gets_that_channel_alone():
    scores = reciprocal_rank_fusion(
        {"vector": ["a", "b"], "keyword": ["b"], "graph": ["c"]}, **CLASSIC
    )
    assert scores["a"] == 1 / 61
    assert scores["b"] == 1 / 62 + 1 / 61
    assert scores["c"] == 0.7 / 61


def test_all_three_channels_sum():
    scores = reciprocal_rank_fusion(
        {"vector": ["x", "a"], "keyword": ["a"], "graph": ["y", "z", "a"]}, **CLASSIC
    )
    assert scores["a"] == pytest.approx(1 / 62 + 1 / 61 + 0.7 / 63, rel=1e-15)


def test_repeated_key_counts_once_at_its_best_rank():
    scores = reciprocal_rank_fusion({"vector": ["a", "b", "a", "a"]}, **CLASSIC)
    # "b" keeps position 2: a repeat takes a place in the list but adds nothing.
    assert scores == {"a": 1 / 61, "b": 1 / 62}


def test_custom_k_and_weights():
    scores = reciprocal_rank_fusion(
        {"vector": ["a"], "keyword": ["b", "a"]}, k=0, weights={"vector": 2.0, "keyword": 1.0}
    )
    assert scores == {"a": 2.0 / 1 + 1.0 / 2, "b": 1.0}


def test_empty_and_missing_channels_contribute_nothing():
    assert reciprocal_rank_fusion({}, **CLASSIC) == {}
    assert reciprocal_rank_fusion({"vector": [], "keyword": ["a"]}, **CLASSIC) == {"a": 1 / 61}


def test_channel_without_weight_is_refused():
    with pytest.raises(ValueError, match="no weight for channel 'sparse'"):
        reciprocal_rank_fusion({"sparse": ["a"]})


@pytest.mark.parametrize("k", [-1, float("nan"), float("inf"), True])
def test_bad_k_is_refused(k):
    with pytest.raises(ValueError, match="RRF k"):
        reciprocal_rank_fusion({"vector": ["a"]}, k=k)


def test_negative_weight_is_refused():
    with pytest.raises(ValueError, match="weight of channel 'vector'"):
        reciprocal_rank_fusion({"vector": ["a"]}, weights={"vector": -1.0})


# --- recency -----------------------------------------------------------------------------------


def test_recency_is_one_when_new_and_halves_the_decaying_part_each_half_life():
    decaying = 1 - RECENCY_FLOOR
    assert recency_factor(0) == 1.0
    assert recency_factor(180) == pytest.approx(RECENCY_FLOOR + decaying / 2)
    assert recency_factor(360) == pytest.approx(RECENCY_FLOOR + decaying / 4)
    assert recency_factor(90, half_life_days=90) == pytest.approx(RECENCY_FLOOR + decaying / 2)


def test_recency_with_explicit_floor_follows_the_formula():
    assert recency_factor(180, floor=0.6) == pytest.approx(0.8)
    assert recency_factor(540, floor=0.6) == pytest.approx(0.6 + 0.4 / 8)


def test_recency_is_monotone_and_never_reaches_the_floor_or_zero():
    ages = [0, 0.5, 1, 7, 30, 90, 180, 365, 730, 3650, 36500, 1e6, 1e300]
    factors = [recency_factor(age) for age in ages]
    assert all(a >= b for a, b in zip(factors, factors[1:]))
    assert all(a > b for a, b in zip(factors[:8], factors[1:8]))
    assert all(factor >= RECENCY_FLOOR > 0 for factor in factors)
    assert recency_factor(float("inf")) == RECENCY_FLOOR


@pytest.mark.parametrize("age", [-0.001, -1, -3650, float("-inf")])
def test_future_dates_count_as_new(age):
    assert recency_factor(age) == 1.0


@pytest.mark.parametrize(
    "kwargs",
    [
        {"age_days": float("nan")},
        {"age_days": 1, "half_life_days": 0},
        {"age_days": 1, "floor": 0},
        {"age_days": 1, "floor": 1.5},
        {"age_days": "3"},
    ],
)
def test_recency_rejects_bad_arguments(kwargs):
    age = kwargs.pop("age_days")
    with pytest.raises(ValueError):
        recency_factor(age, **kwargs)


# --- salience ----------------------------------------------------------------------------------


def test_salience_factor_is_one_at_the_neutral_salience_and_linear_around_it():
    assert salience_factor(0.5, 0.3) == 1.0
    assert salience_factor(1.0, 0.3) == pytest.approx(1.15)
    assert salience_factor(0.0, 0.3) == pytest.approx(0.85)
    assert salience_factor(1.0, 1.0) == 1.5
    assert salience_factor(0.0, 1.0) == 0.5


def test_salience_weight_zero_disables_salience():
    assert {salience_factor(s, 0.0) for s in (0.0, 0.2, 0.5, 1.0)} == {1.0}


@pytest.mark.parametrize(
    "salience, weight",
    [(1.2, 0.3), (-0.1, 0.3), (float("nan"), 0.3), (0.5, 1.1), (0.5, -0.1), (True, 0.3)],
)
def test_salience_factor_rejects_out_of_range(salience, weight):
    with pytest.raises(ValueError):
        salience_factor(salience, weight)


# --- fuse --------------------------------------------------------------------------------------


def test_fuse_adds_a_nudge_smaller_than_half_a_rank_step():
    facts = {
        "a": ChunkFacts(0.9, NOW - timedelta(days=180)),
        "b": ChunkFacts(0.5, NOW),
    }
    fused = fuse({"vector": ["a", "b"], "keyword": ["a"]}, facts, now=NOW, **CLASSIC)
    by_key = {item.key: item for item in fused}
    # The lightest channel that returned something (vector and keyword, 1.0), not graph (0.7),
    # which the policy weighs but which returned nothing.
    step = 1.0 * (1 / 61 - 1 / 62)
    assert rank_step({"vector": 1.0, "keyword": 1.0}, 60) == pytest.approx(step)
    assert by_key["a"].rrf == 2 / 61
    span = DEFAULT_SALIENCE_WEIGHT + (1 - RECENCY_FLOOR)
    nudge = (DEFAULT_SALIENCE_WEIGHT * 0.4 - (1 - RECENCY_FLOOR) / 2) / span
    assert by_key["a"].score == pytest.approx(2 / 61 + NEAR_TIE * step * nudge)
    assert by_key["a"].ranks == {"vector": 1, "keyword": 1}
    # Neutral salience, today: no nudge at all.
    assert by_key["b"] == Fused(key="b", score=1 / 62, rrf=1 / 62, ranks={"vector": 2})
    assert [item.key for item in fused] == ["a", "b"]


def test_a_channel_that_returned_nothing_does_not_change_the_near_tie_band():
    # The band is measured on the channels that ran: a light weight for the observation channel
    # of a memory without statements must not change how keyword's ties break.
    facts = {"old": ChunkFacts(0.9, NOW - timedelta(days=400)), "new": ChunkFacts(0.2, NOW)}
    ranked, scores = {"keyword": ["old", "new"]}, {"keyword": [2.0, 2.0]}
    heavy = {"keyword": 1.0, "observation": 1.0}
    light = {"keyword": 1.0, "observation": 0.01}
    for method in ({"scores": scores}, {}):
        with_heavy = fuse(ranked, facts, now=NOW, weights=heavy, **method)
        with_light = fuse(
            {**ranked, "observation": []},
            facts,
            now=NOW,
            weights=light,
            **({"scores": {**scores, "observation": []}} if method else {}),
        )
        assert [(f.key, f.score) for f in with_heavy] == [(f.key, f.score) for f in with_light]
    # Once the light channel does return something, it is the lightest that ran: the band narrows.
    both = fuse(
        {**ranked, "observation": ["x"]},
        {**facts, **_facts("x")},
        now=NOW,
        weights=light,
        scores={**scores, "observation": [1.0]},
    )
    alone = fuse(ranked, facts, now=NOW, weights=light, scores=scores)
    assert {f.key: f.score for f in both}["old"] != {f.key: f.score for f in alone}["old"]


def test_fuse_uses_the_given_salience_weight_and_half_life():
    facts = {"a": ChunkFacts(1.0, NOW - timedelta(days=30))}
    (only,) = fuse(
        {"graph": ["a"]}, facts, now=NOW, salience_weight=0.0, half_life_days=30, **CLASSIC
    )
    step = 0.7 * (1 / 61 - 1 / 62)
    nudge = -((1 - RECENCY_FLOOR) / 2) / (1 - RECENCY_FLOOR)
    assert only.score == pytest.approx(0.7 / 61 + NEAR_TIE * step * nudge)


def test_salience_and_recency_decide_an_exact_rank_tie():
    # Ranks 1 + 3 against 3 + 1 of two equally weighted channels: the same RRF sum; the newer, more salient chunk comes first.
    ranked = {"vector": ["old", "x", "new"], "keyword": ["new", "x", "old"]}
    facts = {
        "old": ChunkFacts(0.5, NOW - timedelta(days=400)),
        "new": ChunkFacts(0.5, NOW),
        **_facts("x"),
    }
    order = [item.key for item in fuse(ranked, facts, now=NOW, **CLASSIC)]
    # 1 + 3 is a hair above x's 2 + 2: today's "new" stays above x, the 400-day-old one drops below.
    assert order == ["new", "x", "old"]
    facts_salient = {**facts, "old": ChunkFacts(1.0, NOW), "new": ChunkFacts(0.0, NOW)}
    order = [item.key for item in fuse(ranked, facts_salient, now=NOW, **CLASSIC)]
    assert order.index("old") < order.index("new")


def test_old_memory_ranked_first_by_two_channels_beats_a_new_chunk_tenth_in_one():
    new_filler = [f"filler{i}" for i in range(8)]
    ranked = {
        "vector": ["old", *new_filler, "new"],  # "new" is 10th
        "keyword": ["old"],
    }
    facts = {
        # Twenty years old, and the writer thought it unimportant; the rival is brand new and
        # marked as important as can be: the worst case for the old chunk.
        "old": ChunkFacts(0.0, NOW - timedelta(days=20 * 365)),
        "new": ChunkFacts(1.0, NOW),
        **_facts(*new_filler),
    }
    # 0.5 is the largest salience weight of any bundled policy.
    for weight in (0.0, 0.3, 0.5):
        fused = fuse(ranked, facts, now=NOW, salience_weight=weight)
        order = [item.key for item in fused]
        assert order.index("old") < order.index("new"), weight
        assert order[0] == "old"


def test_agreement_of_vector_and_keyword_beats_any_single_channel_hit_at_default_weight():
    ranked = {"vector": ["old", "new"], "keyword": ["old"], "graph": ["new2"]}
    facts = {
        "old": ChunkFacts(0.0, NOW - timedelta(days=100 * 365)),
        "new": ChunkFacts(1.0, NOW),
        "new2": ChunkFacts(1.0, NOW),
    }
    assert fuse(ranked, facts, now=NOW)[0].key == "old"


def test_neighbouring_ranks_of_one_channel_are_not_a_near_tie():
    # One rank apart is a whole step: recency does not reorder a channel's own list.
    ranked = {"vector": ["old", "new"]}
    facts = {"old": ChunkFacts(0.0, NOW - timedelta(days=30 * 365)), "new": ChunkFacts(1.0, NOW)}
    for weight in (0.0, 0.1, 1.0):
        assert [item.key for item in fuse(ranked, facts, now=NOW, salience_weight=weight)] == [
            "old",
            "new",
        ]


def test_the_sample_corpus_dentist_case_first_by_both_channels_stays_first():
    # The example the README gave before this rule: "Dentist" ranks 1 + 1, "1:1 with Tomás" 2 + 4 and
    # newer and more salient; the multiplying factors used to put the 1:1 first.
    ranked = {"vector": ["dentist", "tomas"], "keyword": ["dentist", "a", "b", "tomas"]}
    facts = {
        "dentist": ChunkFacts(0.3, NOW - timedelta(days=200)),
        "tomas": ChunkFacts(0.9, NOW),
        **_facts("a", "b"),
    }
    assert fuse(ranked, facts, now=NOW, salience_weight=1.0)[0].key == "dentist"


def test_future_dated_chunk_is_not_boosted_past_new():
    ranked = {"vector": ["future", "today"], "keyword": ["today", "future"]}
    facts = {"future": ChunkFacts(0.5, NOW + timedelta(days=400)), "today": ChunkFacts(0.5, NOW)}
    fused = fuse(ranked, facts, now=NOW, **CLASSIC)
    assert fused[0].score == fused[1].score  # both factor 1.0, same RRF


def test_ties_break_by_best_single_rank_then_key():
    # k=0 makes exact ties easy: 1/1 == 1/2 + 1/2.
    weights = {"vector": 1.0, "keyword": 1.0, "graph": 1.0}
    ranked = {"vector": ["z", "m"], "keyword": ["b", "a"], "graph": ["c", "a"]}
    facts = _facts("z", "m", "a", "b", "c")
    fused = fuse(ranked, facts, now=NOW, k=0, weights=weights)
    assert fused[0].score == fused[1].score == fused[2].score == fused[3].score == 1.0
    # b and c and z share best rank 1 (key order), a's best rank is 2.
    assert [item.key for item in fused] == ["b", "c", "z", "a", "m"]


def test_missing_facts_raise_key_error_naming_the_keys():
    with pytest.raises(KeyError, match=r"no ChunkFacts for 2 ranked keys: 'b', 'c'"):
        fuse({"vector": ["a", "b"], "keyword": ["c"]}, _facts("a"), now=NOW)


def test_extra_facts_are_ignored_and_nothing_ranked_gives_nothing():
    assert fuse({}, _facts("a"), now=NOW) == []
    assert [item.key for item in fuse({"vector": ["a"]}, _facts("a", "b"), now=NOW)] == ["a"]


def test_fuse_validates_salience_weight():
    with pytest.raises(ValueError, match="salience weight"):
        fuse({"vector": ["a"]}, _facts("a"), now=NOW, salience_weight=2.0)


def test_fused_is_hashable_and_reports_best_rank():
    item = Fused(key="a", score=0.1, rrf=0.1, ranks={"vector": 3, "graph": 2})
    assert item.best_rank == 2
    assert hash(item) == hash(Fused(key="a", score=0.1, rrf=0.1, ranks={}))


# --- properties --------------------------------------------------------------------------------

_keys = st.sampled_from([f"k{i}" for i in range(12)])
_ranked = st.dictionaries(
    st.sampled_from(["vector", "keyword", "graph"]), st.lists(_keys, max_size=15), max_size=3
)


@st.composite
def _fusion_input(draw):
    ranked = draw(_ranked)
    keys = sorted({key for keys in ranked.values() for key in keys})
    facts = {
        key: ChunkFacts(
            draw(st.floats(0, 1)),
            NOW - timedelta(days=draw(st.floats(-30, 20_000, allow_nan=False))),
        )
        for key in keys
    }
    order = draw(st.permutations(list(ranked)))
    weight = draw(st.floats(0, 1))
    return ranked, facts, order, weight


@settings(max_examples=300, deadline=None)
@given(_fusion_input())
def test_fused_order_ignores_channel_order_and_lists_every_key_once(case):
    ranked, facts, order, weight = case
    fused = fuse(ranked, facts, now=NOW, salience_weight=weight)
    reordered = fuse(
        {channel: ranked[channel] for channel in order}, facts, now=NOW, salience_weight=weight
    )
    assert fused == reordered
    keys = [item.key for item in fused]
    assert len(keys) == len(set(keys))
    assert set(keys) == {key for keys in ranked.values() for key in keys}
    assert all(a.score >= b.score for a, b in zip(fused, fused[1:]))
    for item in fused:
        # Each rank is the key's first position in that channel's list.
        assert item.ranks == {
            channel: ranked[channel].index(item.key) + 1
            for channel in ranked
            if item.key in ranked[channel]
        }
        assert item.score > 0 or item.rrf == 0


@st.composite
def _first_everywhere(draw):
    """Channels that all put one key first; any ages, saliences, weights and k."""
    channels = draw(
        st.lists(
            st.sampled_from(["vector", "keyword", "graph"]), min_size=1, max_size=3, unique=True
        )
    )
    others = [f"k{i}" for i in range(12)]
    ranked = {ch: ["top", *draw(st.lists(st.sampled_from(others), max_size=15))] for ch in channels}
    weights = {ch: draw(st.floats(0.05, 3)) for ch in ("vector", "keyword", "graph")}
    keys = {key for keys in ranked.values() for key in keys}
    facts = {
        key: ChunkFacts(draw(st.floats(0, 1)), NOW - timedelta(days=draw(st.floats(-30, 20_000))))
        for key in keys
    }
    # Each channel's scores, best first as channels return them; ties (even with the top) allowed.
    scores = {
        ch: sorted(
            draw(st.lists(st.floats(-50, 50), min_size=len(keys), max_size=len(keys))), reverse=True
        )
        for ch, keys in ranked.items()
    }
    return ranked, facts, weights, draw(st.floats(0, 1)), draw(st.floats(0, 200)), scores


@settings(max_examples=300, deadline=None)
@given(_first_everywhere())
def test_a_key_every_channel_put_first_is_first(case):
    ranked, facts, weights, salience_weight, k, scores = case
    fused = fuse(ranked, facts, now=NOW, salience_weight=salience_weight, weights=weights, k=k)
    assert fused[0].key == "top"
    by_scores = fuse(
        ranked, facts, now=NOW, salience_weight=salience_weight, weights=weights, scores=scores
    )
    assert by_scores[0].key == "top"
    # And with the default policy's constants, as search fuses (with the channels' scores):
    assert fuse(ranked, facts, now=NOW)[0].key == "top"
    assert fuse(ranked, facts, now=NOW, scores=scores)[0].key == "top"


def test_channels_that_all_weigh_zero_count_one_each_when_searched_alone():
    # graph weighs 0 by default: alone it still orders by its own ranks, not by recency.
    facts = {"old": ChunkFacts(0.0, NOW - timedelta(days=3000)), "new": ChunkFacts(1.0, NOW)}
    assert CHANNEL_WEIGHTS["graph"] == 0
    assert [f.key for f in fuse({"graph": ["old", "new"]}, facts, now=NOW)] == ["old", "new"]
    # Next to a weighted channel it adds nothing.
    mixed = fuse({"graph": ["old"], "keyword": ["new"]}, facts, now=NOW)
    assert [f.key for f in mixed] == ["new", "old"] and mixed[1].rrf == 0


# --- CombSUM of normalized scores ----------------------------------------------------------------


def test_scores_are_normalized_min_max_and_equal_scores_fall_back_to_places():
    assert normalized_scores([8.0, 5.0, 2.0]) == [1.0, 0.5, 0.0]
    assert normalized_scores([0.9]) == [1.0]
    assert normalized_scores([1.0, 1.0, 1.0, 1.0]) == [1.0, 0.75, 0.5, 0.25]
    assert normalized_scores([]) == []
    with pytest.raises(ValueError, match="finite"):
        normalized_scores([1.0, float("nan")])
    assert normalized_scores([1.0, 1.0, 1.0], flat=True) == [1.0, 1.0, 1.0]
    assert normalized_scores([8.0, 5.0, 2.0], flat=True) == [1.0, 0.5, 0.0]


def test_every_chunk_of_the_date_channel_counts_alike_and_graphs_equal_scores_are_an_order():
    # The date channel lists the chunks of a named day: its last counts as much as its first.
    ranked = {"keyword": ["z", "b", "a"], "date": ["a", "b"], "graph": ["a", "b"]}
    scores = {"keyword": [3.0, 2.0, 1.0], "date": [1.0, 1.0], "graph": [1.0, 1.0]}
    weights = {"keyword": 1.0, "date": 1.0, "graph": 1.0}
    sums = {
        f.key: f.rrf
        for f in fuse(ranked, _facts("a", "b", "z"), now=NOW, weights=weights, scores=scores)
    }
    assert sums == pytest.approx({"z": 1.0, "b": 0.5 + 1.0 + 0.5, "a": 0.0 + 1.0 + 1.0})


def test_combsum_adds_weighted_normalized_scores():
    ranked = {"vector": ["a", "b", "c"], "keyword": ["b", "c"]}
    scores = {"vector": [0.9, 0.8, 0.5], "keyword": [12.0, 3.0]}
    fused = fuse(
        ranked,
        _facts("a", "b", "c"),
        now=NOW,
        weights={"vector": 0.5, "keyword": 1.0},
        scores=scores,
    )
    assert {f.key: f.rrf for f in fused} == pytest.approx(
        {"a": 0.5, "b": 0.5 * 0.75 + 1.0, "c": 0.0}
    )
    assert [f.key for f in fused] == ["b", "a", "c"]


def test_a_confident_channel_outweighs_the_other_channels_rank_one():
    # Keyword's first far above its second; vector's ranks nearly equal: RRF would tie a and b.
    ranked = {"keyword": ["a", "b", "x"], "vector": ["b", "a", "x"]}
    scores = {"keyword": [20.0, 2.0, 1.0], "vector": [0.83, 0.82, 0.70]}
    weights = {"keyword": 1.0, "vector": 1.0}
    assert [
        f.key for f in fuse(ranked, _facts("a", "b", "x"), now=NOW, weights=weights, scores=scores)
    ][0] == "a"


def test_combsum_scores_must_match_the_keys():
    with pytest.raises(ValueError, match="2 keys but 1 scores"):
        fuse({"vector": ["a", "b"]}, _facts("a", "b"), now=NOW, scores={"vector": [1.0]})
