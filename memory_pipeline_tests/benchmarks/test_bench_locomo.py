"""The LoCoMo benchmark runs on conversations it was not written for, and its leave-one-out
chooses the observation weight under the characters cap.

Its figures are checked again on LoCoMo conversations this project does not have, so the script
must take any file of the dataset's format, quirks included: an empty session, evidence ids that
name no turn, an observation that cites several turns, one for a session without turns, and
malformed observation entries. Two small made-up conversations (the dataset itself stays in
``../shared``), the bundled model, the whole script: the service rows and the leave-one-out
section with the observation stage.
"""

from __future__ import annotations

import datetime as dt
import json
import sys

import pytest

from memory_pipeline_tests.helpers import ROOT, run_benchmark

sys.path.insert(0, str(ROOT / "benchmarks"))

import locomo_loo  # noqa: E402  (a helper of the benchmark, not a package)

TOPICS = {
    "conv-a": [("Ana", "Rui"), ["pottery class", "trip to Porto", "new puppy called Lua"]],
    "conv-b": [("Ivo", "Eva"), ["marathon training", "guitar lessons", "a job at the bakery"]],
}


def _conversation(sample_id: str) -> dict:
    (a, b), topics = TOPICS[sample_id]
    conv: dict = {"speaker_a": a, "speaker_b": b}
    observation: dict = {}
    for n, topic in enumerate(topics, start=1):
        conv[f"session_{n}_date_time"] = f"1:56 pm on {n + 7} May, 2023"
        conv[f"session_{n}"] = [
            {
                "speaker": a,
                "dia_id": f"D{n}:1",
                "text": f"Guess what, I started {topic} this week!",
            },
            {
                "speaker": b,
                "dia_id": f"D{n}:2",
                "text": f"No way, tell me everything about the {topic}.",
            },
            {
                "speaker": a,
                "dia_id": f"D{n}:3",
                "text": f"It was my sister's idea; {topic} makes me happy.",
                "blip_caption": f"a photo of {topic}",
            },
            {
                "speaker": b,
                "dia_id": f"D{n}:4",
                "text": "Well, I have been reading a lot of old novels lately.",
            },
        ]
        observation[f"session_{n}_observation"] = {
            a: [
                [f"{a} started {topic} at her sister's suggestion.", f"D{n}:1"],
                [f"{topic} makes {a} happy.", [f"D{n}:3", f"D{n}:1"]],
            ],
            b: [[f"{b} reads old novels.", f"D{n}:4"], ["a malformed entry without its turn"]],
        }
    # A session listed without turns, and an observation of it.
    conv["session_4_date_time"] = "2:00 pm on 20 May, 2023"
    conv["session_4"] = []
    observation["session_4_observation"] = {a: [[f"{a} said nothing that day.", "D4:1"]]}
    first, second, third = topics
    qa = [
        {
            "question": f"What did {a} start on 8 May 2023?",
            "answer": first,
            "evidence": ["D1:1"],
            "category": 2,
        },
        {
            "question": f"Whose idea was the {second}?",
            "answer": "her sister's",
            "evidence": ["D2:3"],
            "category": 4,
        },
        {
            "question": f"What does {b} read?",
            "answer": "old novels",
            "evidence": ["D1:4", "D3:4"],
            "category": 1,
        },
        {
            "question": f"Would {a} enjoy a {third}?",
            "answer": "yes",
            "evidence": ["D3:3"],
            "category": 3,
        },
        {"question": "Unanswerable?", "answer": "", "evidence": ["D1:2"], "category": 5},
        {
            "question": "Evidence that names no turn",
            "answer": "x",
            "evidence": ["D9:99", "D8:6; D9:17"],
            "category": 4,
        },
    ]
    return {"sample_id": sample_id, "conversation": conv, "observation": observation, "qa": qa}


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_bench_locomo_runs_on_unseen_conversations_with_their_quirks(tmp_path):
    data = tmp_path / "locomo-other.json"
    data.write_text(
        json.dumps([_conversation("conv-a"), _conversation("conv-b")]), encoding="utf-8"
    )
    out = tmp_path / "figures.json"
    done = run_benchmark(
        "bench_locomo.py",
        "--data",
        str(data),
        "--home",
        str(tmp_path / "home"),
        "--skip-diagnostics",
        "--merge-grid",
        "--json",
        str(out),
        timeout=1100,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    figures = json.loads(out.read_text())
    # Four questions of categories 1-4 each; the fifth category and the question left without
    # evidence are not asked.
    assert figures["questions"] == 8 and figures["dropped_questions"] == 2
    assert sorted(figures["skipped_evidence_ids"]) == sorted(["D9:99", "D8:6; D9:17"] * 2)
    # Per session two statements of the first speaker and one of the second; the malformed entry
    # and the statement of the session without turns are skipped.
    assert figures["setup"]["statements_inserted"] == 2 * 3 * 3
    assert figures["skipped_statements"] == 2 * (3 + 1)
    for row in ("fused default", "keyword alone", "vector alone", "observation alone"):
        recall = figures["rows"][row]["recall"]
        assert 0 <= recall["@1"] <= recall["@3"] <= recall["@5"] <= recall["@8"] <= 1, row
    loo = figures["leave_one_out"]
    assert [f["held_out"] for f in loo["folds_with_observations"]] == ["conv-a", "conv-b"]
    for name in ("loo", "loo_with_observations", "loo_with_observations_uncapped"):
        assert 0 <= loo[name]["@1"] <= loo[name]["@8"] <= 1 and loo[name]["chars"] > 0, name


# --- the observation stage's characters cap -----------------------------------------------------

NOW = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
BASE = {"method": "combsum", "k": 60, "vector": 1.0, "graph": 0.0, "date": 0.0}


def _item(memory: str) -> dict:
    """Nine short chunks the vector channel ranks (scores 9..1, so normalized 1, 7/8, ... 0) and
    one long chunk holding the evidence that only a statement points at: with observation weight
    w it scores w, and enters the 8 passages (for 900 characters more) once w passes 1/8."""
    facts = {"salience": 0.5, "occurred_at": NOW.isoformat(), "start": 0}
    candidates = {
        f"v{i}": {**facts, "text_chars": 100, "holds": [], "episode_id": i, "end": 100}
        for i in range(9)
    }
    candidates["e"] = {
        **facts,
        "text_chars": 1000,
        "holds": ["D1:1"],
        "episode_id": 99,
        "end": 1000,
    }
    return {
        "memory": memory,
        "category": 4,
        "evidence": ["D1:1"],
        "candidates": candidates,
        "ranked": {"vector": [f"v{i}" for i in range(9)], "observation": ["e"]},
        "scores": {"vector": [float(9 - i) for i in range(9)], "observation": [1.0]},
    }


def _observation_stage(chars_cap):
    items = [_item(m) for m in ("m1", "m1", "m2", "m2")]
    return locomo_loo.leave_one_out(
        items,
        lambda memory: locomo_loo.observation_grid(BASE),
        (*locomo_loo.CHUNK_CHANNELS, "observation"),
        NOW,
        chars_cap=chars_cap,
    )


def test_the_observation_stage_keeps_to_the_characters_of_the_search_without_observations():
    uncapped = _observation_stage(None)
    # Recall alone: the lightest weight that puts the long chunk first (1.0 ties v0's 1.0; the
    # exact tie goes to the key "e"), for 900 characters more.
    assert [f["chosen"]["observation"] for f in uncapped["folds"]] == [1.0, 1.0]
    assert all(f["@1"] == 1.0 and f["chars"] == 1700 and "cap" not in f for f in uncapped["folds"])
    # The search without observations returns the eight short chunks: 800 characters.
    capped = _observation_stage(lambda memory, train: 800)
    assert [f["chosen"]["observation"] for f in capped["folds"]] == [0.1, 0.1]
    assert all(
        f["@8"] == 0.0 and f["chars"] == 800 and f["cap"] == 800 and f["within_cap"]
        for f in capped["folds"]
    )


def test_when_no_setting_keeps_to_the_cap_the_fewest_characters_are_chosen_and_said():
    folds = _observation_stage(lambda memory, train: 500)["folds"]
    assert [f["chosen"]["observation"] for f in folds] == [0.1, 0.1]
    assert all(f["chars"] == 800 and not f["within_cap"] for f in folds)
