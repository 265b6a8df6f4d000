"""The MCP server through the SDK's own client: over stdio (``memory-pipeline mcp``) and over
streamable HTTP (``memory-pipeline mcp --http``) with scoped tokens."""

from __future__ import annotations

import asyncio
import base64
import json
import sys

import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from memory_pipeline_tests.helpers import count
from memory_pipeline_tests.server.test_tokens_isolation import cli, create_token, ep
from memory_pipeline_tests.support.documents import (
    DEEP_PHRASE,
    sections,
    write_docx,
    zip_bomb_docx_bytes,
)
from memory_pipeline_tests.support.service import ServerProcess

TOOLS = {
    "search_memory",
    "add_memory",
    "add_document",
    "list_memories",
    "get_episode",
    "read_episode",
    "forget",
    "status",
    "save_observation",
    "list_observations",
    "set_observation_status",
    "list_episodes",
    "episode_history",
    "record_answer",
    "list_questions",
    "retrieval_quality",
}


def payload(result) -> dict:
    assert not result.is_error, result.content
    return json.loads(result.content[0].text)


def error_text(result) -> str:
    assert result.is_error
    text = result.content[0].text
    assert "Traceback" not in text
    return text.split(": ", 1)[1] if text.startswith("Error executing tool") else text


@pytest.mark.slow  # starts processes
def test_every_tool_over_stdio(env, local, tmp_path):
    local.add([ep("bob", "Bob's", "Bob keeps bees on the roof.")])

    docx = base64.b64encode(
        write_docx(
            tmp_path / "minutes.docx", title="Club Minutes", sections=sections("minutes")
        ).read_bytes()
    ).decode()
    bomb = base64.b64encode(zip_bomb_docx_bytes()).decode()

    async def session():
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "memory_pipeline.cli.main", "mcp"], env=env
        )
        async with Client(params) as client:
            assert {t.name for t in (await client.list_tools()).tools} == TOOLS
            added = payload(
                await client.call_tool(
                    "add_memory",
                    {
                        "memory": "alice",
                        "title": "Bread",
                        "body": "Sourdough needs a warm kitchen.",
                        "occurred_at": "2026-03-01",
                    },
                )
            )
            assert added["indexed"] is True and isinstance(added["episodeId"], int)
            found = payload(
                await client.call_tool("search_memory", {"memory": "alice", "query": "sourdough"})
            )
            hit = found["results"][0]
            assert hit["episodeId"] == added["episodeId"] and hit["title"] == "Bread"
            assert (
                hit["occurredAt"].startswith("2026-03-01")
                and hit["score"] > 0
                and "Sourdough" in hit["snippet"]
            )
            listed = payload(await client.call_tool("list_memories", {}))
            assert [m["name"] for m in listed["memories"]] == ["alice", "bob"]
            episode = payload(
                await client.call_tool("get_episode", {"episode_id": added["episodeId"]})
            )
            assert episode["body"] == "Sourdough needs a warm kitchen."
            episodes = payload(await client.call_tool("list_episodes", {"memory": "alice"}))
            assert [(e["id"], e["revisions"]) for e in episodes["episodes"]] == [
                (added["episodeId"], 1)
            ]
            history = payload(
                await client.call_tool("episode_history", {"episode_id": added["episodeId"]})
            )
            assert [r["current"] for r in history["revisions"]] == [True]
            assert payload(await client.call_tool("status", {}))["episodes"] == 2
            document = payload(
                await client.call_tool(
                    "add_document",
                    {"memory": "bob", "name": "minutes.docx", "content_base64": docx},
                )
            )
            assert document["indexed"] is True
            deep = payload(
                await client.call_tool("search_memory", {"memory": "bob", "query": DEEP_PHRASE})
            )
            assert deep["results"][0]["episodeId"] == document["episodeId"]
            assert (
                deep["results"][0]["title"] == "Club Minutes"
                and deep["results"][0]["kind"] == "doc"
            )
            saved = payload(
                await client.call_tool(
                    "save_observation",
                    {
                        "memory": "bob",
                        "text": "Bob's bees live on the roof",
                        "episode_ids": [document["episodeId"]],
                    },
                )
            )
            assert saved["action"] == "added" and saved["vector"] == "stored"
            close = payload(
                await client.call_tool(
                    "save_observation", {"memory": "bob", "text": "Bob's bees live up on the roof"}
                )
            )
            assert close["action"] == "undecided" and close["close"][0]["id"] == saved["id"]
            assert close["saved"] is False and close["message"].startswith("not saved")
            assert (
                payload(
                    await client.call_tool(
                        "save_observation",
                        {
                            "memory": "bob",
                            "text": "bob's bees live on the roof.",
                            "decision": "add",
                        },
                    )
                )["action"]
                == "refused"
            )
            belief = payload(
                await client.call_tool(
                    "save_observation",
                    {
                        "memory": "bob",
                        "text": "Bob will sell honey next year",
                        "kind": "belief",
                        "contested": True,
                    },
                )
            )
            listed = payload(await client.call_tool("list_observations", {"memory": "bob"}))[
                "observations"
            ]
            assert [(o["id"], o["status"], o["author"]) for o in listed] == [
                (belief["id"], "contested", "mcp"),
                (saved["id"], "active", "mcp"),
            ]
            honey = {"memory": "bob", "query": "selling honey", "channels": "belief"}
            assert payload(await client.call_tool("search_memory", honey))["results"] == []
            hit = payload(await client.call_tool("search_memory", {**honey, "contested": True}))[
                "results"
            ][0]
            assert (hit["kind"], hit["status"], hit["chunkId"]) == (
                "belief",
                "contested",
                f"belief:{belief['id']}",
            )
            assert (
                payload(
                    await client.call_tool(
                        "set_observation_status",
                        {"memory": "bob", "observation_id": belief["id"], "status": "active"},
                    )
                )["status"]
                == "active"
            )
            assert (
                payload(await client.call_tool("search_memory", honey))["results"][0]["status"]
                == "active"
            )
            assert (
                error_text(
                    await client.call_tool(
                        "set_observation_status",
                        {"memory": "bob", "observation_id": 2**62, "status": "retired"},
                    )
                )
                == f"no statement #{2**62} in memory 'bob'"
            )
            refused = error_text(
                await client.call_tool(
                    "add_document", {"memory": "bob", "name": "bomb.docx", "content_base64": bomb}
                )
            )
            assert (
                refused.startswith("not stored: bomb.docx: unpacks to") and "a zip bomb" in refused
            )
            unknown = error_text(
                await client.call_tool("search_memory", {"memory": "carol", "query": "x"})
            )
            assert unknown == "unknown memory 'carol' (existing: alice, bob)"
            as_of = {"memory": "bob", "query": "bees", "as_of": "2000-01-01"}
            assert payload(await client.call_tool("search_memory", as_of))["asOf"] == "2000-01-01"
            assert error_text(
                await client.call_tool("search_memory", {**as_of, "as_of": "soon"})
            ).startswith("as_of 'soon' is not a date")
            assert "whole_memory" in error_text(
                await client.call_tool("forget", {"memory": "alice"})
            )
            gone = payload(
                await client.call_tool(
                    "forget", {"memory": "alice", "episode_id": added["episodeId"]}
                )
            )
            assert gone["deleted"]["episodes"] == 1
            assert error_text(
                await client.call_tool("get_episode", {"episode_id": added["episodeId"]})
            ) == (f"no episode {added['episodeId']}")
            whole = payload(
                await client.call_tool("forget", {"memory": "bob", "whole_memory": True})
            )
            assert whole["deleted"]["episodes"] == 2

    asyncio.run(session())
    assert count(local.db, "SELECT count(*) FROM episodes") == 0


