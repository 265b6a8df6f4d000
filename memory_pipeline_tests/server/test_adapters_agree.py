"""The CLI (``--json``), the HTTP API and the MCP tools give one document per result: a search
hit, an ingest/add report and an index report have the same fields, named and valued alike,
whichever adapter serves them (each is the core result's own ``to_json``/``brief_json``)."""

from __future__ import annotations

import asyncio
import json

from mcp import Client

from memory_pipeline.search.results import BRIEF_FIELDS
from memory_pipeline.server.mcp_server import build_mcp_server
from memory_pipeline_tests.server.test_mcp_server import payload
from memory_pipeline_tests.server.test_tokens_isolation import cli, ep

BREAD = "Sourdough needs a warm kitchen and a patient baker."


def cli_json(env, *args) -> dict:
    done = cli(env, *args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def mcp_call(local, tool: str, arguments: dict) -> dict:
    async def session():
        async with Client(build_mcp_server(local)) as client:
            return payload(await client.call_tool(tool, arguments))

    return asyncio.run(session())


def without_seed_fields(hit: dict) -> dict:
    """An HTTP hit with its documented compatibility fields (``kind: "chunk"``, ``ord: 0``,
    the episode's kind as ``episodeKind``) taken back: what is left is the core's document."""
    if "ord" not in hit:
        return hit
    hit = {k: v for k, v in hit.items() if k != "ord"}
    hit["kind"] = hit.pop("episodeKind")
    return hit


def test_a_search_hit_is_one_document_everywhere(api, env, local):
    local.add(
        [
            ep("alice", "Bread", BREAD),
            ep("alice", "Bike", "The bicycle chain was oiled on Sunday."),
        ]
    )
    local.index()
    question = {"memory": "alice", "q": "sourdough kitchen", "limit": 2}

    by_cli = cli_json(env, "search", question["q"], "--memory", "alice", "--limit", "2")
    by_http = api.get("/v1/search", params=question).json()
    by_mcp = mcp_call(
        local, "search_memory", {"memory": "alice", "query": question["q"], "limit": 2}
    )

    hits = by_cli["results"]
    assert len(hits) == 2 and hits[0]["title"] == "Bread" and hits[0]["kind"] == "note"
    assert [without_seed_fields(h) for h in by_http["results"]] == hits
    assert by_mcp["results"] == [{k: h[k] for k in BRIEF_FIELDS if k in h} for h in hits]
    assert {"occurredAt", "episodeId", "score", "grade"} <= set(by_mcp["results"][0])
    # The response around the hits: the same document but for the time it took.
    around = {k: v for k, v in by_cli.items() if k not in ("results", "latencyMs")}
    assert {k: v for k, v in by_http.items() if k not in ("results", "latencyMs")} == around
    assert (by_mcp["match"], by_mcp["memory"], by_mcp["query"]) == (
        by_cli["match"]["grade"],
        by_cli["memory"],
        by_cli["query"],
    )


def test_ingest_and_index_reports_are_one_document_everywhere(api, env, local, tmp_path):
    source = tmp_path / "bread.jsonl"
    source.write_text(json.dumps(ep("alice", "Bread", BREAD)) + "\n", encoding="utf-8")

    ingested = cli_json(env, "ingest", str(source))
    indexed = cli_json(env, "index")
    added = api.post("/v1/episodes", json=ep("bob", "Bread", BREAD))
    assert added.status_code == 201
    served = api.post("/v1/index").json()

    # The same episode stored in two memories: the same report but for the new id; the CLI
    # says also how many files it read.
    assert ingested.pop("filesRead") == 1
    assert len(ingested["episodeIds"]) == len(added.json()["episodeIds"]) == 1
    assert {**added.json(), "episodeIds": ingested["episodeIds"]} == ingested
    # The same episode indexed twice: the same counts, under the same names (HTTP serves the
    # counts and the profile; the CLI also the keyword lists and what the pass left for search).
    assert indexed["episodes"] == 1 and indexed["windowVectors"] >= 0
    assert {k: v for k, v in served.items() if k != "seconds"} == {
        k: indexed[k] for k in served if k != "seconds"
    }
    assert set(served) == {"profile", "seconds", "episodes", "chunks", "vectors"} | {
        "windowVectors",
        "pendingEpisodes",
    }

    # MCP's add answer reads the same report: a body already stored is a duplicate, no new id.
    again = mcp_call(
        local, "add_memory", {"memory": "alice", "title": "Bread", "body": BREAD, "index": False}
    )
    assert again == {"memory": "alice", "episodeId": None, "duplicate": True}


def test_passages_reach_every_adapter(api, env, local):
    # By default an episode holds one result (its best passage); `passages` lets it hold several,
    # asked alike on the command line, over HTTP and through MCP.
    filler = "\n\n".join(
        f"Paragraph {i} is about the bicycle chain and its gears." for i in range(60)
    )
    body = f"Sourdough starter rests in a warm kitchen.\n\n{filler}\n\nSourdough loaves rise in the warm kitchen."
    local.add([ep("bob", "Baking log", body), ep("bob", "Bike", "The bicycle was oiled.")])
    local.index()
    query = "sourdough warm kitchen"
    base = ("search", query, "--memory", "bob", "--channels", "keyword", "--limit", "5")

    def titles(document: dict) -> list[str]:
        return [hit["title"] for hit in document["results"] if hit["title"] == "Baking log"]

    assert titles(cli_json(env, *base)) == ["Baking log"]
    several = titles(cli_json(env, *base, "--passages"))
    assert len(several) >= 2
    params = {"memory": "bob", "q": query, "channels": "keyword", "limit": 5}
    assert titles(api.get("/v1/search", params=params).json()) == ["Baking log"]
    assert titles(api.get("/v1/search", params={**params, "passages": "true"}).json()) == several
    arguments = {"memory": "bob", "query": query, "channels": "keyword", "limit": 5}
    assert titles(mcp_call(local, "search_memory", arguments)) == ["Baking log"]
    assert titles(mcp_call(local, "search_memory", {**arguments, "passages": True})) == several
