"""Observation and belief drafts: the rules, JSONL lines with located reasons, near duplicates."""

from __future__ import annotations

import datetime as dt

import pytest

from memory_pipeline.domain.observations import (
    InvalidObservation,
    is_near_duplicate,
    join_chunk_channel,
    make_observation,
    merged_statements,
    normalized,
    parse_observation_lines,
    ranked_with_sources,
)


def test_a_valid_draft_keeps_its_fields():
    d = make_observation(
        memory="me",
        text="  Mara's running coach is Inês. ",
        kind="belief",
        confidence=0.8,
        episode_ids=[3, 3, 5],
        passages=["D1:3"],
        author="agent",
        observed_at="2026-05-01",
    )
    assert (d.memory, d.kind, d.text, d.status, d.confidence) == (
        "me",
        "belief",
        "Mara's running coach is Inês.",
        "active",
        0.8,
    )
    assert (
        d.episode_ids == (3, 5)
        and d.passages == ("D1:3",)
        and d.observed_at.isoformat() == "2026-05-01T00:00:00+00:00"
    )


@pytest.mark.parametrize(
    "fields, field, reason",
    [
        ({"text": ""}, "text", "'text' is empty"),
        ({"text": "   "}, "text", "'text' is empty"),
        ({"text": None}, "text", "missing text"),
        ({"text": 5}, "text", "'text' must be a string, got number"),
        ({"text": "a\x00b"}, "text", "NUL"),
        ({"text": "x" * 2001}, "text", "2001 characters long"),
        ({"kind": "fact"}, "kind", "invalid kind 'fact' (expected observation or belief)"),
        ({"status": "retired"}, "status", "cannot be 'retired'"),
        ({"status": "maybe"}, "status", "invalid status 'maybe'"),
        ({"confidence": 1.5}, "confidence", "in [0, 1], got 1.5"),
        ({"confidence": float("nan")}, "confidence", "in [0, 1]"),
        ({"confidence": True}, "confidence", "must be a number"),
        ({"episode_ids": [0]}, "episode_ids", "not a positive episode id"),
        ({"episode_ids": "3"}, "episode_ids", "must be an array"),
        ({"passages": [""]}, "passages", "'passages' is empty"),
        ({"memory": "bad name"}, "memory", "invalid memory name"),
        ({"observed_at": "yesterday"}, "observed_at", "unparseable date"),
        ({"valid_from": "soon"}, "valid_from", "'valid_from': unparseable date: 'soon'"),
        ({"valid_until": 3}, "valid_until", "'valid_until': unparseable date"),
        (
            {"valid_from": "2024-05-01", "valid_until": "2024-04-30"},
            "valid_until",
            "is before 'valid_from'",
        ),
    ],
)
def test_invalid_fields_are_named(fields, field, reason):
    with pytest.raises(InvalidObservation) as caught:
        make_observation(**{"memory": "me", "text": "ok", **fields})
    assert caught.value.field == field and reason in str(caught.value)


def test_jsonl_lines_are_parsed_and_every_rejection_located():
    data = (
        b'{"memory": "me", "text": "Coach is In\xc3\xaas", "episode_ids": [1]}\n'
        b"\n"
        b'{"text": "no memory here"}\n'
        b'{"memory": "me", "txt": "typo"}\n'
        b"not json\n"
        b'{"memory": "me", "text": "a belief", "kind": "belief", "status": "contested"}\n'
    )
    drafts, rejections = parse_observation_lines(data, "obs.jsonl")
    assert [(line, d.text, d.kind, d.status) for line, d in drafts] == [
        (1, "Coach is Inês", "observation", "active"),
        (6, "a belief", "belief", "contested"),
    ]
    assert [line for line, _ in rejections] == [3, 4, 5]
    assert rejections[0][1] == "obs.jsonl:3: missing memory (give it on the line or with --memory)"
    assert rejections[1][1].startswith("obs.jsonl:4: unknown field 'txt'")
    assert rejections[2][1].startswith("obs.jsonl:5: malformed JSON")
    drafts, rejections = parse_observation_lines(b'{"memory": "me"}\n', "f")
    assert rejections == [(1, "f:1: missing text")]
    drafts, rejections = parse_observation_lines(b'{"text": "x"}\n', "f", memory="you")
    assert drafts[0][1].memory == "you" and not rejections


def test_near_duplicates_are_the_same_words_or_very_close_vectors():
    assert normalized("Mara's  coach: Inês!") == "mara s coach ines"
    assert is_near_duplicate("Mara's coach is Inês.", "mara's COACH is ines")
    assert not is_near_duplicate("Mara's coach is Inês.", "Mara's coach was Rui.")
    assert is_near_duplicate("a", "b", cosine=0.99)
    assert not is_near_duplicate("a", "b", cosine=0.9)


