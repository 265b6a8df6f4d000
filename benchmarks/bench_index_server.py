#!/usr/bin/env python
"""Indexing through an HTTP model server, as a user runs it: `memory-pipeline index` against
``model_server.py`` (a loopback OpenAI-style server with a set capacity).

1. ``--chunks`` one-paragraph episodes (one chunk each, no paragraph windows, so chunks = model
   inputs), written as JSONL by this script's own generator and stored with ``memory-pipeline
   ingest`` (set-up, not measured; like a user's ingest it also records the days in Dagster, so
   Dagster's tables exist when ``index`` records its own) into a fresh database (on an embedded
   PostgreSQL in a temporary folder, or ``MEMORY_PIPELINE_DATABASE_URL``'s server), which each
   run then copies.
2. The server's own capacity, measured bare: ``--slots`` client threads sending full batches
   for a few seconds (inputs/s), beside the nominal slots x batch / latency.
3. ``memory-pipeline index --json`` (a subprocess, provider ``openai``, batch ``--batch``,
   ``MEMORY_PIPELINE_EMBED_PARALLEL`` each of ``--parallel``) on a fresh copy of the backlog;
   chunks/s over the command's wall time (process start and the model-free work included) and
   over its own reported seconds; the fraction of the measured capacity; the CPU seconds per
   1,000 chunks of the indexer, PostgreSQL (the embedded server) and the model server
   (``--canary-every`` N sets MEMORY_PIPELINE_CANARY_EVERY: one call in N carries the canary). Then the
   same against a server that answers at once (``--latency-ms 0``, no slot limit) unless
   ``--skip-instant``.

Targets (exit 1 on a miss): the capacity-limited run reaches >= 90% of the server's measured
capacity (up to 5,000 chunks/s), and the instant server run reaches >= 3,000 chunks/s.

    python benchmarks/bench_index_server.py --quick               # 3,000 chunks (~1 min)
    python benchmarks/bench_index_server.py                       # 100,000 chunks
    python benchmarks/bench_index_server.py --slots 4 --latency-ms 40 --batch 16 --parallel 4,6
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import psycopg
from bench_databases import Databases  # a sibling module (benchmarks/)

HERE = Path(__file__).resolve().parent


class ServerProcess:
    """``model_server.py`` in its own process (its threads must not share this process's or the
    indexer's interpreter lock), stopped on exit."""

    def __init__(
        self, *, slots: int, latency_ms: float, batch: int, dim: int, vectors: str = "pool"
    ):
        self.slots, self.nominal = (
            slots,
            (slots * batch / (latency_ms / 1000) if latency_ms > 0 and slots else None),
        )
        self.proc = subprocess.Popen(
            [
                sys.executable,
                str(HERE / "model_server.py"),
                "--slots",
                str(slots),
                "--latency-ms",
                str(latency_ms),
                "--batch",
                str(batch),
                "--dim",
                str(dim),
                "--vectors",
                vectors,
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        line = self.proc.stdout.readline()
        if not line.startswith("http://127.0.0.1:"):
            self.stop()
            raise SystemExit(f"model_server.py did not start: {line!r}")
        self.url = line.split()[0]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


CAPACITY_FRACTION_TARGET = 0.90
CAPACITY_CAP = 5000.0
INSTANT_TARGET = 3000.0
MODEL = "bench-capacity"

# Written for this benchmark (not the search benchmarks' generator): everyday words and a few
# hundred rarer ones, so paragraphs differ and none is split into two chunks.
_COMMON = """the a and of to in is for on that with as it at by from this we be are was have
not but or an they you he she his her their our will can all one about more when there which
team project meeting billing invoice garden coffee morning call notes plan week friday budget
client review design report sprint release office travel family dinner doctor school weekend
""".split()
_RARE = [
    f"{a}{b}{c}"
    for a in ("zor", "mel", "qua", "tiv", "ben", "sal")
    for b in ("an", "ek", "ul", "ir")
    for c in ("dor", "bit", "lex", "mon", "tas", "vin")
]


def paragraph(rng: random.Random) -> str:
    words = [
        rng.choice(_RARE) if rng.random() < 0.08 else rng.choice(_COMMON)
        for _ in range(rng.randint(90, 160))
    ]
    return " ".join(words).capitalize() + "."


def write_episodes(path: Path, n: int, seed: int = 12) -> None:
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as out:
        for i in range(n):
            row = {
                "memory": "bench",
                "kind": "note",
                "title": f"note {i}",
                "occurred_at": f"2025-{1 + i % 12:02d}-{1 + i % 28:02d}T{i % 24:02d}:00:00Z",
                "body": f"Note {i}. " + paragraph(rng),
            }
            out.write(json.dumps(row) + "\n")


class CpuSampler(threading.Thread):
    """(seconds since the start, {name: CPU seconds of the process tree}) every ``interval``
    seconds while the watched command runs: the pass's own share is read off at its end."""

    def __init__(self, pids: dict[str, int | None], interval: float = 0.5):
        super().__init__(daemon=True)
        self.pids, self.interval, self.t0 = pids, interval, time.perf_counter()
        self.samples: list[tuple[float, dict[str, float]]] = []
        self.done = threading.Event()

    def sample(self) -> None:
        table = _processes()
        self.samples.append(
            (
                time.perf_counter() - self.t0,
                {name: process_cpu(pid, table) for name, pid in self.pids.items()},
            )
        )

    def run(self) -> None:
        while not self.done.wait(self.interval):
            self.sample()

    def stop(self) -> None:
        self.done.set()
        self.join()
        self.sample()


class ActivitySampler(threading.Thread):
    """(seconds since the start, first line of each statement the database ``url`` is running)
    every ``interval`` seconds: what PostgreSQL does after the pass (``--after-pass``)."""

    def __init__(self, url: str, interval: float = 0.2):
        super().__init__(daemon=True)
        self.url, self.interval, self.t0 = url, interval, time.perf_counter()
        self.samples: list[tuple[float, list[str]]] = []
        self.done = threading.Event()

    def run(self) -> None:
        with psycopg.connect(self.url, autocommit=True) as conn:
            while not self.done.wait(self.interval):
                rows = conn.execute(
                    "SELECT query FROM pg_stat_activity WHERE state = 'active' AND pid <> pg_backend_pid()"
                    " AND datname = current_database()"
                ).fetchall()
                self.samples.append(
                    (time.perf_counter() - self.t0, [_first_line(r[0]) for r in rows])
                )

    def stop(self) -> None:
        self.done.set()
        self.join()


def _first_line(statement: str) -> str:
    """A statement's first line that is not a comment (the SQL files open with their purpose)."""
    lines = [line.strip() for line in statement.splitlines() if line.strip()]
    code = [line for line in lines if not line.startswith("--")]
    return ((code or lines or [""])[0])[:90]


def after_pass_statements(activity: ActivitySampler, pass_end: float) -> list[tuple[str, float]]:
    """Seconds each statement was seen running after ``pass_end``, most first."""
    seen: dict[str, float] = {}
    for t, statements in activity.samples:
        if t > pass_end:
            for statement in set(statements):
                seen[statement] = seen.get(statement, 0.0) + activity.interval
    return sorted(seen.items(), key=lambda kv: -kv[1])


def cli(
    args: list[str],
    env: dict[str, str],
    cpu: dict | None = None,
    watch: dict[str, int | None] | None = None,
) -> tuple[float, str, CpuSampler | None]:
    """Run ``memory-pipeline ARGS``: (wall seconds, stdout, the CPU samples of the ``watch``
    processes and of the command itself as "indexer"); its CPU seconds into ``cpu["indexer"]``."""
    exe = Path(sys.executable).with_name("memory-pipeline")
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [str(exe), *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    sampler = None
    if watch is not None:
        sampler = CpuSampler({"indexer": proc.pid, **watch})
        sampler.sample()
        sampler.start()
    out, err = proc.communicate()
    seconds = time.perf_counter() - t0
    if sampler is not None:
        sampler.stop()
    if cpu is not None:
        # RUSAGE_CHILDREN counts every child reaped so far: the caller put the figure before this run in.
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu["indexer"] = usage.ru_utime + usage.ru_stime - cpu.pop("_children_before")
    if proc.returncode != 0:
        raise SystemExit(
            f"memory-pipeline {' '.join(args)} exited {proc.returncode}:\n{err[-2000:]}"
        )
    return seconds, out, sampler


def _processes() -> dict[int, tuple[int, int]]:
    """pid -> (parent pid, CPU clock ticks: user + system, with its ended and reaped children's)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue  # ended meanwhile
            found[int(entry.name)] = (int(fields[1]), sum(int(f) for f in fields[11:15]))
    return found


def process_cpu(pid: int | None, table: dict[int, tuple[int, int]] | None = None) -> float:
    """CPU seconds used so far by ``pid`` and every process under it, ended ones included (they
    are counted in their parent once reaped: PostgreSQL's backends end with their connection)."""
    if pid is None:
        return float("nan")
    table = _processes() if table is None else table
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        total += table.get(current, (0, 0))[1]
        todo += [child for child, (parent, _) in table.items() if parent == current]
    return total / os.sysconf("SC_CLK_TCK")


def measured_capacity(server: ServerProcess, batch: int, seconds: float = 4.0) -> float:
    """Inputs/s the server answers with every slot kept busy by a bare client (no pipeline)."""
    texts = [f"capacity probe text {i}" for i in range(batch)]
    stop = time.perf_counter() + seconds
    counts = []

    def hammer():
        n = 0
        with httpx.Client(timeout=60) as client:
            while time.perf_counter() < stop:
                r = client.post(
                    server.url + "/v1/embeddings",
                    json={"model": MODEL, "input": texts, "encoding_format": "base64"},
                )
                r.raise_for_status()
                n += batch
        counts.append(n)

    # Twice the slots: the server then always has a request waiting when a slot frees.
    threads = [threading.Thread(target=hammer) for _ in range(2 * (server.slots or 4))]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(counts) / (time.perf_counter() - t0)


def index_run(
    dbs: Databases,
    base_url: str,
    server: ServerProcess,
    batch: int,
    parallel: int,
    dim: int,
    canary_every: int = 1,
    index_args: tuple[str, ...] = (),
    after_pass: bool = False,
) -> dict:
    url = dbs.clone(base_url)
    activity = ActivitySampler(url) if after_pass else None
    try:
        env = {
            **os.environ,
            "MEMORY_PIPELINE_DATABASE_URL": url,
            "MEMORY_PIPELINE_EMBED_PROVIDER": "openai",
            "MEMORY_PIPELINE_EMBED_URL": server.url,
            "MEMORY_PIPELINE_EMBED_MODEL": MODEL,
            "MEMORY_PIPELINE_EMBED_DIM": str(dim),
            "MEMORY_PIPELINE_EMBED_BATCH": str(batch),
            "MEMORY_PIPELINE_EMBED_PARALLEL": str(parallel),
            "MEMORY_PIPELINE_CANARY_EVERY": str(canary_every),
        }
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = {"_children_before": usage.ru_utime + usage.ru_stime}
        pg0, model0 = process_cpu(dbs.server_pid), process_cpu(server.proc.pid)
        if activity is not None:
            activity.start()
        try:
            wall, out, sampler = cli(
                ["index", "--json", *index_args],
                env,
                cpu,
                watch={"postgres": dbs.server_pid, "model_server": server.proc.pid},
            )
        finally:
            if activity is not None:
                activity.stop()
        cpu.update(
            postgres=process_cpu(dbs.server_pid) - pg0,
            model_server=process_cpu(server.proc.pid) - model0,
        )
        report = json.loads(out)
        until_pass_end = _until_model_idle(sampler.samples)
        return {
            "parallel": parallel,
            "chunks": report["chunks"],
            "wall_s": round(wall, 2),
            "pass_end_s": round(until_pass_end[0], 1),
            "after_pass_s": round(wall - until_pass_end[0], 1),
            "cpu_samples": [
                [round(t, 2), {k: round(v, 2) for k, v in c.items()}] for t, c in sampler.samples
            ],
            "cpu_ms_per_1000_chunks_until_pass_end": {
                k: round(1e6 * v / report["chunks"], 0) for k, v in until_pass_end[1].items()
            },
            "index_s": report["seconds"],
            "chunks_per_s_wall": round(report["chunks"] / wall, 1),
            "chunks_per_s_index": round(report["chunks"] / report["seconds"], 1),
            "pending_after": report["pendingEpisodes"],
            "keyword_lists": [
                {k: b[k] for k in ("memory", "outcome", "seconds", "lock_seconds") if k in b}
                for b in report.get("keywordLists", [])
            ],
            "after_pass_statements": []
            if activity is None
            else [
                [statement, round(seconds, 1)]
                for statement, seconds in after_pass_statements(
                    activity, until_pass_end[0] + (sampler.t0 - activity.t0)
                )
            ],
            "cpu_s": {k: round(v, 2) for k, v in cpu.items()},
            "cpu_ms_per_1000_chunks": {
                k: round(1e6 * v / report["chunks"], 0) for k, v in cpu.items()
            },
        }
    finally:
        dbs.drop(url)


def _until_model_idle(
    samples: list[tuple[float, dict[str, float]]],
) -> tuple[float, dict[str, float]]:
    """(seconds, CPU seconds per process) from the command's start to the last sample in which
    the model server worked: the end of the index pass, before the command's after-pass work
    (the days' entity mentions, Dagster records)."""
    last = 0
    for i in range(1, len(samples)):
        # An idle server still ticks now and then (0.01 s); a working one far more per sample.
        if samples[i][1]["model_server"] - samples[i - 1][1]["model_server"] >= 0.04:
            last = i
    at, first = samples[last], samples[0][1]
    return at[0], {k: v - first[k] for k, v in at[1].items()}


def print_cpu(run: dict) -> None:
    for build in run["keyword_lists"]:
        print(
            f"    keyword champion lists of {build['memory']!r} after the pass: {build['outcome']} in "
            f"{build.get('seconds', 0):.1f} s"
        )
    for statement, seconds in run["after_pass_statements"][:8]:
        print(f"    after the pass, PostgreSQL ran for ~{seconds:.1f} s: {statement}")
    for label, key in (
        ("CPU per 1,000 chunks", "cpu_ms_per_1000_chunks"),
        (
            f"  until the pass ended ({run['pass_end_s']} s; {run['after_pass_s']} s after it)",
            "cpu_ms_per_1000_chunks_until_pass_end",
        ),
    ):
        per = run[key]
        total = sum(v for v in per.values() if v == v)
        print(
            f"    {label}: indexer {per['indexer']:,.0f} ms, PostgreSQL {per['postgres']:,.0f} ms, "
            f"model server {per['model_server']:,.0f} ms; {total:,.0f} ms in all, so at most "
            f"{2e6 / total if total else 0:,.0f} chunks/s on 2 free cores"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--quick", action="store_true", help="3,000 chunks")
    parser.add_argument("--slots", type=int, default=4)
    parser.add_argument("--latency-ms", type=float, default=40.0)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument(
        "--parallel", default="4", help="MEMORY_PIPELINE_EMBED_PARALLEL values, comma-separated"
    )
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument(
        "--canary-every",
        type=int,
        default=1,
        help="MEMORY_PIPELINE_CANARY_EVERY: one model call in N carries the canary (default 1: every call)",
    )
    parser.add_argument("--skip-instant", action="store_true")
    parser.add_argument(
        "--no-keyword-lists",
        action="store_true",
        help="run `index --no-keyword-lists` (the champion lists' build after the pass left out)",
    )
    parser.add_argument(
        "--after-pass",
        action="store_true",
        help="sample pg_stat_activity and print the statements PostgreSQL ran after the pass",
    )
    parser.add_argument("--json", type=Path, help="write every figure here")
    args = parser.parse_args(argv)
    n = 3000 if args.quick else args.chunks
    parallels = [int(p) for p in args.parallel.split(",")]
    run_options = {
        "index_args": ("--no-keyword-lists",) if args.no_keyword_lists else (),
        "after_pass": args.after_pass,
    }
    figures: dict = {
        "chunks": n,
        "slots": args.slots,
        "latency_ms": args.latency_ms,
        "batch": args.batch,
        "canary_every": args.canary_every,
    }
    dbs = Databases()
    failed = False
    try:
        with tempfile.TemporaryDirectory(prefix="mp_bench_index_") as tmp:
            data = Path(tmp) / "episodes.jsonl"
            write_episodes(data, n)
            base = dbs.fresh()
            ingest_s, out, _ = cli(
                ["ingest", "--json", str(data)],
                {**os.environ, "MEMORY_PIPELINE_DATABASE_URL": base},
            )
            stored = json.loads(out)["inserted"]
            print(
                f"set-up: {stored:,} episodes stored by `memory-pipeline ingest` in {ingest_s:.1f} s on {dbs.where}"
            )

        with ServerProcess(
            slots=args.slots, latency_ms=args.latency_ms, batch=args.batch, dim=args.dim
        ) as server:
            capacity = measured_capacity(server, args.batch)
            print(
                f"server: {args.slots} slots x {args.batch} inputs / {args.latency_ms:g} ms: nominal "
                f"{server.nominal:,.0f} inputs/s, measured bare {capacity:,.0f} inputs/s"
            )
            figures.update(
                nominal_capacity=server.nominal, measured_capacity=round(capacity, 1), runs=[]
            )
            goal = min(capacity, CAPACITY_CAP) * CAPACITY_FRACTION_TARGET
            for parallel in parallels:
                run = index_run(
                    dbs,
                    base,
                    server,
                    args.batch,
                    parallel,
                    args.dim,
                    args.canary_every,
                    **run_options,
                )
                run["fraction_of_capacity"] = round(run["chunks_per_s_wall"] / capacity, 3)
                figures["runs"].append(run)
                verdict = "PASS" if run["chunks_per_s_wall"] >= goal else "FAIL"
                failed |= verdict == "FAIL"
                print(
                    f"index, parallel {parallel}: {run['chunks']:,} chunks in {run['wall_s']} s wall "
                    f"({run['chunks_per_s_wall']:,} chunks/s; {run['chunks_per_s_index']:,} over the pass's "
                    f"own {run['index_s']} s); "
                    f"{run['fraction_of_capacity']:.1%} of measured capacity [{verdict}: >= {goal:,.0f}]"
                )
                print_cpu(run)
        if not args.skip_instant:
            with ServerProcess(slots=0, latency_ms=0, batch=args.batch, dim=args.dim) as server:
                run = index_run(
                    dbs,
                    base,
                    server,
                    args.batch,
                    max(parallels),
                    args.dim,
                    args.canary_every,
                    **run_options,
                )
                figures["instant"] = run
                verdict = "PASS" if run["chunks_per_s_wall"] >= INSTANT_TARGET else "FAIL"
                failed |= verdict == "FAIL"
                print(
                    f"index, instant server, parallel {run['parallel']}: {run['chunks']:,} chunks in "
                    f"{run['wall_s']} s wall ({run['chunks_per_s_wall']:,} chunks/s; "
                    f"{run['chunks_per_s_index']:,} over {run['index_s']} s) [{verdict}: >= {INSTANT_TARGET:,.0f}]"
                )
                print_cpu(run)
        figures["load_average_after"] = os.getloadavg()
        print(
            f"load average (1, 5, 15 min) at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())} on "
            f"{os.cpu_count()} cores"
        )
    finally:
        dbs.close()
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
