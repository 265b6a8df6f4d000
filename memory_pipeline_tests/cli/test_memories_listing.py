"""``memories`` and ``status`` list every memory the error messages name: one that holds only
statements (an agent's observations) too, with its statement count."""

from __future__ import annotations

from memory_pipeline_tests.server.test_tokens_isolation import ep


def test_a_memory_of_statements_only_is_listed_with_its_counts(cli, mem):
    mem.add([ep("alice", "Bread", "Sourdough needs a warm kitchen.")])
    for text in ("Bob prefers green tea.", "Bob cycles to work."):
        assert mem.observe("bob", text, decision="add").action == "added"
    retired = mem.observe("bob", "Bob lives in Porto.", decision="add")
    mem.set_observation_status("bob", retired.saved_id, "retired")

    listed = cli("memories", "--json")
    assert listed.code == 0, listed.err
    rows = {row["name"]: row for row in listed.json()}
    assert set(rows) == {"alice", "bob"}
    assert (rows["bob"]["episodes"], rows["bob"]["chunks"], rows["bob"]["statements"]) == (0, 0, 2)
    assert rows["bob"]["firstAt"] is None and rows["bob"]["lastAt"] is None
    assert (rows["alice"]["episodes"], rows["alice"]["statements"]) == (1, 0)
    assert rows["alice"]["firstAt"].startswith("2026-03-01")

    human = cli("memories").out.splitlines()
    assert "bob: 0 episode(s), 0 chunk(s), 2 statement(s)" in human
    assert any(
        line.startswith("alice: 1 episode(s), 0 chunk(s), 0 statement(s), 2026-03-01")
        for line in human
    )

    assert cli("status", "--json").json()["memories"] == 2
    # The error message of an unknown memory names the same two.
    wrong = cli("search", "tea", "--memory", "carol", "--channels", "keyword")
    assert wrong.code == 2 and "(existing: alice, bob)" in wrong.err
