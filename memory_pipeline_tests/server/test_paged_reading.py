"""Paging is the guarantee: a 2,000,000-character document read page by page, to its end,
through the HTTP API, ``Memory.read``, the MCP tool and the CLI; pages name a search hit's text."""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
import sys

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from memory_pipeline.domain.episodes import MAX_BODY_CHARS
from memory_pipeline.domain.pages import PAGE_CHARS
from memory_pipeline_tests.support.service import CLI

WORDS = (
    "harbor lantern orchard meadow river quarry signal ledger copper violet thistle anchor "
    "canyon ember glacier hollow island juniper kestrel lagoon marble nectar opal prairie"
).split()
NEEDLE = "The lighthouse keeper's code word is quibblefrost."
NEEDLE_AT = 1_234_567


def long_body() -> str:
    """Exactly MAX_BODY_CHARS characters of numbered paragraphs, the needle about 1.2 M in."""
    rng = random.Random(29)
    parts, size, i, placed = [], 0, 0, False
    while size < MAX_BODY_CHARS:
        sentence = " ".join(rng.choice(WORDS) for _ in range(rng.randint(40, 160)))
        paragraph = f"Paragraph {i}. {sentence}.\n\n"
        if not placed and size + len(paragraph) > NEEDLE_AT:
            paragraph, placed = f"Paragraph {i}. {NEEDLE}\n\n", True
        parts.append(paragraph)
        size += len(paragraph)
        i += 1
    return "".join(parts)[:MAX_BODY_CHARS]


@pytest.fixture
def document(api, local):
    body = long_body()
    assert len(body) == MAX_BODY_CHARS and body.count(NEEDLE) == 1
    added = api.post(
        "/v1/episodes",
        json={
            "memory": "alice",
            "kind": "doc",
            "title": "The long report",
            "occurred_at": "2026-03-01",
            "body": body,
        },
    )
    assert added.status_code == 201, added.text
    return added.json()["episodeIds"][0], body


def read_all(read) -> list[dict]:
    """Pages 1, 2, ... until the count the first page gave."""
    pages = [read(1)]
    while len(pages) < pages[0]["pages"]:
        pages.append(read(len(pages) + 1))
    return pages


def check_pages(pages: list[dict], body: str) -> None:
    assert "".join(p["text"] for p in pages) == body
    assert [p["page"] for p in pages] == list(range(1, len(pages) + 1))
    assert {p["pages"] for p in pages} == {len(pages)}
    assert pages[0]["start"] == 0 and pages[-1]["end"] == len(body)
    for before, after in zip(pages, pages[1:]):
        assert before["end"] == after["start"]
    for p in pages:
        assert p["text"] == body[p["start"] : p["end"]] and len(p["text"]) <= PAGE_CHARS
        assert p["characters"] == len(body) and "body" not in p
    assert all(len(p["text"]) > PAGE_CHARS - 1600 for p in pages[:-1])


def test_a_long_document_is_read_to_its_end_page_by_page(api, local, env, document):
    episode_id, body = document

    def http_page(number: int) -> dict:
        answer = api.get(f"/v1/episodes/{episode_id}", params={"page": number})
        assert answer.status_code == 200, answer.text
        return answer.json()

    # Before the index pass: the pages of the chunks it will store.
    unindexed = read_all(http_page)
    check_pages(unindexed, body)
    assert len(unindexed) == unindexed[0]["pages"] >= MAX_BODY_CHARS // PAGE_CHARS
    assert unindexed[0]["chunks"] == 0

    assert api.post("/v1/index").status_code == 200
    indexed = read_all(lambda n: local.read(episode_id, page=n).to_json())
    check_pages(indexed, body)
    assert indexed[0]["chunks"] > 0
    # The same pages, chunk for chunk, before and after the chunks were stored.
    assert [(p["start"], p["end"], p["chunkIds"]) for p in indexed] == [
        (p["start"], p["end"], p["chunkIds"]) for p in unindexed
    ]
    assert read_all(http_page) == indexed

    # A search hit lies in the page that holds its chunk, with the same text there.
    found = api.get(
        "/v1/search",
        params={"memory": "alice", "q": "quibblefrost", "channels": "keyword", "limit": 1},
    ).json()["results"][0]
    (holding,) = [p for p in indexed if p["start"] <= found["start"] < p["end"]]
    assert found["chunkId"] in holding["chunkIds"] and NEEDLE in found["text"]
    offset = found["start"] - holding["start"]
    assert holding["text"][offset : offset + len(found["text"])] == found["text"]


def test_bad_page_numbers_are_located_errors(api, local, env, document):
    episode_id, _ = document
    pages = api.get(f"/v1/episodes/{episode_id}", params={"page": 1}).json()["pages"]
    past = api.get(f"/v1/episodes/{episode_id}", params={"page": pages + 1})
    assert past.status_code == 404
    assert past.json() == {
        "error": f"episode {episode_id} has {pages} page(s), numbered 1 to {pages}; "
        f"no page {pages + 1}"
    }
    for bad, words in (("0", "greater than or equal to 1"), ("two", "valid integer")):
        answer = api.get(f"/v1/episodes/{episode_id}", params={"page": bad})
        assert answer.status_code == 422, answer.text
        assert answer.json()["error"].startswith("query parameter 'page'")
        assert words in answer.json()["error"]
    assert api.get("/v1/episodes/999999", params={"page": 1}).status_code == 404

    last = subprocess.run(
        [*CLI, "read", str(episode_id), "--page", str(pages)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert last.returncode == 0, last.stderr
    assert last.stdout == local.read(episode_id, page=pages).text
    assert f"page {pages} of {pages}" in last.stderr and f"of {MAX_BODY_CHARS}" in last.stderr
    beyond = subprocess.run(
        [*CLI, "read", str(episode_id), "--page", str(pages + 1)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert beyond.returncode == 2 and beyond.stdout == ""
    assert f"has {pages} page(s)" in beyond.stderr and "Traceback" not in beyond.stderr


def test_the_mcp_tool_reads_pages_and_refuses_a_missing_one(env, local, document):
    episode_id, body = document

    async def session():
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "memory_pipeline.cli.main", "mcp"], env=env
        )
        async with Client(params) as client:
            second = await client.call_tool("read_episode", {"episode_id": episode_id, "page": 2})
            missing = await client.call_tool(
                "read_episode", {"episode_id": episode_id, "page": 10_000}
            )
            return json.loads(second.content[0].text), missing

    second, missing = asyncio.run(session())
    assert second["page"] == 2 and second["text"] == body[second["start"] : second["end"]]
    assert second["text"] == local.read(episode_id, page=2).text
    assert missing.is_error and "no page 10000" in missing.content[0].text
