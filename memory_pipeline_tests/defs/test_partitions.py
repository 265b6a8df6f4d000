"""A partition owns its day: each partitioned asset reads and writes only its ingest day's rows,
running it again leaves the same rows, and no day switches what search serves."""

from __future__ import annotations

import datetime as dt

import dagster as dg
import pytest

from memory_pipeline.definitions import load
from memory_pipeline.defs.assets.index import chunks, embeddings, entity_mentions
from memory_pipeline.defs.assets.ingest import episodes
from memory_pipeline.domain.entities import Entity
from memory_pipeline.ingest import ingest_paths
from memory_pipeline.orchestration.instance import add_partitions
from memory_pipeline.orchestration.resources import MemoryResource
from memory_pipeline.storage import entities_store, profiles_store
from memory_pipeline_tests.helpers import episode, write_jsonl
from memory_pipeline_tests.support.loopback import LoopbackEmbeddingServer

DAY_A, DAY_B = "2026-11-01", "2026-11-02"

# Every row a partition could write, as text, for the episodes of one ingest day.
ROWS_OF_DAY = {
    "episodes": "SELECT e::text FROM episodes e WHERE e.ingest_day = %(day)s ORDER BY e.id",
    "chunks": """SELECT c::text FROM chunks c JOIN episodes e ON e.id = c.episode_id
                 WHERE e.ingest_day = %(day)s ORDER BY c.episode_id, c.ordinal""",
    "embeddings": """SELECT v::text FROM embeddings v WHERE (v.memory, v.chunk_id) IN (
                       SELECT c.memory, c.chunk_id FROM chunks c JOIN episodes e ON e.id = c.episode_id
                       WHERE e.ingest_day = %(day)s) ORDER BY v.profile_id, v.generation, v.memory, v.chunk_id""",
    "episode_names": """SELECT n::text FROM episode_names n JOIN episodes e ON e.id = n.episode_id
                        WHERE e.ingest_day = %(day)s ORDER BY n.episode_id""",
    "entity_mentions": """SELECT m::text FROM entity_mentions m JOIN episodes e ON e.id = m.episode_id
                          WHERE e.ingest_day = %(day)s ORDER BY m.entity_id, m.episode_id""",
}


def rows_of(db, day: str) -> dict[str, list[str]]:
    with db.connection() as conn:
        return {
            table: [r[0] for r in conn.execute(sql, {"day": day})]
            for table, sql in ROWS_OF_DAY.items()
        }


def _named(i: int, day_words: str) -> dict:
    return episode(i, words=f"{day_words} with Marta Quintela")


@pytest.fixture
def server():
    with LoopbackEmbeddingServer(dim=1024) as s:
        yield s


def test_each_partitioned_asset_writes_only_its_own_day_and_reruns_are_idempotent(
    db, db_url, tmp_path, server
):
    resources = {
        "memory_api": MemoryResource(url=db_url, embed_provider="ollama", embed_url=server.url)
    }
    instance = dg.DagsterInstance.ephemeral()
    add_partitions(instance, [DAY_A, DAY_B])
    for day, start in ((DAY_A, 0), (DAY_B, 10)):
        path = write_jsonl(
            tmp_path / f"{day}.jsonl", [_named(i, "garden notes") for i in range(start, start + 3)]
        )
        ingest_paths(db, [path], ingest_day=dt.date.fromisoformat(day))
    job = load().resolve_job_def("index_day_job")
    assert job.execute_in_process(
        partition_key=DAY_B, resources=resources, instance=instance
    ).success
    # An entity imported after day B was indexed: day B's episodes name it but are not linked
    # until day B (or the global `entities`) runs again; day A must not link them.
    with db.connection() as conn:
        entities_store.import_entities(
            conn, [("alice", Entity("Marta Quintela", ("Marta",)))], entities_store.EntityReport()
        )
    day_b = rows_of(db, DAY_B)
    assert (
        all(day_b[t] for t in ROWS_OF_DAY if t != "entity_mentions")
        and not day_b["entity_mentions"]
    )

    # Day A, asset by asset, then all of it again: day B's rows stay the same, byte for byte.
    for asset in (episodes, chunks, embeddings, entity_mentions):
        result = dg.materialize(
            [asset], partition_key=DAY_A, resources=resources, instance=instance
        )
        assert result.success
        assert rows_of(db, DAY_B) == day_b, asset.key
    day_a = rows_of(db, DAY_A)
    assert all(day_a[t] for t in ROWS_OF_DAY)
    assert job.execute_in_process(
        partition_key=DAY_A, resources=resources, instance=instance
    ).success
    assert rows_of(db, DAY_A) == day_a and rows_of(db, DAY_B) == day_b


