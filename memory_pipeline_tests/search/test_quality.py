"""Labelled questions and their scoring through ``Memory``: saved against an episode, a source,
a statement or a title, rejected with their location, scored by the search users get (fused and
per channel), recorded as the latest figures, and forgotten with what they point at."""

from __future__ import annotations

import pytest

from memory_pipeline.domain.quality import Expectation, figures, parse_expectation
from memory_pipeline.errors import UnknownMemory

BODIES = {
    "Sourdough": "The sourdough starter needs rye flour and a warm kitchen at 26 degrees.",
    "Dentist": "Doctor Marques found a small cavity in the upper molar; filling in June.",
    "Running": "Ines set the half marathon plan: intervals on Tuesday, long run on Sunday.",
}


def _episodes(memory: str = "mara") -> list[dict]:
    return [
        {
            "memory": memory,
            "kind": "note",
            "title": title,
            "occurred_at": "2026-05-01",
            "body": body,
            "id": title.lower(),
        }
        for title, body in BODIES.items()
    ]


@pytest.fixture
def indexed(mem):
    mem.add(_episodes())
    mem.add(_episodes("other"))
    mem.index()
    return {e.title: e.id for e in mem.episodes("mara")}


def test_expectations_parse_and_say_what_is_wrong():
    assert parse_expectation("12") == parse_expectation(12) == Expectation(episode_id=12)
    assert parse_expectation("episode:12") == Expectation(episode_id=12)
    assert parse_expectation("source:notes-1") == Expectation(source_key="id:notes-1")
    assert parse_expectation("source:file:a.md") == Expectation(source_key="file:a.md")
    assert parse_expectation("belief:3") == Expectation(observation_id=3)
    for bad in ("", "x", "0", "-2", "source:", "chunk:4", True, 1.5):
        with pytest.raises(ValueError, match="episode|source|id"):
            parse_expectation(bad)


def test_figures_of_ranks():
    got = figures([1, 2, None, 5])
    assert (got.first_at_1, got.recall_at_3, got.recall_at_8) == (0.25, 0.5, 0.75)
    assert got.mrr == round((1 + 0.5 + 0.2) / 4, 4) and got.questions == 4
    assert figures([]).first_at_1 == 0.0


def test_questions_are_saved_listed_scored_and_recorded(mem, indexed):
    statement = mem.observe("mara", "Mara's dentist is Doctor Marques", decision="add")
    report = mem.add_questions(
        [
            {"question": "what temperature does the starter like?", "expect": indexed["Sourdough"]},
            {"question": "who is my dentist?", "expect_title": "Dentist"},
            {"question": "when are intervals?", "expect": "source:running"},
            {"question": "dentist name", "expect": f"observation:{statement.saved_id}"},
            {"question": "nothing", "expect": 999999},
            {"question": "other's", "expect": mem.episodes("other")[0].id},
            {"question": "no title", "expect_title": "Nope"},
            {"question": "both", "expect": 1, "expect_title": "Dentist"},
            {"question": "typo", "expcet": 1},
        ],
        memory="mara",
    )
    assert report.new == 4 and len(report.saved_ids) == 4
    reasons = {r.location: r.reason for r in report.rejections}
    assert reasons["item 5"] == "memory 'mara' has no episode 999999"
    assert "memory 'mara' has no episode" in reasons["item 6"]  # another memory's episode
    assert reasons["item 7"] == "memory 'mara' has no current episode titled 'Nope'"
    assert "exactly one of" in reasons["item 8"] and "unknown field 'expcet'" in reasons["item 9"]
    listed = mem.questions("mara")
    assert [q.expected for q in listed][:3] == ["Sourdough", "Dentist", "Running"]
    assert str(listed[2].expect) == "source:id:running"
    # Saving the same text again moves it instead of adding a second question.
    again = mem.add_questions(
        [{"question": "who is my dentist?", "expect": indexed["Running"]}], memory="mara"
    )
    assert again.new == 0 and again.saved_ids == [listed[1].id]

    [scored] = mem.score_questions("mara")

    assert scored.questions == 4 and scored.memory == "mara"
    assert scored.fused.first_at_1 >= 0.5 and scored.fused.recall_at_8 >= 0.75
    assert set(scored.channels) >= {"vector", "keyword", "observation"}
    assert scored.channels["keyword"].first_at_1 >= 0.5
    # The moved question now expects the running plan, which its words do not find first.
    missed = {m.question: m for m in scored.misses}
    assert missed["who is my dentist?"].expected == "Running"
    assert missed["who is my dentist?"].first in ("Dentist", "observation #1")
    latest = mem.quality("mara")
    assert latest[0]["questions"] == 4
    assert latest[0]["figures"]["fused"]["first_at_1"] == scored.fused.first_at_1
    assert mem.score_questions("other") == []  # a memory without questions
    with pytest.raises(UnknownMemory):
        mem.score_questions("nobody")


def test_questions_go_with_what_they_expect_and_with_their_memory(mem, indexed):
    mem.add_questions(
        [
            {"question": "starter?", "expect": indexed["Sourdough"]},
            {"question": "dentist?", "expect": indexed["Dentist"]},
        ],
        memory="mara",
    )
    mem.add_questions([{"question": "kept", "expect_title": "Dentist"}], memory="other")
    counts = mem.forget("mara", episode_id=indexed["Sourdough"])
    assert counts.tables["retrieval_questions"] == 1
    assert [q.question for q in mem.questions("mara")] == ["dentist?"]
    mem.score_questions("mara")
    assert mem.remove_questions("mara", [q.id for q in mem.questions("other")]) == []
    whole = mem.forget("mara")
    assert whole.tables["retrieval_questions"] == 1 and whole.tables["retrieval_quality"] == 1
    assert mem.questions("mara") == [] and mem.quality("mara") == []
    assert [q.question for q in mem.questions()] == ["kept"]
