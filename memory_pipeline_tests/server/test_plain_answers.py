"""The servers say what is true in their own words: the start-up line follows the tokens as they
change, an HTTP error names the query parameter (not the CLI's flag), and every memory the
error messages name is listed."""

from __future__ import annotations

import asyncio
import json
import queue
import sys
import threading
import time

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from memory_pipeline_tests.server.test_tokens_isolation import cli, create_token, ep


def lines_of(server) -> queue.Queue:
    """The server's further stdout lines, as they come (the first was read by ServerProcess)."""
    found: queue.Queue = queue.Queue()

    def read() -> None:
        for line in server.proc.stdout:
            found.put(line.strip())

    threading.Thread(target=read, daemon=True).start()
    return found


def next_line(found: queue.Queue, timeout_s: float = 20.0) -> str:
    deadline = time.monotonic() + timeout_s
    return found.get(timeout=max(0.1, deadline - time.monotonic()))


def test_the_start_up_line_follows_the_tokens_while_the_server_runs(api, env):
    first = api.server.first_line
    assert "no tokens yet: loopback callers have full access until one is created" in first
    assert "no tokens configured" not in first
    found = lines_of(api.server)
    token = create_token(env, "agent", "--memory", "alice")
    assert next_line(found) == (
        "memory_pipeline API: tokens exist: bearer tokens required on every request"
    )
    assert api.get("/v1/status").status_code == 401  # what the line says is what happens
    assert api.get("/v1/status", headers={"Authorization": f"Bearer {token}"}).status_code == 200
    assert cli(env, "tokens", "revoke", "agent").returncode == 0
    assert next_line(found) == (
        "memory_pipeline API: no tokens yet: loopback callers have full access until one is created"
    )
    assert api.get("/v1/status").status_code == 200


def test_a_bad_limit_names_the_query_parameter(api, local):
    local.add([ep("alice", "Bread", "Sourdough needs a warm kitchen.")])
    local.index()
    for value, words in (("0", "greater than or equal to 1"), ("51", "less than or equal to 50")):
        answer = api.get("/v1/search", params={"memory": "alice", "q": "bread", "limit": value})
        assert answer.status_code == 422
        message = answer.json()["error"]
        assert message.startswith("query parameter 'limit'") and words in message, message
        assert "--limit" not in message
    fine = api.get("/v1/search", params={"memory": "alice", "q": "bread", "limit": "1"})
    assert fine.status_code == 200 and len(fine.json()["results"]) == 1


def test_the_mcp_search_tool_names_its_own_argument(env, local):
    local.add([ep("alice", "Bread", "Sourdough needs a warm kitchen.")])

    async def session():
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "memory_pipeline.cli.main", "mcp"], env=env
        )
        async with Client(params) as client:
            return await client.call_tool(
                "search_memory", {"memory": "alice", "query": "bread", "limit": 0}
            )

    result = asyncio.run(session())
    assert result.is_error
    text = result.content[0].text
    assert "limit 0: must be between 1 and 50" in text and "--limit" not in text, text


def test_memories_of_statements_only_are_listed_over_http(api, local):
    local.add([ep("alice", "Bread", "Sourdough needs a warm kitchen.")])
    assert local.observe("bob", "Bob prefers green tea.", decision="add").action == "added"
    listed = {m["name"]: m for m in api.get("/v1/memories").json()["memories"]}
    assert set(listed) == {"alice", "bob"}
    assert (listed["bob"]["episodes"], listed["bob"]["statements"]) == (0, 1)
    unknown = api.get("/v1/search", params={"memory": "carol", "q": "tea"})
    assert unknown.status_code == 404 and "existing: alice, bob" in unknown.json()["error"]
    assert json.loads(api.get("/v1/status").text)["memories"] == 2
