"""The assets materialized for real with ``dagster.materialize`` on the test database."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys

import dagster as dg
import pytest

from memory_pipeline.defs.assets.index import chunks, embeddings
from memory_pipeline.defs.assets.ingest import episodes
from memory_pipeline.defs.assets.maintenance import hnsw_index, serving_generation
from memory_pipeline.orchestration.instance import DAGSTER_YAML as PROJECT_DAGSTER_YAML
from memory_pipeline.orchestration.resources import MemoryResource
from memory_pipeline_tests.helpers import count, episode, write_jsonl
from memory_pipeline_tests.support.loopback import LoopbackEmbeddingServer

DAY = "2026-11-02"


def _meta(result, asset_key: str) -> dict:
    events = [
        e
        for e in result.get_asset_materialization_events()
        if e.asset_key.to_user_string() == asset_key
    ]
    assert len(events) == 1
    return {k: v.value for k, v in events[0].materialization.metadata.items()}


def test_partition_loads_its_inbox_and_indexes_it(db, db_url, tmp_path, monkeypatch):
    inbox = tmp_path / "inbox"
    (inbox / DAY).mkdir(parents=True)
    rows = [episode(i) for i in range(5)]
    write_jsonl(inbox / DAY / "batch.jsonl", rows)
    (inbox / DAY / "bad.jsonl").write_text('{"memory": "alice"}\n', encoding="utf-8")
    (inbox / "2026-11-03").mkdir()
    write_jsonl(inbox / "2026-11-03" / "other-day.jsonl", [episode(50)])
    monkeypatch.setenv("MEMORY_PIPELINE_INBOX", str(inbox))

    with LoopbackEmbeddingServer(dim=1024) as server:
        resources = {
            "memory_api": MemoryResource(url=db_url, embed_provider="ollama", embed_url=server.url)
        }
        instance = dg.DagsterInstance.ephemeral()
        instance.add_dynamic_partitions("ingest_days", [DAY])
        result = dg.materialize(
            [episodes, chunks, embeddings],
            partition_key=DAY,
            resources=resources,
            instance=instance,
        )
        assert result.success
        again = dg.materialize(
            [episodes, chunks, embeddings],
            partition_key=DAY,
            resources=resources,
            instance=instance,
        )
        indexes_after_the_days = count(
            db, "SELECT count(*) FROM pg_indexes WHERE starts_with(indexname, 'embeddings_hnsw_')"
        )
        # The global steps, as the sensor's switch_generation_job runs them after the days.
        serving = dg.materialize([serving_generation], resources=resources, instance=instance)
        index = dg.materialize([hnsw_index], resources=resources, instance=instance)

    ep = _meta(result, "episodes")
    assert ep["dagster/row_count"] == 5 and ep["inbox_new"] == 5 and ep["inbox_rejected"] == 1
    assert "bad.jsonl:1" in ep["rejections"]
    ch = _meta(result, "chunks")
    assert ch["dagster/row_count"] == count(db, "SELECT count(*) FROM chunks") > 0
    em = _meta(result, "embeddings")
    assert em["profile"] == "ollama/qwen3-embedding:0.6b@512"
    assert (
        em["new_vectors"] == em["dagster/row_count"] == count(db, "SELECT count(*) FROM embeddings")
    )
    assert em["pending_after"] == 0
    # The run's progress: its last line in the metadata, the same lines in the run's log.
    assert em["progress"].startswith("index: 5/5 episodes, ") and "(100%)" in em["progress"]
    assert em["index_vectors_per_second"] > 0
    logged = [e.user_message for e in instance.all_logs(result.run_id) if e.user_message]
    assert any(m.startswith(f"{DAY}: index: 5/5 episodes, ") for m in logged), logged
    # A day's partition does nothing global (issue 40): no model measurement, no HNSW build,
    # no keyword lists; the unpartitioned serving_generation and hnsw_index assets do them.
    assert not em["calibration"]["measured"] and "search_ready" not in em
    assert indexes_after_the_days == 0
    measured = _meta(serving, "serving_generation")["calibration"]
    assert measured["measured"] and measured["close"] > 0
    # The other day's inbox was not touched by this partition.
    assert count(db, "SELECT count(*) FROM episodes WHERE ingest_day <> %s::date", DAY) == 0
    # Re-running the partition is harmless: nothing new.
    assert (
        _meta(again, "episodes")["inbox_new"] == 0
        and _meta(again, "embeddings")["new_vectors"] == 0
    )
    hn = _meta(index, "hnsw_index")
    assert (
        hn["valid"] is True
        and hn["rebuilt"] is True
        and hn["dagster/row_count"] == em["dagster/row_count"]
    )
    assert hn["size_bytes"] > 0 and hn["m"] == 16 and hn["ef_construction"] == 128
    with db.connection() as conn:
        indexdef = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE indexname = %s", (hn["index"],)
        ).fetchone()[0]
    assert (
        "USING hnsw" in indexdef and "halfvec_cosine_ops" in indexdef and "halfvec(512)" in indexdef
    )
    assert "WHERE ((profile_id = 1) AND (generation = 1))" in indexdef


def test_a_rechunk_run_cuts_its_day_again_and_others_leave_it(db, db_url, tmp_path):
    """``backfill --rechunk`` deletes nothing itself: the tagged run's ``chunks`` step does."""
    from memory_pipeline.ingest import ingest_paths
    from memory_pipeline.orchestration.assets import RECHUNK_TAG

    write_jsonl(tmp_path / "day.jsonl", [episode(i) for i in range(3)])
    ingest_paths(db, [tmp_path / "day.jsonl"], ingest_day=dt.date.fromisoformat(DAY))
    resources = {"memory_api": MemoryResource(url=db_url, embed_provider="ollama")}
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("ingest_days", [DAY])

    def run(tags: dict[str, str]) -> dict:
        result = dg.materialize(
            [chunks], partition_key=DAY, resources=resources, instance=instance, tags=tags
        )
        assert result.success
        return _meta(result, "chunks")

    first = run({})
    stored = count(db, "SELECT count(*) FROM chunks")
    assert first["new_chunks"] == first["dagster/row_count"] == stored > 0
    assert run({})["new_chunks"] == 0
    again = run({RECHUNK_TAG: "true"})
    assert again["new_chunks"] == again["dagster/row_count"] == stored
    assert again["episodes_chunked"] == 3


@pytest.mark.slow  # starts processes
def test_definitions_load_and_validate(tmp_path):
    from memory_pipeline.definitions import load

    repo = load().get_repository_def()
    assert {k.to_user_string() for k in repo.asset_graph.get_all_asset_keys()} >= {
        "episodes",
        "chunks",
        "embeddings",
        "hnsw_index",
    }
    # The same check the UI's code server runs, in a folder with the project's dagster.yaml (its
    # storage class finds the server itself) and no DAGSTER_HOME.
    (tmp_path / "dagster.yaml").write_text(
        PROJECT_DAGSTER_YAML.read_text(encoding="utf-8"), encoding="utf-8"
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "dagster",
            "definitions",
            "validate",
            "-m",
            "memory_pipeline.definitions",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Validation successful" in proc.stdout + proc.stderr
