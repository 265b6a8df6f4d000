"""Observations and beliefs through the Python API and the CLI (real database, loopback model)."""

from __future__ import annotations

import json

import pytest

from memory_pipeline.errors import InputError
from memory_pipeline_tests.helpers import count


def test_observe_import_list_search_and_forget(mem, tmp_path):
    mem.add(
        [
            {
                "memory": "me",
                "kind": "note",
                "title": "Run",
                "occurred_at": "2026-03-01",
                "body": "Long run with Inês along the river; my calf felt tight at kilometre 14.",
            }
        ]
    )
    mem.index()
    first = mem.observe("me", "My running coach is Inês", episode_ids=[1])
    assert first.action == "added" and first.vector == "stored"
    assert mem.observe("me", "my running coach is Inês!").action == "refused"
    with pytest.raises(InputError, match="invalid kind"):
        mem.observe("me", "x", kind="fact")
    path = tmp_path / "obs.jsonl"
    path.write_text(
        json.dumps({"text": "Mara's calf felt tight at km 14", "kind": "belief"})
        + "\n"
        + '{"text": ""}\n'
        + json.dumps({"text": "My running coach is Inês"})
        + "\n",
        encoding="utf-8",
    )
    outcomes, rejections = mem.import_observations(path, memory="me")
    assert [o.action for o in outcomes] == ["added", "refused"]
    assert rejections == [
        f"{path}:2: 'text' is empty",
        f"{path}:3: near-exact duplicate of statement #{first.saved_id} (force saves it anyway)",
    ]
    assert [o.kind for o in mem.observations("me")] == ["belief", "observation"]
    mem.set_observation_status("me", outcomes[0].saved_id, "contested")
    assert mem.observations("me", kind="belief")[0].status == "contested"
    hit = next(
        r for r in mem.search("me", "who is my running coach?").results if r.kind == "observation"
    )
    assert hit.text == "My running coach is Inês" and hit.sources["episodeIds"] == [1]
    mem.forget("me")
    assert count(mem.db, "SELECT count(*) FROM observations WHERE memory = 'me'") == 0
    assert count(mem.db, "SELECT count(*) FROM observation_embeddings WHERE memory = 'me'") == 0


def test_forgetting_an_episode_forgets_the_statements_drawn_only_from_it(mem):
    added = mem.add(
        [
            {
                "memory": "me",
                "kind": "note",
                "title": "Dentist",
                "occurred_at": "2026-03-01",
                "body": "Dr. Marques said the molar needs a crown before summer.",
            },
            {
                "memory": "me",
                "kind": "note",
                "title": "Budget",
                "occurred_at": "2026-03-02",
                "body": "Set aside money for the crown and the new running shoes.",
            },
        ]
    )
    dentist, budget = added.inserted_ids
    mem.index()
    only = mem.observe("me", "The molar needs a crown before summer", episode_ids=[dentist])
    both = mem.observe(
        "me", "Money is set aside for a dental crown", episode_ids=[dentist, budget], decision="add"
    )
    revised = mem.observe(
        "me",
        "The molar needs a crown before July",
        decision="revise",
        revise_id=only.saved_id,
        episode_ids=[budget],
    )
    mem.forget("me", episode_id=dentist)
    left = {o.id: o for o in mem.observations("me")}
    assert only.saved_id not in left
    assert tuple(left[both.saved_id].episode_ids) == (budget,)
    assert (
        count(
            mem.db,
            f"SELECT count(*) FROM observations WHERE id = {revised.saved_id} AND revises IS NULL",
        )
        == 1
    )
    assert (
        count(
            mem.db,
            f"SELECT count(*) FROM observation_embeddings WHERE observation_id = {only.saved_id}",
        )
        == 0
    )
    found = [
        r.text
        for r in mem.search("me", "molar crown before summer").results
        if r.kind == "observation"
    ]
    assert "The molar needs a crown before summer" not in found


def test_a_statement_cites_only_episodes_of_its_own_memory(mem, tmp_path):
    added = mem.add(
        [
            {
                "memory": "me",
                "kind": "note",
                "title": "Run",
                "occurred_at": "2026-03-01",
                "body": "Ran 14 km with Inês.",
            },
            {
                "memory": "other",
                "kind": "note",
                "title": "Secret",
                "occurred_at": "2026-03-01",
                "body": "Not yours.",
            },
        ]
    )
    mine, theirs = added.inserted_ids
    with pytest.raises(InputError, match=rf"episode_ids: no episode {theirs} in memory 'me'"):
        mem.observe("me", "Inês runs with me", episode_ids=[mine, theirs])
    with pytest.raises(InputError, match=r"episode_ids: no episode 999999 in memory 'me'"):
        mem.observe("me", "Inês runs with me", episode_ids=[999999])
    assert mem.observations("me") == []
    path = tmp_path / "obs.jsonl"
    path.write_text(
        json.dumps({"text": "Inês runs with me", "episode_ids": [theirs]})
        + "\n"
        + json.dumps({"text": "I ran 14 km", "episode_ids": [mine]})
        + "\n",
        encoding="utf-8",
    )
    outcomes, rejections = mem.import_observations(path, memory="me")
    assert [o.action for o in outcomes] == ["added"]
    assert rejections == [
        f"{path}:1: episode_ids: no episode {theirs} in memory 'me' "
        "(a statement cites episodes of its own memory)"
    ]
    assert [tuple(o.episode_ids) for o in mem.observations("me")] == [(mine,)]
