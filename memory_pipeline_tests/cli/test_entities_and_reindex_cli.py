"""``memory-pipeline entities`` and ``reindex`` as a user runs them: through the core, with their
messages and exit codes."""

from __future__ import annotations

from memory_pipeline_tests.helpers import count, episode, write_jsonl
from memory_pipeline_tests.support.loopback import LoopbackEmbeddingServer


def _ollama_env(url: str) -> dict:
    return {"MEMORY_PIPELINE_EMBED_PROVIDER": "ollama", "OLLAMA_HOST": url}


def test_entities_import_links_mentions_and_list_shows_them(cli, tmp_path, db):
    write_jsonl(
        tmp_path / "e.jsonl",
        [episode(i, words="a harbour walk with Marta Quintela") for i in range(3)]
        + [episode(9, memory="bob")],
    )
    assert cli("ingest", str(tmp_path / "e.jsonl")).code == 0
    (tmp_path / "entities.jsonl").write_text(
        '{"memory": "alice", "name": "Marta Quintela", "aliases": ["Marta"]}\n{"name": "Nobody"}\n',
        encoding="utf-8",
    )
    imported = cli("entities", "import", str(tmp_path / "entities.jsonl"), "--json")
    # The line without a memory is rejected with its place; the other is stored and linked.
    assert imported.code == 3, imported.err
    assert imported.json()["imported"] == 1 and imported.json()["mentionsAdded"] == 3
    assert "entities.jsonl:2:" in imported.err
    assert count(db, "SELECT count(*) FROM entity_mentions WHERE memory = 'alice'") == 3
    listed = cli("entities", "list", "--memory", "alice", "--json")
    assert listed.code == 0, listed.err
    [row] = [r for r in listed.json() if r["entity"] == "Marta Quintela"]
    assert row["episodes"] == 3 and "Marta" in row["aliases"]
    unknown = cli("entities", "list", "--memory", "carol")
    assert unknown.code == 2 and "unknown memory 'carol' in the database " in unknown.err
    assert "(existing: alice, bob)" in unknown.err


def test_reindex_builds_a_new_generation_and_rollback_serves_the_old_one(cli, tmp_path):
    write_jsonl(tmp_path / "e.jsonl", [episode(i) for i in range(3)])
    assert cli("ingest", str(tmp_path / "e.jsonl")).code == 0
    nothing = cli("reindex", "--rollback")
    assert nothing.code == 2 and "nothing to roll back" in nothing.err
    with LoopbackEmbeddingServer(dim=1024) as server:
        env = _ollama_env(server.url)
        assert cli("index", env=env).code == 0
        started = cli("reindex", "--no-wait", env=env)
        assert started.code == 0, started.err
        assert "started generation 2 of ollama/qwen3-embedding:0.6b@512" in started.out
        status = cli("status", "--json", env=env).json()
        assert status["activeProfile"]["generation"] == 1 and status["pendingEpisodes"] == 3
        # `index` measured the model of the generation it wrote, through the core's index path.
        assert status["calibration"]["measured"] and not status["calibration"]["retry"]
        resumed = cli("reindex", env=env)
        assert resumed.code == 0, resumed.err
        assert "resuming generation 2" in resumed.out and "generation 2" in resumed.out
        after = cli("status", "--json", env=env).json()
        assert after["activeProfile"]["generation"] == 2
        # The reindex's passes measured generation 2 the same way (its own stored calibration).
        assert after["calibration"]["measured"]
        # Rolling back asks the model served now (its canary) before serving generation 1 again.
        rolled = cli("reindex", "--rollback", env=env)
        assert rolled.code == 0, rolled.err
        assert "generation 1 (was generation 2)" in rolled.out
        assert cli("status", "--json", env=env).json()["activeProfile"]["generation"] == 1