def test_close_means_similar_vectors_or_most_of_the_words():
    from memory_pipeline.domain.observations import CLOSE_COSINE, is_close, shares_words

    new = {"alic", "plant", "tulip", "garden"}
    assert shares_words(new, {"alic", "plant", "tulip", "rose"})
    assert not shares_words(new, {"alic", "bake", "bread"})
    assert not shares_words(set(), {"alic"})
    assert is_close(CLOSE_COSINE, new, set()) and not is_close(CLOSE_COSINE - 0.01, new, set())
    assert is_close(None, new, new)


def test_a_statement_citing_chunks_is_replaced_by_them_and_the_rest_stay():
    ranked = ["observation:1", "observation:2", "observation:3", "observation:4"]
    cited = {"observation:1": ("c7", "c3"), "observation:2": (), "observation:3": ("c3", "c9")}
    assert ranked_with_sources(ranked, cited, 10) == [
        "c7",
        "c3",
        "observation:2",
        "c9",
        "observation:4",
    ]
    # A chunk cited again keeps its first place; the limit counts keys, not statements.
    assert ranked_with_sources(ranked, cited, 3) == ["c7", "c3", "observation:2"]
    assert ranked_with_sources([], cited, 5) == []


def test_statement_lists_merge_by_rank_or_by_normalized_scores():
    lists = {"vector": [(1, 0.90), (2, 0.89), (3, 0.50)], "keyword": [(3, 9.0), (2, 1.0)]}
    rrf = merged_statements(lists, "rrf")
    assert rrf[2] == pytest.approx(1 / 62 + 1 / 62) and rrf[1] == pytest.approx(1 / 61)
    # CombSUM: 3 is vector's worst (0) but keyword's best (1); 2 is 0.975 + 0; 1 is 1 + nothing.
    combsum = merged_statements(lists, "combsum")
    assert combsum == pytest.approx({1: 1.0, 2: 0.975, 3: 1.0})
    assert merged_statements({"keyword": [(5, 2.0)]}, "combsum") == {5: 1.0}
    with pytest.raises(ValueError, match="unknown statement merge"):
        merged_statements(lists, "max")


def test_statements_join_a_chunk_channel_within_its_range_and_leave_the_chunks_in_order():
    chunks = [("c1", 0.86), ("c2", 0.84), ("c3", 0.84), ("c4", 0.80)]
    statements = [
        ("observation:1", 0.90),
        ("observation:2", 0.84),
        ("belief:3", 0.79),
        ("observation:4", 0.85),
    ]
    joined = join_chunk_channel(chunks, statements)
    # Best first; a tie goes after the chunks it ties; below the worst chunk it stays out.
    assert joined == [
        ("observation:1", 0.90),
        ("c1", 0.86),
        ("observation:4", 0.85),
        ("c2", 0.84),
        ("c3", 0.84),
        ("observation:2", 0.84),
        ("c4", 0.80),
    ]
    assert [hit for hit in joined if hit[0].startswith("c")] == chunks
    # Nothing to join, or a channel that found no chunk: the statements as they are.
    assert join_chunk_channel(chunks, []) == chunks
    assert join_chunk_channel([], [("belief:3", 0.1), ("observation:1", 0.5)]) == [
        ("observation:1", 0.5),
        ("belief:3", 0.1),
    ]
    # Chunks that all score alike are ordered by their places: a statement joins only above them,
    # so no chunk's normalized score can grow.
    alike = [("c1", 2.0), ("c2", 2.0)]
    assert join_chunk_channel(alike, [("observation:1", 2.0)]) == alike
    assert join_chunk_channel(alike, [("observation:1", 2.5)]) == [("observation:1", 2.5), *alike]
    assert join_chunk_channel([("c1", 5.0)], [("observation:1", 5.0)]) == [("c1", 5.0)]
    # A chunk list that is not strictly sorted (vector's best-window rescoring) keeps its order.
    assert join_chunk_channel([("c1", 0.8), ("c2", 0.82)], [("observation:1", 0.81)]) == [
        ("observation:1", 0.81),
        ("c1", 0.8),
        ("c2", 0.82),
    ]


def test_validity_is_read_from_jsonl_lines():
    data = b'{"memory": "me", "text": "We live in York", "valid_from": "2024-04-01"}\n'
    ((_, draft),) = parse_observation_lines(data, "obs.jsonl")[0]
    assert draft.valid_from == dt.datetime(2024, 4, 1, tzinfo=dt.UTC) and draft.valid_until is None
