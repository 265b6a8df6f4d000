"""The console script end to end: exit codes, located errors, JSON documents, no tracebacks."""

from __future__ import annotations

import datetime as dt
import json
import signal
import time

import psutil
import pytest

from memory_pipeline.domain.chunking import chunk_body
from memory_pipeline.domain.windows import paragraph_windows
from memory_pipeline_tests.helpers import count, dagster_instance, episode, write_jsonl
from memory_pipeline_tests.support.loopback import LoopbackEmbeddingServer, unused_port_url
from memory_pipeline_tests.support.processes import postmasters_under


def _ollama_env(url: str) -> dict:
    return {"MEMORY_PIPELINE_EMBED_PROVIDER": "ollama", "OLLAMA_HOST": url}


def test_ingest_stores_valid_lines_and_locates_every_rejection(cli, tmp_path):
    good = [episode(i) for i in range(3)]
    lines = [
        json.dumps(good[0]),
        "{not json",
        json.dumps(good[1]),
        json.dumps({**good[2], "body": "  "}),
        json.dumps({**good[2], "salience": 2}),
        json.dumps({**good[2], "body": "nul \u0000 here"}),
        json.dumps(good[2]),
    ]
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with path.open("ab") as f:
        f.write(b'{"memory": "alice", "body": "\xff\xfe"}\n')
    result = cli("ingest", str(path), "--json")
    assert result.code == 3, result.err
    assert "Traceback" not in result.err
    located = [line for line in result.err.splitlines() if line.startswith(str(path))]
    assert [line.split(":")[1] for line in located] == ["2", "4", "5", "6", "8"]
    assert "malformed JSON" in located[0] and "empty body" in located[1]
    assert "salience" in located[2] and "NUL" in located[3] and "UTF-8" in located[4]
    doc = result.json()
    assert doc["inserted"] == 3 and len(doc["rejected"]) == 5
    again = cli("ingest", str(path), "--json")
    assert again.json()["inserted"] == 0 and again.json()["duplicates"] == 3


def test_ingest_arguments_are_checked(cli, tmp_path):
    missing = cli("ingest", str(tmp_path / "nope.md"), "--memory", "m")
    assert missing.code == 3 and "nope.md:0:" in missing.err and "Traceback" not in missing.err
    bad_memory = cli("ingest", str(tmp_path), "--memory", "not a name!")
    assert bad_memory.code == 2 and "--memory 'not a name!'" in bad_memory.err
    bad_day = cli("index", "--day", "yesterday")
    assert bad_day.code == 2 and "not a date" in bad_day.err


