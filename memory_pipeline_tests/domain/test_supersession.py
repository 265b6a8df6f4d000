"""What is true now: the query's reading of time, and which candidate of one subject comes first."""

from __future__ import annotations

import datetime as dt

import pytest

from memory_pipeline.domain.supersession import Grouping, QueryTime, in_time, read_query_time


def day(year: int, month: int = 6) -> dt.datetime:
    return dt.datetime(year, month, 1, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("query", "reading"),
    [
        ("which dentist do I go to?", QueryTime("present")),
        ("Wo wohnen wir?", QueryTime("present")),
        ("how many approvals does a pull request need before merging?", QueryTime("present")),
        ("where did I live in 2023?", QueryTime("past", year=2023)),
        ("Welchen Stromanbieter hatten wir 2024?", QueryTime("past", year=2024)),
        ("who was tech lead before Jonas?", QueryTime("past", before=True)),
        ("where did we live before moving to York?", QueryTime("past", before=True)),
        ("Wo hat Tobias gearbeitet, bevor er zum Start-up ging?", QueryTime("past", before=True)),
        ("who used to coach me?", QueryTime("past")),
        ("Bei welcher Krankenkasse war Anna früher?", QueryTime("past")),
        ("who was my dentist when I lived in Leeds?", QueryTime("neutral")),
        ("When did Caroline go to the support group?", QueryTime("neutral")),
        ("What painting did Melanie show on October 13, 2023?", QueryTime("neutral")),
        # Portuguese, Spanish and French cues; a month is read as a year is.
        ("Onde eu morava antes de Lisboa?", QueryTime("past", before=True)),
        ("Qual era o meu antigo emprego?", QueryTime("past")),
        ("¿Dónde trabajaba Ana?", QueryTime("neutral")),
        ("Où habitait-on autrefois ?", QueryTime("past")),
        ("Em que empresa trabalho?", QueryTime("present")),
        ("¿En qué compañía trabajo?", QueryTime("present")),
        (
            "where did we live in March 2024?",
            QueryTime("past", until=dt.datetime(2024, 4, 1, tzinfo=dt.UTC)),
        ),
    ],
)
def test_the_query_is_read_as_asking_of_now_of_a_year_or_of_an_earlier_state(query, reading):
    assert read_query_time(query) == reading


# One subject told three times ("a", "b", "c"), and a note on another subject ("x") that the
# query finds as relevant; "a" is the fused first.
WRITTEN = {"a": day(2023), "b": day(2024), "c": day(2025), "x": day(2026)}
CLOSE = {"a": 0.86, "b": 0.85, "c": 0.855, "x": 0.85}
SCORES = {"a": 1.0, "b": 0.9, "c": 0.8, "x": 0.85}
ALIKE = {
    frozenset("ab"): 0.9, frozenset("ac"): 0.9, frozenset("bc"): 0.92,
    frozenset("ax"): 0.8, frozenset("bx"): 0.8, frozenset("cx"): 0.8,
}  # fmt: skip
ORDER = ["a", "b", "x", "c"]
GROUPING = Grouping(band=0.02, score_share=0.5, same_subject=0.86, depth=5)


def likeness(first: str, others: list[str]) -> dict[str, float]:
    return {k: ALIKE[frozenset((first, k))] for k in others}


def order_for(query: str, order=ORDER, scores=SCORES) -> list[str]:
    return in_time(
        query,
        order,
        written=WRITTEN,
        closeness=CLOSE,
        scores=scores,
        likeness=likeness,
        grouping=GROUPING,
    )


def test_a_question_of_today_puts_the_latest_note_of_the_subject_first():
    assert order_for("which dentist do I go to?") == ["c", "a", "b", "x"]


def test_a_newer_note_on_another_subject_is_no_contender():
    assert order_for("which dentist do I go to?", ["a", "x"]) == ["a", "x"]


def test_a_note_the_first_result_outscores_clearly_is_no_contender():
    assert order_for("which dentist do I go to?", scores={**SCORES, "c": 0.4}) == [
        "b",
        "a",
        "x",
        "c",
    ]


