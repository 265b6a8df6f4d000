"""Keyword champion lists from the console script: ``index`` builds missing or stale ones beside
its pass, ``maintain`` rebuilds them on request."""

from __future__ import annotations

from memory_pipeline.storage import keyword_store
from memory_pipeline_tests.helpers import count, episode, write_jsonl
from memory_pipeline_tests.support.loopback import LoopbackEmbeddingServer


def _ollama_env(url: str) -> dict:
    return {"MEMORY_PIPELINE_EMBED_PROVIDER": "ollama", "OLLAMA_HOST": url}


def test_index_builds_missing_lists_and_maintain_rebuilds_them(cli, tmp_path, db):
    big = keyword_store.CAP + 10  # one chunk each: just over the cap
    write_jsonl(
        tmp_path / "e.jsonl",
        [episode(i, memory="big", paragraphs=1) for i in range(big)]
        + [episode(i, memory="small", paragraphs=1) for i in range(3)],
    )
    assert cli("ingest", str(tmp_path / "e.jsonl")).code == 0
    with LoopbackEmbeddingServer(dim=1024) as server:
        env = _ollama_env(server.url)
        skipped = cli("index", "--no-keyword-lists", "--json", env=env)
        assert skipped.code == 0, skipped.err
        assert (
            skipped.json()["keywordLists"] == []
            and count(db, "SELECT count(*) FROM keyword_champion_state") == 0
        )
        # Nothing pending, but "big" crossed the cap without lists: this pass builds them.
        indexed = cli("index", "--json", env=env)
        assert indexed.code == 0, indexed.err
        [built] = indexed.json()["keywordLists"]
        assert (
            built["memory"] == "big"
            and built["outcome"] == "built"
            and built["rows"] > 0
            and built["lists"] > 0
        )
        assert 0 <= built["lock_seconds"] <= built["seconds"]
    rows = count(db, "SELECT count(*) FROM keyword_champions WHERE memory = 'big'")
    assert rows == built["rows"]

    again = cli("maintain")
    assert again.code == 0, again.err
    assert again.out.startswith(
        f"keyword lists of big: {built['lists']} lists, {rows} rows, rebuilt in "
    )
    assert "writers waited at most" in again.out
    assert cli("maintain", "--stale-only", "--json").json() == {"keywordLists": []}
    small = cli("maintain", "--memory", "small")
    assert (
        small.code == 0
        and "nothing to rebuild: memory 'small' does not have more than 500 chunks" in small.out
    )
    unknown = cli("maintain", "--memory", "nope")
    assert (
        unknown.code == 2
        and "unknown memory 'nope'" in unknown.err
        and "Traceback" not in unknown.err
    )