def test_markdown_and_folder_ingest_with_defaults(cli, tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# Поездка в Загреб\n\nАна встретила меня 🙂", encoding="utf-8")
    (notes / "b.txt").write_text("plain text note", encoding="utf-8")
    result = cli("ingest", str(notes), "--memory", "mara", "--kind", "journal", "--json")
    assert result.code == 0, result.err
    assert result.json()["inserted"] == 2


def test_index_then_status_json(cli, tmp_path):
    write_jsonl(tmp_path / "e.jsonl", [episode(i) for i in range(4)])
    assert cli("ingest", str(tmp_path / "e.jsonl")).code == 0
    before = cli("status", "--json").json()
    assert (
        before["episodes"] == 4
        and before["pendingEpisodes"] == 4
        and before["activeProfile"] is None
    )
    today = dt.datetime.now(dt.UTC).date().isoformat()
    assert before["pendingByDay"] == {today: 4}
    with LoopbackEmbeddingServer(dim=1024) as server:
        indexed = cli("index", "--json", env=_ollama_env(server.url))
    assert indexed.code == 0, indexed.err
    assert indexed.json()["episodes"] == 4 and indexed.json()["pendingEpisodes"] == 0
    texts = {c.chunk_id: c.text for i in range(4) for c in chunk_body(episode(i)["body"])}
    assert (
        indexed.json()["windowVectors"]
        == sum(len(paragraph_windows(t)) for t in texts.values())
        > 0
    )
    after = cli("status", "--json").json()
    assert after["pendingEpisodes"] == 0 and after["pendingByDay"] == {}
    assert after["chunks"] == after["vectors"] > 0
    assert after["vectorsWithWindows"] == sum(1 for t in texts.values() if paragraph_windows(t)) > 0
    assert after["activeProfile"]["name"] == "ollama/qwen3-embedding:0.6b@512"
    assert after["canary"] == {"state": "ready", "reason": None, "recorded": True}
    assert after["building"] is None and after["lastNightlyRun"] is None
    # index leaves search fast: the serving generation's HNSW index is built, not left to a night.
    assert after["index"]["exists"] is True and after["index"]["valid"] is True
    assert after["index"]["building"] is None
    human = cli("status")
    assert "pending episodes: 0" in human.out and "canary:           ready" in human.out
    assert "last nightly run: never" in human.out


def test_expected_failures_have_their_own_message_and_exit_code(cli, tmp_path):
    write_jsonl(tmp_path / "e.jsonl", [episode(1)])
    cli("ingest", str(tmp_path / "e.jsonl"))
    down = cli("index", env=_ollama_env(unused_port_url()))
    assert down.code == 5 and "the Ollama embedding service is unavailable" in down.err
    openai_down = cli(
        "index",
        env={
            "MEMORY_PIPELINE_EMBED_PROVIDER": "openai",
            "MEMORY_PIPELINE_EMBED_URL": unused_port_url(),
        },
    )
    assert (
        openai_down.code == 5
        and "the OpenAI-compatible embedding service is unavailable" in openai_down.err
    )
    with LoopbackEmbeddingServer(dim=256) as server:
        wrong = cli("index", env=_ollama_env(server.url))
    assert wrong.code == 6 and "256" in wrong.err
    with LoopbackEmbeddingServer(dim=1024, models={"other"}) as server:
        missing_model = cli("index", env=_ollama_env(server.url))
    assert missing_model.code == 6 and "ollama pull qwen3-embedding:0.6b" in missing_model.err
    db_down = cli(
        "status",
        env={
            "MEMORY_PIPELINE_DATABASE_URL": f"postgresql://u:pw@127.0.0.1:{unused_port_url().rsplit(':', 1)[1]}/x"
        },
    )
    assert db_down.code == 4 and db_down.err.startswith(
        "memory-pipeline: the database is unavailable"
    )
    bad_config = cli("index", env={"MEMORY_PIPELINE_EMBED_DIM": "lots"})
    assert bad_config.code == 7 and "MEMORY_PIPELINE_EMBED_DIM='lots'" in bad_config.err
    bad_switch = cli("index", env={"MEMORY_PIPELINE_PARAGRAPH_WINDOWS": "maybe"})
    assert (
        bad_switch.code == 7
        and "MEMORY_PIPELINE_PARAGRAPH_WINDOWS='maybe': expected on or off" in bad_switch.err
    )
    for result in (down, openai_down, wrong, missing_model, db_down, bad_config, bad_switch):
        assert "Traceback" not in result.err


def test_cli_ingest_and_index_mark_the_days_partitions_in_dagster(cli, tmp_path, db, db_url):
    import dagster as dg

    write_jsonl(
        tmp_path / "e.jsonl",
        [episode(i, words="harbour walk with Marta Quintela") for i in range(2)],
    )
    result = cli("ingest", str(tmp_path / "e.jsonl"))
    assert result.code == 0 and "warning" not in result.err, result.err
    with LoopbackEmbeddingServer(dim=1024) as server:
        indexed = cli("index", env=_ollama_env(server.url))
    assert indexed.code == 0 and "warning" not in indexed.err, indexed.err
    # `index` did the entity_mentions partition's work for the day too: its names are extracted.
    assert count(db, "SELECT count(*) FROM episode_names") == 2
    with dagster_instance(db_url, tmp_path / "dagster_home") as instance:
        today = dt.datetime.now(dt.UTC).date().isoformat()
        for asset in ("episodes", "chunks", "embeddings", "entity_mentions"):
            assert today in instance.get_materialized_partitions(dg.AssetKey(asset)), asset
        assert instance.get_dynamic_partitions("ingest_days") == [today]
        event = instance.get_latest_materialization_event(dg.AssetKey("episodes"))
        assert event.asset_materialization.metadata["dagster/row_count"].value == 2


@pytest.mark.slow
def test_index_interrupted_leaves_no_process_behind_and_the_next_run_links_everything(
    cli, tmp_path, db
):
    # 300 episodes, one call of 16 at a time, half a second each: about 10 s of model work, so a
    # test process starved on a busy machine still interrupts the pass before it ends.
    write_jsonl(
        tmp_path / "e.jsonl",
        [episode(i, paragraphs=1, words="harbour walk with Marta Quintela") for i in range(300)],
    )
    assert cli("ingest", str(tmp_path / "e.jsonl")).code == 0
    # The pass commits its first batch and goes on.
    with LoopbackEmbeddingServer(dim=1024, delay_s=0.5, slots=1) as server:
        proc = cli.start("index", env=_ollama_env(server.url))
        deadline = time.monotonic() + 60
        while (
            count(db, "SELECT count(DISTINCT episode_id) FROM chunks") == 0
            and time.monotonic() < deadline
        ):
            time.sleep(0.1)  # the pass has committed a batch: its linking worker is running
        children = psutil.Process(proc.pid).children(recursive=True)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert (
            proc.returncode == 130
            and "memory-pipeline: interrupted" in err
            and "Traceback" not in err
        ), err
        assert children and psutil.wait_procs(children, timeout=10)[1] == []
        assert 0 < count(db, "SELECT count(DISTINCT episode_id) FROM chunks") < 300
        server.delay_s = 0.0
        again = cli("index", env=_ollama_env(server.url))
    assert again.code == 0, again.err
    assert count(db, "SELECT count(*) FROM episode_names") == 300


def test_embedded_default_starts_and_leaves_no_server_behind(cli, tmp_path):
    home = tmp_path / "embedded_home"
    env = {"MEMORY_PIPELINE_DATABASE_URL": None, "MEMORY_PIPELINE_HOME": str(home)}
    # A command that writes creates the embedded database (one that only reads never does).
    created = cli("index", env=env)
    assert created.code == 0, created.err
    result = cli("status", "--json", env=env)
    assert result.code == 0, result.err
    assert result.json()["episodes"] == 0
    assert (home / "pgdata" / "PG_VERSION").exists()
    deadline = time.time() + 10
    while postmasters_under(home / "pgdata") and time.time() < deadline:
        time.sleep(0.2)
    assert postmasters_under(home / "pgdata") == []