@pytest.mark.slow  # starts processes
def test_streamable_http_scopes_every_tool_by_token(env, local):
    local.add(
        [
            ep("alice", "Alice harbor", "Lucinda and the Harbor Project; kumquat orchard."),
            ep("bob", "Bob harbor", "Lucinda and the Harbor Project; zeppelin hangar."),
        ]
    )
    local.index()
    with local.db.connection() as conn:
        bob_ids = [r[0] for r in conn.execute("SELECT id FROM episodes WHERE memory = 'bob'")]
    alice = create_token(env, "alice", "--memory", "alice")
    server = ServerProcess(["mcp", "--http", "--port", "0"], env)

    async def session(token: str | None) -> list[str]:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        texts = []
        async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
            async with Client(
                streamable_http_client(server.url + "/mcp", http_client=http)
            ) as client:
                calls = [
                    ("search_memory", {"memory": "alice", "query": "Lucinda Harbor Project"}),
                    ("search_memory", {"memory": "bob", "query": "Lucinda"}),
                    ("list_memories", {}),
                    ("status", {}),
                    ("get_episode", {"episode_id": bob_ids[0]}),
                    ("forget", {"memory": "bob", "whole_memory": True}),
                    ("add_memory", {"memory": "bob", "title": "x", "body": "y"}),
                    ("add_memory", {"memory": "alice", "title": "x", "body": "y"}),
                ]
                for name, arguments in calls:
                    result = await client.call_tool(name, arguments)
                    text = result.content[0].text
                    texts.append(
                        (name, result.is_error, error_text(result) if result.is_error else text)
                    )
        return texts

    try:
        anonymous = asyncio.run(session(None))
        assert all(is_error and "needs a token" in text for _, is_error, text in anonymous)
        scoped = asyncio.run(session(alice))
    finally:
        server.close()
    assert "Traceback" not in "".join(server.stderr)
    by_call = [(name, is_error) for name, is_error, _ in scoped]
    assert by_call == [
        ("search_memory", False),
        ("search_memory", True),
        ("list_memories", False),
        ("status", False),
        ("get_episode", True),
        ("forget", True),
        ("add_memory", True),
        ("add_memory", True),
    ]
    assert (
        json.loads(scoped[2][2])["memories"][0]["name"] == "alice"
        and len(json.loads(scoped[2][2])["memories"]) == 1
    )
    assert scoped[1][2] == "unknown memory 'bob' (existing: alice)"
    for _, _, text in scoped:  # bob's name appears only where the caller named it
        assert "zeppelin" not in text and "Bob harbor" not in text and "alice, bob" not in text
        assert '"bob"' not in text
    assert count(local.db, "SELECT count(*) FROM episodes") == 2


@pytest.mark.slow  # starts processes
def test_a_token_revoked_during_a_stdio_session_stops_working_at_once(env, local):
    token = create_token(env, "agent", "--memory", "alice", "--write")
    note = {"memory": "alice", "title": "Bread", "body": "Sourdough.", "index": False}

    async def session():
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "memory_pipeline.cli.main", "mcp", "--token", token],
            env=env,
        )
        async with Client(params) as client:
            before = payload(await client.call_tool("add_memory", note))
            assert cli(env, "tokens", "revoke", "agent").returncode == 0
            after = [
                error_text(await client.call_tool(name, arguments))
                for name, arguments in (
                    ("add_memory", {**note, "body": "Rye."}),
                    ("search_memory", {"memory": "alice", "query": "bread"}),
                    ("list_memories", {}),
                )
            ]
        return before, after

    before, after = asyncio.run(session())
    assert before["episodeId"] is not None
    assert after == ["--token: unknown or revoked token"] * 3
    assert count(local.db, "SELECT count(*) FROM episodes") == 1
