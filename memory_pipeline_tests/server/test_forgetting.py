"""Forgetting every kind of row a memory can hold, statements-only memories included, through
``DELETE /v1/memories``, the CLI and the MCP tool; and a report that counts each table it
deleted from, checked against a scan of every table that has a ``memory`` column."""

from __future__ import annotations

import json

import pytest

from memory_pipeline.storage import champions_store, entities_store
from memory_pipeline_tests.server.test_request_guard import mcp_call, tool_result
from memory_pipeline_tests.server.test_tokens_isolation import cli, ep
from memory_pipeline_tests.support import stores
from memory_pipeline_tests.support.service import ServerProcess

# A table that keeps a row per memory after forgetting, and why it may.
KEPT = {"entity_versions": "a counter the entity triggers bump: no content, only a version"}


def memory_tables(local) -> list[str]:
    with local.db.connection() as conn:
        return [
            r[0]
            for r in conn.execute(
                "SELECT table_name FROM information_schema.columns WHERE column_name = 'memory' "
                "AND table_schema = 'public' AND table_name IN (SELECT table_name FROM "
                "information_schema.tables WHERE table_type = 'BASE TABLE') ORDER BY 1"
            )
        ]


def scan(local, memory: str) -> dict[str, int]:
    """Rows of ``memory`` in every table with a memory column, and in the tables whose rows
    belong to it through an episode (chunks' dependants)."""
    counts = {}
    with local.db.connection() as conn:
        for table in memory_tables(local):
            counts[table] = conn.execute(
                f"SELECT count(*) FROM {table} WHERE memory = %s",  # noqa: S608 - catalog names
                (memory,),
            ).fetchone()[0]
        for table in ("episode_names", "entity_mentions"):
            counts[table] = conn.execute(
                f"SELECT count(*) FROM {table} t JOIN episodes e ON e.id = t.episode_id "  # noqa: S608
                "WHERE e.memory = %s",
                (memory,),
            ).fetchone()[0]
    return counts


def assert_report_matches(before: dict, after: dict, deleted: dict) -> None:
    for table, rows in before.items():
        if table in KEPT:
            continue
        gone = rows - after[table]
        assert deleted["tables"].get(table, 0) == gone, (table, gone, deleted["tables"])
    assert deleted["statements"] == deleted["tables"]["observations"]
    assert deleted["statementVectors"] == deleted["tables"]["observation_embeddings"]


def test_a_memory_of_statements_only_is_forgotten_through_the_api(api, local):
    local.add([ep("kept", "K", "The kept memory holds apples.")])
    for text in ("Typo likes green tea", "Typo's cat is named Biscuit"):
        saved = api.post("/v1/observations", json={"memory": "typo", "text": text})
        assert saved.status_code == 201, saved.text
    assert api.post("/v1/index").status_code == 200  # the statements get their vectors
    before = scan(local, "typo")
    kept = scan(local, "kept")
    assert before["observations"] == 2 and before["observation_embeddings"] == 2

    forgot = api.delete("/v1/memories/typo")

    assert forgot.status_code == 200, forgot.text
    deleted = forgot.json()["deleted"]
    assert deleted["statements"] == 2 and deleted["statementVectors"] == 2
    after = scan(local, "typo")
    assert {t: n for t, n in after.items() if t not in KEPT} == {
        t: 0 for t in after if t not in KEPT
    }
    assert_report_matches(before, after, deleted)
    assert scan(local, "kept") == kept
    assert api.get("/v1/observations", params={"memory": "typo"}).json()["observations"] == []
    gone = api.get("/v1/search", params={"memory": "typo", "q": "green tea"})
    assert gone.status_code == 404 and gone.json()["error"].startswith("unknown memory 'typo'")
    assert api.delete("/v1/memories/typo").status_code == 404  # nothing left to forget


@pytest.mark.slow  # the CLI and an MCP server in turn: seconds
def test_the_cli_and_the_mcp_tool_forget_statements_only_memories(env, local):
    noted = cli(env, "observe", "Mara runs on Tuesdays", "--memory", "mrea")
    assert noted.returncode == 0, noted.stderr
    assert "memory 'mrea' did not exist" in noted.stderr  # the typo is said aloud
    again = cli(env, "observe", "Mara swims on Fridays", "--memory", "mrea")
    assert "did not exist" not in again.stderr
    forgot = cli(env, "forget", "--memory", "mrea", "--all")
    assert forgot.returncode == 0, forgot.stderr
    assert "2 statement(s)" in forgot.stdout
    assert local.observations("mrea") == []

    local.observe("agent", "The agent noted a deadline", decision="add")
    server = ServerProcess(["mcp", "--http", "--port", "0"], env)
    try:
        import httpx

        with httpx.Client(base_url=server.url, timeout=60) as client:
            failed, text = tool_result(
                mcp_call(client, "forget", {"memory": "agent", "whole_memory": True})
            )
    finally:
        server.close()
    assert not failed, text
    assert json.loads(text)["deleted"]["statements"] == 1
    assert scan(local, "agent")["observations"] == 0


def test_the_report_counts_every_table_forgetting_deletes_from(api, local):
    ids = local.add(
        [
            ep("alice", "Market", "Lucinda Okonkwo sells apples at the Harbor market.\n\nPears."),
            ep("alice", "Garden", "Lucinda Okonkwo planted pears in the Harbor garden."),
            ep("bob", "Bob", "Bob sells apples too."),
        ]
    ).inserted_ids
    local.index()
    local.observe("alice", "Lucinda sells apples", episode_ids=[ids[0]], decision="add")
    local.observe("alice", "Lucinda grows pears", episode_ids=[ids[0], ids[1]], decision="add")
    local.observe("alice", "Alice is curious", decision="add")
    local.index()
    local.search("alice", "apples Lucinda")
    # Entities and keyword champion lists too (a memory this small has none of its own).
    with local.db.connection() as conn:
        stores.refresh_memories(conn, ["alice", "bob"], entities_store.EntityReport())
        champions_store.refresh_all_champions(conn, min_df=1, memories=["alice"])
    bob = scan(local, "bob")

    before = scan(local, "alice")
    for table in ("entity_mentions", "entities", "keyword_champions", "observation_embeddings"):
        assert before[table] > 0, table
    one = api.delete(f"/v1/episodes/{ids[0]}").json()["deleted"]
    middle = scan(local, "alice")
    assert_report_matches(before, middle, one)
    assert one["statements"] == 1 and one["statementsTrimmed"] == 1
    assert one["tables"]["search_telemetry"] == 1

    whole = api.delete("/v1/memories/alice").json()["deleted"]
    after = scan(local, "alice")
    assert_report_matches(middle, after, whole)
    assert {t: n for t, n in after.items() if t not in KEPT} == {
        t: 0 for t in after if t not in KEPT
    }
    assert whole["statements"] == 2 and whole["episodes"] == 1
    assert scan(local, "bob") == bob
