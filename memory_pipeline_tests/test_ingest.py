"""Ingest stores episodes in batches while it parses, with the report one pass would give."""

from __future__ import annotations

from memory_pipeline import ingest
from memory_pipeline.domain.sources import parse_paths
from memory_pipeline_tests.helpers import count, episode, write_jsonl


def test_a_large_input_is_stored_a_batch_per_transaction_while_it_is_parsed(
    db, tmp_path, monkeypatch
):
    monkeypatch.setattr(ingest, "BATCH", 2)
    path = write_jsonl(tmp_path / "e.jsonl", [episode(i) for i in range(5)] + [episode(0)])
    with path.open("a", encoding="utf-8") as handle:
        handle.write('{"memory": "alice"}\n')
    report = ingest.ingest_paths(db, [path])
    assert (report.inserted, report.duplicates, report.files_read) == (5, 1, 1)
    assert [r.location for r in report.rejections] == [f"{path}:7"]
    with db.connection() as conn:
        titles = dict(conn.execute("SELECT id, title FROM episodes").fetchall())
    assert [titles[i] for i in report.inserted_ids] == [
        f"Entry {i}" for i in range(5)
    ]  # input order
    # Five episodes in batches of two: three transactions wrote them.
    assert count(db, "SELECT count(DISTINCT xmin::text) FROM episodes") == 3
    again = ingest.ingest_paths(db, [path])
    assert (again.inserted, again.duplicates) == (0, 6)


def test_a_sink_receives_each_draft_in_order_and_none_is_kept(tmp_path):
    path = write_jsonl(tmp_path / "e.jsonl", [episode(i) for i in range(3)])
    received = []
    result = parse_paths([path], sink=received.append)
    assert result.episodes == [] and [d.title for d in received] == [
        "Entry 0",
        "Entry 1",
        "Entry 2",
    ]
    assert [d.title for d in parse_paths([path]).episodes] == ["Entry 0", "Entry 1", "Entry 2"]
