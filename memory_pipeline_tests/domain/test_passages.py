"""Sewing ranked chunks into passages: a pure function over (episode, start, end) hits."""

from __future__ import annotations

from memory_pipeline.domain.chunking import chunk_body
from memory_pipeline.domain.passages import Hit, sew


def hits(*specs):
    return [Hit(key, episode, start, end) for key, episode, start, end in specs]


def test_adjacent_chunks_of_one_episode_become_one_passage_with_the_best_hit():
    out = sew(hits(("b", 1, 10, 20), ("x", 2, 0, 5), ("a", 1, 0, 10), ("c", 1, 20, 30)), limit=8)
    assert [(p.episode_id, p.start, p.end, p.keys, p.best.key) for p in out] == [
        (1, 0, 30, ["a", "b", "c"], "b"),
        (2, 0, 5, ["x"], "x"),
    ]


def test_with_passages_asked_for_non_adjacent_chunks_and_other_episodes_stay_apart():
    out = sew(hits(("a", 1, 0, 10), ("c", 1, 20, 30), ("d", 2, 10, 20)), limit=8, distinct=False)
    assert [p.keys for p in out] == [["a"], ["c"], ["d"]]


def test_an_episode_holds_one_passage_and_the_limit_goes_to_other_episodes():
    ranked = hits(("a", 1, 0, 10), ("c", 1, 20, 30), ("e", 1, 40, 50), ("d", 2, 10, 20))
    assert [p.keys for p in sew(ranked, limit=2)] == [["a"], ["d"]]
    assert [p.keys for p in sew(ranked, limit=2, distinct=False)] == [["a"], ["c"]]


def test_a_passed_over_chunk_joins_its_episode_passage_when_a_later_hit_bridges_to_it():
    ranked = hits(("a", 1, 0, 10), ("c", 1, 20, 30), ("x", 2, 0, 5), ("b", 1, 10, 20))
    out = sew(ranked, limit=8)
    assert [(p.keys, p.best.key, p.start, p.end) for p in out] == [
        (["a", "b", "c"], "a", 0, 30),
        (["x"], "x", 0, 5),
    ]


def test_a_chunk_between_two_passages_bridges_them_into_the_better_ranked_one():
    out = sew(hits(("c", 1, 20, 30), ("x", 2, 0, 5), ("a", 1, 0, 10), ("b", 1, 10, 20)), limit=8)
    assert [(p.keys, p.best.key, p.rank) for p in out] == [
        (["a", "b", "c"], "c", 0),
        (["x"], "x", 1),
    ]


def test_the_limit_counts_passages_and_the_walk_stops_at_the_first_hit_beyond_it():
    ranked = hits(
        ("a", 1, 0, 10), ("b", 1, 10, 20), ("x", 2, 0, 5), ("y", 3, 0, 5), ("c", 1, 20, 30)
    )
    out = sew(ranked, limit=2)
    # "y" would open a third passage: the walk ends there, so the later "c" is not taken either.
    assert [p.keys for p in out] == [["a", "b"], ["x"]]
    assert [p.keys for p in sew(ranked, limit=1)] == [["a", "b"]]


def test_without_joining_every_hit_is_a_passage_of_its_own():
    out = sew(hits(("a", 1, 0, 10), ("b", 1, 10, 20), ("x", 2, 0, 5)), limit=2, join=False)
    assert [p.keys for p in out] == [["a"], ["b"]]


def test_the_same_span_twice_is_taken_once():
    out = sew(hits(("a", 1, 0, 10), ("a", 1, 0, 10), ("b", 1, 10, 20)), limit=8)
    assert [p.keys for p in out] == [["a", "b"]]


def test_sewing_every_chunk_of_a_body_gives_the_body_back():
    body = "\n\n".join(f"Paragraph {i} " + "word " * 120 for i in range(12))
    chunks = chunk_body(body)
    assert len(chunks) > 3
    order = sorted(chunks, key=lambda c: (c.ordinal * 7) % len(chunks))  # any rank order
    (passage,) = sew([Hit(c.ordinal, 9, c.start, c.end) for c in order], limit=1)
    assert body[passage.start : passage.end] == body
    assert "".join(chunks[k].text for k in passage.keys) == body
