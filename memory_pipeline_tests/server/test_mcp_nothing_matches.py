"""The MCP search tool tells an agent first when nothing in the memory matches its question, so
the closest passage is not taken for an answer (``memory-pipeline mcp`` over stdio)."""

from __future__ import annotations

import asyncio
import sys

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from memory_pipeline_tests.helpers import QWEN
from memory_pipeline_tests.server.test_mcp_server import payload
from memory_pipeline_tests.server.test_tokens_isolation import ep
from memory_pipeline_tests.support.loopback import LoopbackEmbeddingServer


@pytest.fixture
def model():
    # instruction_aware: the qwen3 query instruction would otherwise dominate the hash vectors
    # of every query, related or not.
    with LoopbackEmbeddingServer(dim=512, models={QWEN}, instruction_aware=True) as server:
        yield server


@pytest.mark.slow  # starts a process
def test_search_memory_says_first_that_nothing_matches(env, local):
    local.add(
        [
            ep("alice", "Bread", "Sourdough needs a warm kitchen and a patient baker."),
            ep("alice", "Bike", "The bicycle chain was oiled on Sunday."),
        ]
    )
    local.index()

    async def session():
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "memory_pipeline.cli.main", "mcp"], env=env
        )
        async with Client(params) as client:
            call = client.call_tool
            related = payload(
                await call("search_memory", {"memory": "alice", "query": "sourdough"})
            )
            unrelated = payload(
                await call(
                    "search_memory", {"memory": "alice", "query": "quantum chromodynamics lecture"}
                )
            )
        return related, unrelated

    related, unrelated = asyncio.run(session())
    assert related["match"] in ("strong", "weak") and "note" not in related
    assert related["results"][0]["title"] == "Bread"
    # The agent reads the note before any result; every result is marked as no match.
    assert next(iter(unrelated)) == "note" and unrelated["match"] == "none"
    assert unrelated["note"].startswith("Nothing in memory 'alice' matches this question well")
    assert unrelated["results"] and {h["grade"] for h in unrelated["results"]} == {"none"}
