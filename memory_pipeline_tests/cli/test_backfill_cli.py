"""`memory-pipeline backfill` with no web server: the backfill is recorded in the instance, says
where to watch it, and a real `dagster-daemon` then runs it."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memory_pipeline.cli.service_commands import stop_process_group
from memory_pipeline.indexing.days import chunk_day
from memory_pipeline.ingest import ingest_paths
from memory_pipeline.storage.paths import WORKSPACE_YAML
from memory_pipeline_tests.helpers import count, dagster_instance, episode, write_jsonl
from memory_pipeline_tests.support.loopback import LoopbackEmbeddingServer

DAYS = ("2026-10-05", "2026-10-06")


def _store_days(db, tmp_path: Path) -> None:
    for i, day in enumerate(DAYS):
        path = tmp_path / f"{day}.jsonl"
        write_jsonl(path, [episode(10 * i + j, paragraphs=1) for j in range(2)])
        ingest_paths(db, [path], ingest_day=dt.date.fromisoformat(day))


def test_backfill_without_a_web_server_is_recorded_and_says_where_to_watch(
    cli, tmp_path, db, db_url
):
    _store_days(db, tmp_path)
    result = cli(
        "backfill",
        "--from",
        "2026-10-04",
        "--to",
        DAYS[-1],
        env={"MEMORY_PIPELINE_DAGSTER_UI": "http://127.0.0.1:3999"},
    )
    assert result.code == 0 and "Traceback" not in result.err, result.err
    first = result.out.splitlines()[0]
    backfill_id = first.split()[1].rstrip(":")
    assert (
        "index_day_job over 2 day(s) that hold episodes (1 day(s) in the range received nothing)"
        in first
    )
    assert first.endswith(f"; http://127.0.0.1:3999/runs/b/{backfill_id}"), first
    assert "no Dagster daemon runs on this instance now" in result.out
    unknown = cli("backfill", "--from", DAYS[0], "--to", DAYS[0], "--no-wait")
    assert unknown.code == 0, unknown.err
    assert "in Dagster's UI (`memory-pipeline ui`): Backfills, or /runs/b/" in unknown.out
    with dagster_instance(db_url, tmp_path / "dagster_home") as instance:
        backfill = instance.get_backfill(backfill_id)
        assert backfill.status.value == "REQUESTED"
        assert backfill.job_name == "index_day_job"
        assert sorted(backfill.partition_names) == list(DAYS)
        assert backfill.tags["memory_pipeline/trigger"] == "memory-pipeline backfill"


def test_a_rechunk_backfill_with_no_daemon_leaves_the_days_searchable(cli, tmp_path, db, db_url):
    _store_days(db, tmp_path)
    for day in DAYS:
        chunk_day(db, dt.date.fromisoformat(day), anchors=True)
    chunks = count(db, "SELECT count(*) FROM chunks")
    result = cli("backfill", "--from", DAYS[0], "--to", DAYS[-1], "--rechunk")
    assert result.code == 0, result.err
    assert "each day's run deletes and cuts its chunks again" in result.out
    assert "search answers from the present chunks" in result.out
    assert "no Dagster daemon runs on this instance now" in result.out
    # Nothing was deleted by the command: the days answer searches until their runs run.
    assert count(db, "SELECT count(*) FROM chunks") == chunks > 0
    backfill_id = result.out.splitlines()[0].split()[1].rstrip(":")
    with dagster_instance(db_url, tmp_path / "dagster_home") as instance:
        assert instance.get_backfill(backfill_id).tags["memory_pipeline/rechunk"] == "true"


@pytest.mark.slow
def test_the_dagster_daemon_runs_a_backfill_the_cli_submitted(cli, tmp_path, db, db_url):
    _store_days(db, tmp_path)
    with LoopbackEmbeddingServer(dim=1024) as server:
        model = {"MEMORY_PIPELINE_EMBED_PROVIDER": "ollama", "OLLAMA_HOST": server.url}
        submitted = cli("backfill", "--from", DAYS[0], "--to", DAYS[-1], env=model)
        assert submitted.code == 0, submitted.err
        backfill_id = submitted.out.splitlines()[0].split()[1].rstrip(":")
        home = tmp_path / "home"
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("MEMORY_PIPELINE_", "OLLAMA_", "DAGSTER_"))
        }
        env.update(
            {
                **model,
                "MEMORY_PIPELINE_HOME": str(home),
                "MEMORY_PIPELINE_DATABASE_URL": db_url,
                "DAGSTER_HOME": str(home / "dagster"),
            }
        )
        daemon = subprocess.Popen(
            [
                str(Path(sys.executable).with_name("dagster-daemon")),
                "run",
                "-w",
                str(WORKSPACE_YAML),
            ],
            env=env,
            cwd=home / "dagster",
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            with dagster_instance(db_url, tmp_path / "dagster_home") as instance:
                deadline = time.monotonic() + 240
                while time.monotonic() < deadline:
                    status = instance.get_backfill(backfill_id).status.value
                    if status.startswith("COMPLETED") or status in ("FAILED", "CANCELED"):
                        break
                    time.sleep(1)
                assert status == "COMPLETED_SUCCESS", status
                import dagster as dg

                runs = instance.get_runs(dg.RunsFilter(tags={"dagster/backfill": backfill_id}))
                assert runs and {r.status.value for r in runs} == {"SUCCESS"}
        finally:
            stop_process_group(daemon)
    assert (
        count(
            db,
            "SELECT count(*) FROM episodes e WHERE NOT EXISTS "
            "(SELECT 1 FROM chunks c WHERE c.episode_id = e.id)",
        )
        == 0
    )
