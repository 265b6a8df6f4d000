"""Saying when nothing is relevant: each result graded against the profile's calibration, a
search whose best result is no match says so (CLI line, JSON field), and a profile without a
calibration is reported ungraded."""

from __future__ import annotations

import numpy as np

from memory_pipeline import Memory
from memory_pipeline.storage import profiles_store
from memory_pipeline_tests.cli.conftest import cli  # noqa: F401 - the fixture
from memory_pipeline_tests.support.loopback import LoopbackEmbeddingServer

UNRELATED = "quantum chromodynamics lecture"


def _env(embed_server) -> dict:
    return {"MEMORY_PIPELINE_EMBED_PROVIDER": "ollama", "OLLAMA_HOST": embed_server.url}


def test_an_unrelated_question_is_no_match_and_a_related_one_is(cli, db, world, embed_server):  # noqa: F811
    with db.connection() as conn:
        assert profiles_store.serving(conn)[2].measured  # the index run measured the model
    env = _env(embed_server)
    unrelated = cli("search", UNRELATED, "--memory", "alice", "--json", env=env).json()
    # Fused scores are relative: the best of unrelated results still scores at the top...
    assert unrelated["results"] and unrelated["results"][0]["score"] > 0.5
    # ...but graded against the calibration, none of them is an answer, and the response says so.
    assert unrelated["match"]["grade"] == "none"
    assert "nothing in memory 'alice' matches" in unrelated["match"]["reason"]
    assert {r["grade"] for r in unrelated["results"]} == {"none"}
    assert all(set(r["evidence"]) >= {"vector", "keyword"} for r in unrelated["results"])

    related = cli("search", "bicycle chain derailleur", "--memory", "alice", "--json", env=env)
    doc = related.json()
    assert doc["match"] == {"grade": doc["results"][0]["grade"], "reason": None}
    assert doc["results"][0]["title"] == "Bike repair"
    assert doc["results"][0]["grade"] in ("strong", "weak")

    table = cli("search", UNRELATED, "--memory", "alice", env=env)
    assert table.code == 0, table.err
    first = table.out.splitlines()[1]
    assert first.startswith("Nothing in memory 'alice' matches this question well")
    related_table = cli("search", "bicycle chain derailleur", "--memory", "alice", env=env).out
    assert "Nothing in memory" not in related_table


def test_a_profile_without_calibration_is_searched_as_before_and_says_ungraded(db_url):
    def constant(texts):  # the measurement fails: every probe text gets the same vector
        return np.ones((len(texts), 64), dtype=np.float32)

    with (
        LoopbackEmbeddingServer(dim=64, vector_fn=constant) as server,
        Memory.open(
            url=db_url,
            embed_provider="openai",
            embed_url=server.url,
            embed_model="loopback",
            embed_dim=64,
            record_in_dagster=False,
        ) as mem,
    ):
        mem.add(
            [
                {
                    "memory": "me",
                    "kind": "note",
                    "title": "Bike",
                    "occurred_at": "2026-01-05",
                    "body": "The bicycle chain was oiled on Sunday.",
                }
            ]
        )
        mem.index()
        assert not mem.status().to_json()["calibration"]["measured"]
        response = mem.search("me", UNRELATED).to_json()
    assert [r["title"] for r in response["results"]] == ["Bike"]
    assert response["results"][0]["grade"] is None and response["results"][0]["evidence"] is None
    assert response["match"]["grade"] is None
    assert response["match"]["reason"].startswith("ungraded: the profile has no calibration")