def test_a_day_never_switches_the_serving_generation(db, db_url, tmp_path, server):
    resources = {
        "memory_api": MemoryResource(url=db_url, embed_provider="ollama", embed_url=server.url)
    }
    instance = dg.DagsterInstance.ephemeral()
    add_partitions(instance, [DAY_A])
    ingest_paths(
        db,
        [write_jsonl(tmp_path / "a.jsonl", [episode(i) for i in range(3)])],
        ingest_day=dt.date.fromisoformat(DAY_A),
    )
    defs = load()
    day_job, switch_job = (
        defs.resolve_job_def("index_day_job"),
        defs.resolve_job_def("switch_generation_job"),
    )
    assert day_job.execute_in_process(
        partition_key=DAY_A, resources=resources, instance=instance
    ).success
    with db.connection() as conn:
        stored, _ = profiles_store.start_reindex(conn, profiles_store.active_profile(conn).profile)
    assert stored.building_generation == 2
    # The whole day re-embedded as generation 2; search still serves generation 1.
    assert day_job.execute_in_process(
        partition_key=DAY_A, resources=resources, instance=instance
    ).success
    with db.connection() as conn:
        assert profiles_store.active_profile(conn).generation == 1
    switched = switch_job.execute_in_process(resources=resources, instance=instance)
    meta = {
        e.asset_key.to_user_string(): e.materialization.metadata
        for e in switched.get_asset_materialization_events()
    }
    assert meta["serving_generation"]["switched"].value.endswith("generation 2 (was generation 1)")
    with db.connection() as conn:
        assert profiles_store.active_profile(conn).generation == 2


def test_a_backfill_run_takes_a_range_of_days_and_records_each_as_its_own_partition(
    db, db_url, tmp_path, server
):
    """``BACKFILL_POLICY``: one run for a range of days; each day gets its own materialization
    with its own numbers, a day outside the range is untouched, and the checks cover the range."""
    resources = {
        "memory_api": MemoryResource(url=db_url, embed_provider="ollama", embed_url=server.url)
    }
    instance = dg.DagsterInstance.ephemeral()
    day_c = "2026-11-03"
    add_partitions(instance, [DAY_A, DAY_B, day_c])
    for day, n in ((DAY_A, 2), (DAY_B, 3), (day_c, 1)):
        path = write_jsonl(
            tmp_path / f"{day}.jsonl", [_named(i, f"notes of {day}") for i in range(n)]
        )
        ingest_paths(db, [path], ingest_day=dt.date.fromisoformat(day))
    day_c_before = rows_of(db, day_c)
    job = load().resolve_job_def("index_day_job")
    assert job.backfill_policy.max_partitions_per_run == 10
    result = job.execute_in_process(
        resources=resources,
        instance=instance,
        tags={
            "dagster/asset_partition_range_start": DAY_A,
            "dagster/asset_partition_range_end": DAY_B,
        },
    )
    assert result.success
    counts = {
        (e.asset_key.to_user_string(), e.partition): e.materialization.metadata[
            "dagster/row_count"
        ].value
        for e in result.get_asset_materialization_events()
    }
    assert {p for _, p in counts} == {DAY_A, DAY_B}
    assert counts[("episodes", DAY_A)] == 2 and counts[("episodes", DAY_B)] == 3
    assert 0 < counts[("embeddings", DAY_A)] < counts[("embeddings", DAY_B)]
    checks = {
        e.asset_check_key.name: e
        for e in (
            c.event_specific_data
            for c in result.all_events
            if c.event_type_value == "ASSET_CHECK_EVALUATION"
        )
    }
    assert {name for name, c in checks.items() if c.passed} == {
        "every_episode_chunked",
        "day_vectors_complete_and_normalized",
        "every_episode_scanned_for_names",
    }
    assert checks["every_episode_chunked"].metadata["days"].value == f"{DAY_A}..{DAY_B} (2 days)"
    # The day outside the range is still pending: the index is behind what was ingested.
    behind = checks["index_is_current"]
    assert behind.severity == dg.AssetCheckSeverity.WARN
    assert behind.metadata["pending_episodes"].value == 1
    assert rows_of(db, day_c) == day_c_before and not day_c_before["chunks"]


def test_the_nightly_schedule_names_every_asset_its_job_runs():
    from memory_pipeline.definitions import load
    from memory_pipeline.defs import jobs

    repo = load().get_repository_def()
    schedule = repo.get_schedule_def("nightly_maintenance_schedule")
    assert schedule.job_name == jobs.nightly_maintenance_job.name
    selected = {
        key.to_user_string()
        for key in jobs.nightly_maintenance_job.selection.resolve(repo.asset_graph)
    }
    assert len(selected) >= 7
    described = schedule.description or ""
    assert all(name in described for name in selected), (sorted(selected), described)
