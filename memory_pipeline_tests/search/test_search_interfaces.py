"""Search through its interfaces: the CLI (single and batch), and the Dagster op and job."""

from __future__ import annotations

import json
import logging

import dagster as dg

from memory_pipeline.defs.search import search_memory_job
from memory_pipeline.orchestration.resources import MemoryResource
from memory_pipeline_tests.cli.conftest import cli  # noqa: F401 - the fixture


def _env(embed_server) -> dict:
    return {"MEMORY_PIPELINE_EMBED_PROVIDER": "ollama", "OLLAMA_HOST": embed_server.url}


def test_cli_search_human_and_json(cli, world, embed_server):  # noqa: F811
    human = cli("search", "bicycle chain", "--memory", "alice", env=_env(embed_server))
    assert human.code == 0, human.err
    assert "Bike repair" in human.out and "policy default" in human.out
    doc = cli(
        "search",
        "bicycle chain",
        "--memory",
        "alice",
        "--json",
        "--limit",
        "2",
        "--channels",
        "vector,keyword",
        env=_env(embed_server),
    ).json()
    assert doc["results"][0]["title"] == "Bike repair" and doc["limit"] == 2
    assert doc["channels"] == ["vector", "keyword"] and set(doc["results"][0]["ranks"]) == {
        "vector",
        "keyword",
    }


def test_cli_search_errors_are_plain(cli, world, embed_server):  # noqa: F811
    env = _env(embed_server)
    cases = [
        (("search", "x", "--memory", "nobody"), "unknown memory 'nobody'"),
        (("search", "   ", "--memory", "alice"), "the query is empty"),
        (("search", "x", "--memory", "alice", "--policy", "nope"), "unknown policy 'nope'"),
        (("search", "x", "--memory", "alice", "--limit", "0"), "--limit 0"),
        (("search", "x", "--memory", "alice", "--channels", "smell"), "unknown channel 'smell'"),
        (("search", "x"), "--memory is required"),
    ]
    for args, message in cases:
        result = cli(*args, env=env)
        assert result.code == 2 and message in result.err and "Traceback" not in result.err, (
            args,
            result.err,
        )
    degraded = cli(
        "search",
        "bicycle",
        "--memory",
        "alice",
        "--json",
        env={"MEMORY_PIPELINE_EMBED_PROVIDER": "ollama", "OLLAMA_HOST": "http://127.0.0.1:9"},
    )
    assert degraded.code == 0 and degraded.json()["vector"]["status"] == "unavailable"
    assert degraded.json()["results"][0]["title"] == "Bike repair"


def test_cli_batch_answers_every_good_line_in_one_process(cli, world, embed_server, tmp_path):  # noqa: F811
    lines = [
        json.dumps({"memory": "alice", "query": "bicycle chain"}),
        "{broken",
        json.dumps({"memory": "bob", "query": "garden", "limit": 1, "channels": ["keyword"]}),
        json.dumps({"memory": "alice", "query": ""}),
        json.dumps({"memory": "alice", "query": "bread", "policy": "journal", "extra": 1}),
        "",
        json.dumps({"memory": "alice", "query": "sourdough", "policy": "journal"}),
        json.dumps({"memory": "alice", "query": "garden", "passages": "yes"}),
        json.dumps({"memory": "alice", "query": "bicycle chain", "passages": True}),
    ]
    path = tmp_path / "queries.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = cli("search", "--batch", str(path), env=_env(embed_server))
    assert result.code == 3
    docs = [json.loads(line) for line in result.out.splitlines()]
    assert [d["line"] for d in docs] == [1, 2, 3, 4, 5, 7, 8, 9]
    assert docs[0]["results"][0]["title"] == "Bike repair"
    assert "malformed JSON" in docs[1]["error"]
    assert (
        docs[2]["memory"] == "bob"
        and len(docs[2]["results"]) == 1
        and docs[2]["channels"] == ["keyword"]
    )
    assert docs[3]["error"] == "the query is empty" and "unknown field" in docs[4]["error"]
    assert docs[5]["results"][0]["title"] == "Recipe night"
    assert docs[6]["error"] == "'passages' must be true or false, got string"
    assert docs[7]["results"][0]["title"] == "Bike repair"


def test_search_job_puts_a_markdown_table_in_the_run(db_url, world, embed_server):
    resources = {
        "memory_api": MemoryResource(
            url=db_url, embed_provider="ollama", embed_url=embed_server.url
        )
    }
    result = search_memory_job.execute_in_process(
        run_config={
            "ops": {
                "search_op": {"config": {"memory": "alice", "query": "bicycle chain", "limit": 3}}
            }
        },
        resources=resources,
    )
    assert result.success
    output = result.output_for_node("search_op")
    assert output["results"][0]["title"] == "Bike repair"
    [event] = [e for e in result.all_events if e.event_type_value == "STEP_OUTPUT"]
    table = event.event_specific_data.metadata["results"].value
    assert "| 1 |" in table and "Bike repair" in table
    instance = dg.DagsterInstance.ephemeral()
    failed = search_memory_job.execute_in_process(
        run_config={"ops": {"search_op": {"config": {"memory": "nobody", "query": "x"}}}},
        resources=resources,
        raise_on_error=False,
        instance=instance,
    )
    # A search that cannot be answered fails the run, with the reason as one plain line: the
    # op's ERROR message and the failure's description (no exception text wrapped around it).
    assert not failed.success and failed.dagster_run.status == dg.DagsterRunStatus.FAILURE
    logged = [
        e.user_message
        for e in instance.all_logs(failed.run_id)
        if e.level >= logging.ERROR and e.dagster_event is None
    ]
    assert len(logged) == 1 and logged[0].startswith("search failed: unknown memory 'nobody'"), (
        logged
    )
    [failure] = [e for e in failed.all_events if e.event_type_value == "STEP_FAILURE"]
    data = failure.event_specific_data
    assert data.user_failure_data.description.startswith("search failed: unknown memory 'nobody'")
    assert "\n" not in data.user_failure_data.description
    assert data.user_failure_data.metadata["memory"].value == "nobody"


def test_search_job_opens_with_a_preset_that_searches_the_demo_memory(db, db_url, embed_server):
    from memory_pipeline.cli.commands import SAMPLE_EPISODES
    from memory_pipeline.indexing.until_done import index_pending
    from memory_pipeline.ingest import ingest_paths
    from memory_pipeline_tests.helpers import ollama_embedder

    ingest_paths(db, SAMPLE_EPISODES)  # what `memory-pipeline demo` loads
    index_pending(db, ollama_embedder(embed_server.url))
    result = search_memory_job.execute_in_process(  # no run config: the Launchpad's preset
        resources={
            "memory_api": MemoryResource(
                url=db_url, embed_provider="ollama", embed_url=embed_server.url
            )
        }
    )
    assert result.success
    output = result.output_for_node("search_op")
    assert "error" not in output and output["memory"] == "mara"
    assert output["results"][0]["title"] == "Postmortem: duplicate invoices (LDG-4102)"
