"""index_day_distributed_job on Celery with a real Redis broker and two worker processes: the
embedding steps of a two-day backfill run on the workers (the materialization's worker_pid says
which process embedded), not in the run's process."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
import sys
import time

import dagster as dg
import pytest

from memory_pipeline.ingest import ingest_paths
from memory_pipeline.orchestration.instance import add_partitions
from memory_pipeline.storage.paths import PROJECT_ROOT
from memory_pipeline_tests.e2e.conftest import free_port
from memory_pipeline_tests.helpers import count, episode, write_jsonl
from memory_pipeline_tests.support.loopback import LoopbackEmbeddingServer

pytestmark = pytest.mark.slow

DAYS = ["2026-11-01", "2026-11-02"]


def redis_server_binary() -> str:
    """Debian's redis-server; installed with apt when missing and we are root (as CI runs), else skip."""
    found = shutil.which("redis-server")
    if found:
        return found
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        pytest.skip(
            "redis-server is not installed and cannot be installed here (install Debian's redis-server)"
        )
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for step in (
        ["apt-get", "update"],
        ["apt-get", "install", "-y", "--no-install-recommends", "redis-server"],
    ):
        done = subprocess.run(
            step, env=env, capture_output=True, text=True, timeout=300, check=False
        )
        if done.returncode != 0:
            pytest.skip(
                f"redis-server is not installable here: `{' '.join(step)}`: {done.stderr[-300:]}"
            )
    return shutil.which("redis-server") or pytest.skip("apt-get installed no redis-server")


@pytest.fixture
def broker(tmp_path):
    port = free_port()
    redis = subprocess.Popen(
        [
            redis_server_binary(),
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(tmp_path),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    url = f"redis://127.0.0.1:{port}"
    # The workers' Celery settings: dagster_celery.app reads a `dagster_celery_config` module.
    config_dir = tmp_path / "celery_config"
    config_dir.mkdir()
    (config_dir / "dagster_celery_config.py").write_text(
        f'broker_url = "{url}/0"\nresult_backend = "{url}/1"\n', encoding="utf-8"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(config_dir), str(PROJECT_ROOT)])}
    workers = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "dagster_celery.app",
                "worker",
                "-Q",
                "dagster",
                "--pool=solo",
                "-n",
                f"mp{i}@%h",
                "--prefetch-multiplier=1",
                "--without-gossip",
                "--without-mingle",
                "--loglevel=WARNING",
            ],
            env=env,
            cwd=tmp_path,
            stdout=(tmp_path / f"worker{i}.log").open("wb"),
            stderr=subprocess.STDOUT,
        )
        for i in range(2)
    ]
    try:
        from celery import Celery

        probe = Celery(broker=f"{url}/0", backend=f"{url}/1")
        deadline = time.monotonic() + 90
        while len(probe.control.ping(timeout=1.0) or []) < 2:
            assert time.monotonic() < deadline, [
                (tmp_path / f"worker{i}.log").read_text()[-2000:] for i in range(2)
            ]
            assert all(w.poll() is None for w in workers), "a celery worker exited"
        yield url, {w.pid for w in workers}
    finally:
        for proc in [*workers, redis]:
            proc.terminate()
        for proc in [*workers, redis]:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


def test_a_backfills_embedding_steps_run_on_the_celery_workers(db, db_url, tmp_path, broker):
    url, worker_pids = broker
    for i, day in enumerate(DAYS):
        path = write_jsonl(tmp_path / f"{day}.jsonl", [episode(10 * i + j) for j in range(3)])
        ingest_paths(db, [path], ingest_day=dt.date.fromisoformat(day))
    job = dg.build_reconstructable_job(
        "memory_pipeline.definitions", "job", reconstructable_args=("index_day_distributed_job",)
    )
    embedded_by = {}
    with LoopbackEmbeddingServer(dim=1024) as server, dg.instance_for_test() as instance:
        add_partitions(instance, DAYS)
        run_config = {
            "execution": {"config": {"broker": f"{url}/0", "backend": f"{url}/1"}},
            "resources": {
                "memory_api": {
                    "config": {"url": db_url, "embed_provider": "ollama", "embed_url": server.url}
                }
            },
        }
        for day in DAYS:
            with dg.execute_job(
                job, instance=instance, run_config=run_config, tags={"dagster/partition": day}
            ) as result:
                assert result.success, [e.message for e in result.all_events if e.is_failure]
                [event] = [
                    e
                    for e in result.get_asset_materialization_events()
                    if e.asset_key.to_user_string() == "embeddings"
                ]
                assert event.materialization.metadata["new_vectors"].value > 0
                embedded_by[day] = event.materialization.metadata["worker_pid"].value
                workers_named = {
                    e.engine_event_data.metadata["Celery worker"].value
                    for e in result.all_events
                    if e.is_engine_event and "Celery worker" in (e.engine_event_data.metadata or {})
                }
                assert workers_named and all(name.startswith("mp") for name in workers_named), (
                    workers_named
                )
    assert set(embedded_by.values()) <= worker_pids and os.getpid() not in embedded_by.values(), (
        embedded_by,
        worker_pids,
    )
    assert count(db, "SELECT count(*) FROM embeddings") > 0