def test_a_note_the_query_finds_less_relevant_is_no_contender():
    far = {**CLOSE, "b": 0.8, "c": 0.8}
    got = in_time(
        "which dentist do I go to?", ORDER, written=WRITTEN, closeness=far, scores=SCORES,
        likeness=likeness, grouping=GROUPING,
    )  # fmt: skip
    assert got == ORDER


def test_a_named_year_picks_the_note_in_force_that_year():
    assert order_for("which dentist did I see in 2024?")[0] == "b"
    assert order_for("which dentist did I see in 2022?") == ORDER  # nothing written by then


def test_before_steps_back_from_the_best_match():
    assert order_for("who was my dentist before Dr Brandt?", ["c", "a", "b"])[0] == "b"
    assert order_for("who was my dentist before Dr Okafor?") == ORDER  # the oldest: nothing before


def test_an_earlier_state_without_before_steps_back_only_from_the_latest():
    assert order_for("who used to be my dentist?", ["c", "b", "a"])[0] == "b"
    assert order_for("who used to be my dentist?", ["b", "c", "a"])[0] == "b"


def test_past_tense_alone_keeps_the_fused_order():
    assert order_for("who was my dentist when I lived in Leeds?") == ORDER


def test_as_of_a_date_a_query_naming_no_time_asks_for_the_latest_note_then():
    # Past tense without a year keeps fusion's order, unless the search asks as of a moment
    # (its candidates are then those in force then): the latest then comes first.
    query = "who was my dentist when I lived in Leeds?"
    assert order_for(query) == ORDER
    as_of = in_time(
        query,
        ORDER,
        written=WRITTEN,
        closeness=CLOSE,
        scores=SCORES,
        likeness=likeness,
        grouping=GROUPING,
        as_of=True,
    )
    assert as_of == ["c", "a", "b", "x"]


def test_the_same_subject_cut_follows_the_profiles_calibration():
    from memory_pipeline.domain.calibration import Calibration
    from memory_pipeline.domain.supersession import SAME_SUBJECT, same_subject_cut
    from memory_pipeline.search.channels.run import Candidates
    from memory_pipeline.search.in_time import grouping_for

    bundled = {"same": 0.9697, "related": 0.8508, "unrelated": 0.7914}
    centred = {"same": 0.884, "related": 0.395, "unrelated": 0.180}
    assert same_subject_cut(bundled) == pytest.approx(0.86, abs=1e-3)
    assert same_subject_cut(centred) == pytest.approx(0.451, abs=1e-3)
    assert same_subject_cut(None) == SAME_SUBJECT == same_subject_cut({"same": 0.5})
    # The search reads it from the calibration of the profile its vector channel read.
    measured = Candidates(calibration=Calibration(measured=True, medians=centred))
    assert grouping_for(measured).same_subject == pytest.approx(0.451, abs=1e-3)
    assert grouping_for(Candidates()).same_subject == SAME_SUBJECT


def test_a_named_month_picks_the_note_in_force_at_its_end():
    # "b" (June 2024) is the latest written by the end of August 2024; fusion put "a" first.
    assert order_for("which dentist did I see in August 2024?")[0] == "b"
    assert order_for("which dentist did I see in March 2024?")[0] == "a"


def test_contenders_written_at_one_moment_keep_the_fused_order():
    # The chunks of one document share its time: none is a later note than another, so a
    # question of today keeps the fused first among them (the latest moment's best-placed).
    written = {**WRITTEN, "a": day(2025), "b": day(2025), "c": day(2025)}
    got = in_time(
        "which dentist do I go to?", ORDER, written=written, closeness=CLOSE, scores=SCORES,
        likeness=likeness, grouping=GROUPING,
    )  # fmt: skip
    assert got == ORDER
    # A later note still wins over a moment's several chunks; an earlier state is one written
    # before the first, and of that moment's chunks the best-placed.
    written = {**written, "b": day(2026)}
    assert order_for_written("which dentist do I go to?", written)[0] == "b"
    written = {**WRITTEN, "b": day(2025), "c": day(2023)}  # "a" and "c": one moment, 2023
    assert order_for_written("who used to be my dentist?", written, ["b", "c", "a"])[0] == "c"


def order_for_written(query: str, written, order=ORDER) -> list[str]:
    return in_time(
        query, order, written=written, closeness=CLOSE, scores=SCORES, likeness=likeness,
        grouping=GROUPING,
    )  # fmt: skip
