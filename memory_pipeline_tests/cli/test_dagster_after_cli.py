"""Dagster's pages are true after CLI work: `memory-pipeline index` records each day's partitions
with the metadata a Dagster run records and the days' check results, read back from the real
instance; the partitions stay in date order."""

from __future__ import annotations

import datetime as dt

import dagster as dg

from memory_pipeline.ingest import ingest_paths
from memory_pipeline.orchestration.instance import PARTITIONS, add_partitions, in_date_order
from memory_pipeline_tests.helpers import count, dagster_instance, episode, write_jsonl
from memory_pipeline_tests.support.loopback import LoopbackEmbeddingServer

DAYS = ("2026-11-20", "2026-11-21")


def _meta(instance, asset: str, day: str) -> dict:
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[day]), limit=1
    ).records
    assert records, (asset, day)
    return {k: v.value for k, v in records[0].asset_materialization.metadata.items()}


def test_cli_index_records_the_days_metadata_and_check_results(cli, tmp_path, db, db_url):
    # Two ingest days, the later one stored first.
    for i, day in enumerate(reversed(DAYS)):
        path = tmp_path / f"{day}.jsonl"
        write_jsonl(path, [episode(10 * i + j, words="harbour walk with Marta") for j in range(3)])
        ingest_paths(db, [path], ingest_day=dt.date.fromisoformat(day))
    with LoopbackEmbeddingServer(dim=1024) as server:
        indexed = cli(
            "index", env={"MEMORY_PIPELINE_EMBED_PROVIDER": "ollama", "OLLAMA_HOST": server.url}
        )
    assert indexed.code == 0 and "warning" not in indexed.err, indexed.err

    with dagster_instance(db_url, tmp_path / "dagster_home") as instance:
        assert instance.get_dynamic_partitions(PARTITIONS) == list(DAYS)
        for day in DAYS:
            chunks = _meta(instance, "chunks", day)
            day_chunks = count(
                db,
                "SELECT count(*) FROM chunks c JOIN episodes e ON e.id = c.episode_id"
                " WHERE e.ingest_day = %s::date",
                day,
            )
            assert chunks["dagster/row_count"] == chunks["new_chunks"] == day_chunks > 0
            assert chunks["episodes_chunked"] == 3 and chunks["wall_seconds"] > 0
            assert chunks["materialized_by"] == "memory-pipeline index"
            assert chunks["days_in_run"] == 2
            vectors = _meta(instance, "embeddings", day)
            assert vectors["new_vectors"] == vectors["dagster/row_count"] == day_chunks
            assert vectors["episodes_indexed"] == 3 and vectors["pending_after"] == 0
            assert vectors["profile"] == "ollama/qwen3-embedding:0.6b@512"
            assert vectors["model_call_seconds_total"] > 0 and vectors["wall_seconds"] > 0
            assert "seconds" not in vectors and "embed_seconds" not in vectors
            mentions = _meta(instance, "entity_mentions", day)
            assert mentions["memories"] == 1 and "top_entities" in mentions

        checks = {
            ("chunks", "every_episode_chunked"),
            ("embeddings", "day_vectors_complete_and_normalized"),
            ("entity_mentions", "every_episode_scanned_for_names"),
        }
        keys = [dg.AssetCheckKey(dg.AssetKey(asset), name) for asset, name in checks]
        latest = instance.event_log_storage.get_latest_asset_check_execution_by_key(keys)
        assert set(latest) == set(keys)
        for key, record in latest.items():
            assert record.status.value == "SUCCEEDED", key
            evaluation = record.event.asset_check_evaluation
            assert evaluation.passed
            assert evaluation.metadata["days"].value == "2026-11-20..2026-11-21 (2 days)"
            assert evaluation.metadata["failing_days"].value == "none"


def test_partitions_are_kept_in_date_order(tmp_path, db_url):
    with dagster_instance(db_url, tmp_path / "dagster_home") as instance:
        add_partitions(instance, ["2026-12-02"])
        instance.report_runless_asset_event(
            dg.AssetMaterialization("episodes", partition="2026-12-02", metadata={"n": 1})
        )
        # An earlier day added later goes before it; the later day's history stays.
        assert add_partitions(instance, ["2026-12-01", "2026-12-03"]) == [
            "2026-12-01",
            "2026-12-03",
        ]
        assert instance.get_dynamic_partitions(PARTITIONS) == [
            "2026-12-01",
            "2026-12-02",
            "2026-12-03",
        ]
        assert "2026-12-02" in instance.get_materialized_partitions(dg.AssetKey("episodes"))
        # A list added out of order by another path is put in order.
        instance.add_dynamic_partitions(PARTITIONS, ["2026-11-30"])
        assert instance.get_dynamic_partitions(PARTITIONS)[-1] == "2026-11-30"
        assert in_date_order(instance)
        assert instance.get_dynamic_partitions(PARTITIONS) == [
            "2026-11-30",
            "2026-12-01",
            "2026-12-02",
            "2026-12-03",
        ]
