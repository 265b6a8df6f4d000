"""The built-in probe set and the cut-offs derived from a model's cosines on it
(``domain.calibration``)."""

from __future__ import annotations

import math

import pytest

from memory_pipeline.domain import calibration
from memory_pipeline.domain.calibration import DEFAULT, PROBES, Calibration


def cosines(same=0.95, related=0.85, unrelated=0.78, answer=0.86, off_topic=0.73, spread=0.01):
    def around(centre, n):
        return [centre + spread * ((i % 5) - 2) / 2 for i in range(n)]

    return {
        "same": around(same, 24),
        "related": around(related, 24),
        "unrelated": around(unrelated, 200),
        "answer": around(answer, 24),
        "off_topic": around(off_topic, 400),
    }


def test_the_probe_set_is_built_in_and_well_formed():
    assert len(PROBES) >= 20
    assert len({p.subject for p in PROBES}) == len(PROBES)
    documents, questions = calibration.probe_texts()
    assert len(documents) == 3 * len(PROBES) and len(questions) == len(PROBES)
    assert len(set(documents)) == len(documents)


def test_close_sits_between_other_facts_and_paraphrases_and_duplicate_above_it():
    measured = calibration.derive(cosines())
    assert measured.measured and measured.separated and measured.reason is None
    assert 0.86 < measured.close < 0.94
    assert measured.duplicate == pytest.approx(measured.close + 0.8 * (1 - measured.close))
    assert (measured.query_floor, measured.query_match) == pytest.approx((0.73, 0.86))


def test_the_cut_offs_follow_a_model_with_another_baseline():
    low = calibration.derive(
        cosines(same=0.80, related=0.40, unrelated=0.15, answer=0.55, off_topic=0.10)
    )
    assert low.measured and 0.40 < low.close < 0.80
    high = calibration.derive(
        cosines(same=0.99, related=0.96, unrelated=0.93, answer=0.97, off_topic=0.92, spread=0.004)
    )
    assert high.measured and 0.96 < high.close < 0.99


def test_the_defaults_rule_the_same_way():
    assert DEFAULT.duplicate == pytest.approx(DEFAULT.close + 0.8 * (1 - DEFAULT.close))
    assert not DEFAULT.measured and DEFAULT.reason


def test_overlapping_classes_give_a_flagged_compromise():
    measured = calibration.derive(cosines(same=0.86, related=0.86, spread=0.04))
    assert measured.measured and not measured.separated and "compromise" in measured.reason
    assert measured.duplicate >= DEFAULT.duplicate


@pytest.mark.parametrize(
    "broken, reason",
    [
        ({"same": [0.9]}, "too few"),
        ({**cosines(), "same": [math.nan, 0.9]}, "not cosines"),
        ({**cosines(), "unrelated": [3.0, 0.5]}, "not cosines"),
        (
            cosines(same=1.0, related=1.0, unrelated=1.0, answer=1.0, off_topic=1.0, spread=0),
            "same vector",
        ),
        (cosines(answer=0.7, off_topic=0.73), "no nearer its answer"),
    ],
)
def test_numbers_that_make_no_sense_keep_the_defaults_and_say_why(broken, reason):
    measured = calibration.derive(broken)
    assert not measured.measured and reason in measured.reason
    assert (measured.close, measured.duplicate) == (DEFAULT.close, DEFAULT.duplicate)


def test_a_wrong_number_of_vectors_keeps_the_defaults():
    measured = calibration.from_vectors([[1.0, 0.0]] * 3, [[1.0, 0.0]])
    assert not measured.measured and "vectors" in measured.reason


def test_the_stored_form_round_trips_and_anything_else_is_measured_again():
    measured = calibration.derive(cosines())
    back = Calibration.from_json(measured.to_json())
    assert back.measured and back.close == pytest.approx(measured.close, abs=1e-4)
    assert back.duplicate == pytest.approx(measured.duplicate, abs=1e-4)
    for stored in (None, [], {"version": 0}, {"version": calibration.VERSION, "close": "x"}):
        again = Calibration.from_json(stored)
        assert not again.measured and again.retry and again.close == DEFAULT.close
    failed = calibration.failed("the probe set could not be embedded: down", retry=True)
    assert Calibration.from_json(failed.to_json()).retry
