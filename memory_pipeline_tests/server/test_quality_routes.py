"""Labelled questions and retrieval quality over HTTP (``/v1/questions``, ``/v1/quality``,
``/v1/status``) and MCP (``record_answer``, ``list_questions``, ``retrieval_quality``), scoped
by tokens like every other route."""

from __future__ import annotations

import json

import httpx
import pytest

from memory_pipeline_tests.server.test_request_guard import mcp_call, tool_result
from memory_pipeline_tests.server.test_tokens_isolation import ep
from memory_pipeline_tests.support.service import ServerProcess


def test_questions_and_quality_over_http(api, local):
    local.add(
        [ep("me", "Bread", "Sourdough needs a warm kitchen."), ep("bob", "B", "Bob's bikes.")]
    )
    local.index()
    bread = local.episodes("me")[0].id
    saved = api.post("/v1/questions", json={"memory": "me", "question": "bread?", "expect": bread})
    assert saved.status_code == 201 and saved.json()["new"] == 1, saved.text
    [question_id] = saved.json()["questionIds"]
    wrong = api.post("/v1/questions", json={"memory": "me", "question": "x", "expect": "nope"})
    assert (
        wrong.status_code == 422 and "not an episode, source or statement" in wrong.json()["error"]
    )
    listed = api.get("/v1/questions", params={"memory": "me"}).json()["questions"]
    assert [(q["question"], q["expected"]) for q in listed] == [("bread?", "Bread")]
    assert api.get("/v1/quality").json() == {"quality": []}  # nothing scored yet

    local.score_questions()
    latest = api.get("/v1/quality", params={"memory": "me"}).json()["quality"]
    status = api.get("/v1/status").json()
    # A token of bob's memory sees neither me's figures nor its questions.
    bobs, _ = local.create_token("bob", ["bob"], "read")
    scoped = {"Authorization": f"Bearer {bobs}"}
    hidden = api.get("/v1/quality", headers=scoped).json()
    scoped_status = api.get("/v1/status", headers=scoped).json()
    refused = api.get("/v1/questions", params={"memory": "me"}, headers=scoped)
    writer, _ = local.create_token("writer", ["me"], "write")
    removed = api.delete(
        f"/v1/questions/{question_id}",
        params={"memory": "me"},
        headers={"Authorization": f"Bearer {writer}"},
    )

    assert latest[0]["memory"] == "me" and latest[0]["figures"]["fused"]["first_at_1"] == 1.0
    assert status["quality"][0]["questions"] == 1
    assert hidden == {"quality": []} and scoped_status["quality"] == []
    assert refused.status_code == 404
    assert removed.status_code == 200 and removed.json()["removed"] is True
    assert local.questions("me") == []


@pytest.mark.slow  # an MCP server process
def test_an_agent_records_the_answer_it_found_over_mcp(env, local):
    local.add([ep("me", "Bread", "Sourdough needs a warm kitchen.")])
    local.index()
    server = ServerProcess(["mcp", "--http", "--port", "0"], env)
    try:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            found = tool_result(
                mcp_call(client, "search_memory", {"memory": "me", "query": "bread"})
            )
            episode_id = json.loads(found[1])["results"][0]["episodeId"]
            recorded = tool_result(
                mcp_call(
                    client,
                    "record_answer",
                    {"memory": "me", "question": "how is bread made?", "episode_id": episode_id},
                )
            )
            both = tool_result(
                mcp_call(
                    client,
                    "record_answer",
                    {"memory": "me", "question": "q", "episode_id": 1, "statement": "belief:1"},
                )
            )
            listed = tool_result(mcp_call(client, "list_questions", {"memory": "me"}))
            local.score_questions()
            figures = tool_result(mcp_call(client, "retrieval_quality", {}))
    finally:
        server.close()
    assert not recorded[0] and json.loads(recorded[1])["new"] == 1
    assert both[0] and "exactly one of episode_id or statement" in both[1]
    [question] = json.loads(listed[1])["questions"]
    assert question["expect"] == str(episode_id) and question["author"] == "mcp"
    assert json.loads(figures[1])["quality"][0]["figures"]["fused"]["recall_at_8"] == 1.0
