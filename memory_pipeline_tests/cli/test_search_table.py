"""The search table as a person reads it: whole snippets, and a score column that says what it is."""

from __future__ import annotations

import pytest

from memory_pipeline_tests.helpers import write_jsonl
from memory_pipeline_tests.support.loopback import LoopbackEmbeddingServer

# The answer sits about 150 characters into its note, past what a table column shows at once.
LEAD = (
    "Long notes from the quarterly planning meeting about the allotment garden, the shed roof, "
    "the new water butts and who keeps the keys this season. "
)
ANSWER = "The compost thermometer reads 63 degrees at the centre of the heap."
NOTES = [
    ("Allotment meeting", "2026-03-01", LEAD + ANSWER),
    ("Compost basics", "2025-06-01", "Compost wants air and water; turn the heap now and then."),
    ("Compost again", "2024-01-01", "Compost, compost, compost: the heap of compost grew."),
]


@pytest.fixture
def indexed(cli, tmp_path):
    rows = [
        {"memory": "me", "kind": "note", "title": t, "occurred_at": day, "body": body}
        for t, day, body in NOTES
    ]
    assert cli("ingest", str(write_jsonl(tmp_path / "n.jsonl", rows))).code == 0
    with LoopbackEmbeddingServer(dim=1024) as server:
        env = {"MEMORY_PIPELINE_EMBED_PROVIDER": "ollama", "OLLAMA_HOST": server.url}
        done = cli("index", env=env)
        assert done.code == 0, done.err
        yield env


def test_the_table_shows_the_whole_snippet_wrapped_to_the_terminal(cli, indexed):
    table = cli(
        "search",
        "compost thermometer degrees",
        "--memory",
        "me",
        "--channels",
        "keyword",
        env={**indexed, "COLUMNS": "100"},
    )
    assert table.code == 0, table.err
    lines = table.out.splitlines()
    assert max(len(line) for line in lines) <= 100, table.out
    # The snippet's lines, joined again, hold the answer whole.
    snippet_lines = [line.strip() for line in lines if line.startswith(" " * 44)]
    assert ANSWER.split(" at ")[0] in " ".join(snippet_lines), table.out


def test_the_score_column_is_explained_and_may_dip_below_zero(cli, indexed):
    found = cli(
        "search", "compost heap", "--memory", "me", "--channels", "keyword", "--json", env=indexed
    )
    assert found.code == 0, found.err
    document = found.json()
    scores = [r["score"] for r in document["results"]]
    # One channel: its weakest candidate scales to 0, and age nudges it just below.
    assert len(scores) == 3 and min(scores) < 0 < max(scores), scores
    assert document["scoreKind"] == "fused"
    table = cli("search", "compost heap", "--memory", "me", "--channels", "keyword", env=indexed)
    note = " ".join(table.out[table.out.index("score: ") :].split())
    assert note.startswith("score: fused relevance, comparable within this search only")
    assert "just below 0" in note
