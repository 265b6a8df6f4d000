"""Backfill benchmark: `memory-pipeline backfill` over 30 ingest days, mostly empty and busy.

Three cases, each on a fresh MEMORY_PIPELINE_HOME with the Ollama provider pointed at a
loopback embedding server (real HTTP, hashed vectors, so the model's speed is not measured):

* sparse: a 30-day range in which 3 days hold 5 pending episodes each;
* busy:   30 days holding `--busy-episodes` (20) pending episodes each;
* light:  the busy range backfilled again, when nothing is pending any more.

The same script measures either code base. With `memory_pipeline.orchestration.backfills` present (this
branch) the backfill is a Dagster backfill launched through a running `memory-pipeline ui` (its
start-up is not timed; sensors are stopped first so they do not index the days themselves);
without it (the code before, run with PYTHONPATH pointing at such a checkout) the CLI
materializes the days one after another in its own process. The figure is the wall time of
the `memory-pipeline backfill` command, which waits until every day is done; for the Dagster
backfill also its runs' durations (start to end, median and max) and how long they queued
(the daemon picks a new backfill up within its 30-second loop, then runs wait for a slot).

    python benchmarks/bench_backfill.py                      # this checkout
    cd /path/to/old/checkout && PYTHONPATH=$PWD python /path/to/this/benchmarks/bench_backfill.py
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))  # the test support package (loopback server), after PYTHONPATH

import memory_pipeline  # noqa: E402
from memory_pipeline.ingest import ingest_paths  # noqa: E402
from memory_pipeline.storage.database import Database  # noqa: E402
from memory_pipeline_tests.support.loopback import LoopbackEmbeddingServer  # noqa: E402

# The package's own folder, not an import: an editable install would find this checkout's module.
AFTER = (Path(memory_pipeline.__file__).parent / "orchestration" / "backfills.py").exists()
SCRIPT = Path(sys.executable).with_name("memory-pipeline")
FIRST_DAY = dt.date(2026, 1, 1)


def episodes(day: dt.date, n: int) -> list[dict]:
    return [
        {
            "memory": "bench",
            "kind": "journal",
            "title": f"{day} entry {i}",
            "occurred_at": f"{day}T0{i % 10}:00:00Z",
            "body": "\n\n".join(
                f"{day}, entry {i}, paragraph {p}: the harbour, the boats and Marta Lindqvist. "
                + "We counted the fishing boats along the old walls. " * (4 + (i + p) % 6)
                for p in range(3)
            ),
        }
        for i in range(n)
    ]


def seed(home: Path, days: dict[dt.date, int]) -> None:
    db = Database.open(None, home=home)
    try:
        for day, n in days.items():
            path = home / f"seed-{day}.jsonl"
            path.write_text(
                "".join(json.dumps(e) + "\n" for e in episodes(day, n)), encoding="utf-8"
            )
            ingest_paths(db, [path], ingest_day=day)
    finally:
        db.close()
        embedded = getattr(db, "embedded", None)
        if embedded is not None:  # the ui and the CLI start (or join) it themselves
            embedded.release()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_ui(env: dict, home: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    log = (home / "ui.log").open("wb")
    proc = subprocess.Popen(
        [str(SCRIPT), "ui", "--port", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"memory-pipeline ui exited: {(home / 'ui.log').read_text()[-3000:]}")
        try:
            sensors = graphql(
                url,
                """{ sensorsOrError(repositorySelector: {repositoryLocationName: "memory_pipeline",
                repositoryName: "__repository__"}) { ... on Sensors { results { name sensorState { id status } } } } }""",
            )
            results = sensors["sensorsOrError"].get("results") or []
            if results:
                for (
                    sensor
                ) in results:  # the benchmark's backfill does the indexing, not the sensors
                    graphql(
                        url,
                        "mutation($id: String) { stopSensor(id: $id) { __typename } }",
                        {"id": sensor["sensorState"]["id"]},
                    )
                return proc, url
        except (httpx.HTTPError, KeyError, ValueError):
            pass
        time.sleep(1)
    raise SystemExit("memory-pipeline ui did not answer within 180 s")


def stop(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def graphql(url: str, query: str, variables: dict | None = None) -> dict:
    body = httpx.post(
        f"{url}/graphql", json={"query": query, "variables": variables or {}}, timeout=30
    ).json()
    if body.get("errors"):
        raise ValueError(body["errors"])
    return body["data"]


def backfill(env: dict, first: dt.date, last: dt.date, url: str | None) -> dict:
    """Wall seconds of the command; with a web server, its runs' durations from Dagster too."""
    command = [str(SCRIPT), "backfill", "--from", first.isoformat(), "--to", last.isoformat()]
    if url:
        command += ["--dagster-url", url]
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=3600)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(
            f"{' '.join(command)} exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        )
    figures = {"wall_s": round(seconds, 1)}
    if url:
        backfill_id = done.stdout.split()[1].rstrip(":")
        runs = graphql(
            url,
            """query($id: String!) { runsOrError(filter: {tags: [{key: "dagster/backfill", value: $id}]}) {
            ... on Runs { results { creationTime startTime endTime } } } }""",
            {"id": backfill_id},
        )["runsOrError"]["results"]
        durations = sorted(r["endTime"] - r["startTime"] for r in runs)
        waits = sorted(r["startTime"] - r["creationTime"] for r in runs)
        figures.update(
            runs=len(runs),
            run_median_s=round(statistics.median(durations), 1),
            run_max_s=round(durations[-1], 1),
            queued_median_s=round(statistics.median(waits), 1),
        )
    return figures


def run_case(
    name: str, days: dict[dt.date, int], span: int, embed_url: str, light_too: bool
) -> dict:
    home = Path(tempfile.mkdtemp(prefix="mpbf"))
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MEMORY_PIPELINE_", "OLLAMA_", "DAGSTER_"))
    }
    env.update(
        {
            "MEMORY_PIPELINE_HOME": str(home),
            "MEMORY_PIPELINE_EMBED_PROVIDER": "ollama",
            "OLLAMA_HOST": embed_url,
            "MEMORY_PIPELINE_SENSOR_INTERVAL": "86400",
        }
    )
    os.environ["MEMORY_PIPELINE_HOME"] = str(home)
    figures: dict = {}
    proc = None
    try:
        seed(home, days)
        url = None
        if AFTER:
            proc, url = start_ui(env, home)
        last = FIRST_DAY + dt.timedelta(days=span - 1)
        figures[name] = backfill(env, FIRST_DAY, last, url)
        print(
            f"{name}: {span} days ({len(days)} holding {sum(days.values())} episodes): {figures[name]}",
            flush=True,
        )
        if light_too:
            figures["light"] = backfill(env, FIRST_DAY, last, url)
            print(
                f"light: the same {span} days again, nothing pending: {figures['light']}",
                flush=True,
            )
    finally:
        if proc is not None:
            stop(proc)
        shutil.rmtree(home, ignore_errors=True)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--busy-episodes", type=int, default=20)
    parser.add_argument(
        "--cases", default="sparse,busy", help="sparse, busy (busy also measures light)"
    )
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args(argv)
    print(
        f"code: {'Dagster backfill through memory-pipeline ui' if AFTER else 'CLI materializing day after day'}"
    )
    figures = {"code": "after" if AFTER else "before", "days": args.days}
    with LoopbackEmbeddingServer(dim=1024) as server:
        cases = args.cases.split(",")
        if "sparse" in cases:
            sparse = {
                FIRST_DAY + dt.timedelta(days=d): 5 for d in (0, args.days // 2, args.days - 1)
            }
            figures.update(run_case("sparse", sparse, args.days, server.url, light_too=False))
        if "busy" in cases:
            busy = {FIRST_DAY + dt.timedelta(days=d): args.busy_episodes for d in range(args.days)}
            figures.update(run_case("busy", busy, args.days, server.url, light_too=True))
        figures["model_requests"] = server.served
    print(json.dumps(figures))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
