#!/usr/bin/env python
"""How long a keyword champion-list rebuild takes and how long the memory's writers wait for it.

On the database ``bench_search_latency.py --home DIR`` keeps, rebuilds the memory's lists with
this code (``champions_store.refresh_champions``: a snapshot read and the load of a new generation
beside the writers, then a swap under the memory's statistics row lock), and with ``--base DIR
--base-home HOME`` also an earlier checkout's (its own copy of this script, run with its own code
on HOME, a copy of the kept database at that checkout's migrations: a database this code opened
has migrations the earlier code does not know), alternating, ``--runs`` times each. Meanwhile a
probe does what a chunk writer does to the statistics (an UPDATE of the memory's row, rolled
back) every ``--probe-every`` seconds: its slowest probe is the longest a writer of the memory
waited.

    git archive 0ae674f | tar -x -C /tmp/issue12d_base   # the code before migration 0027
    python benchmarks/bench_champion_rebuild.py --home /tmp/lat12a --notes 100000 \
        --base /tmp/issue12d_base --base-home /tmp/lat12b --runs 2
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import bench_search_latency as latency  # sibling modules (benchmarks/)
import psycopg

from memory_pipeline.storage import champions_store


class Probe:
    """A writer's statistics update of the memory, rolled back, every ``every`` seconds."""

    def __init__(self, url: str, memory: str, every: float):
        self.url, self.memory, self.every = url, memory, every
        self.waits: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Probe:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        with psycopg.connect(self.url) as conn:
            while not self._stop.is_set():
                t0 = time.perf_counter()
                conn.execute(
                    "UPDATE keyword_memory_stats SET chunks = chunks WHERE memory = %s",
                    (self.memory,),
                )
                conn.rollback()
                self.waits.append(time.perf_counter() - t0)
                self._stop.wait(self.every)


RUN_LINE = re.compile(
    r"run 1 this: rebuild +([\d.]+)s, lock held +([\d.]+)s, slowest of (\d+) writer probes"
    r" +([\d.]+)s, ([\d,]+) rows"
)


def rebuild_base(base: Path, home: Path, args: argparse.Namespace) -> dict:
    """One rebuild by the earlier checkout's own script and code, on its own database."""
    out = subprocess.run(
        [
            sys.executable,
            str(base / "benchmarks" / "bench_champion_rebuild.py"),
            "--home",
            str(home),
            "--chunks",
            str(args.chunks),
            "--vocabulary",
            args.vocabulary,
            "--seed",
            str(args.seed),
            "--runs",
            "1",
            "--probe-every",
            str(args.probe_every),
        ],
        cwd=base,
        env={**os.environ, "PYTHONPATH": str(base)},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    found = RUN_LINE.search(out)
    if not found:
        raise SystemExit(f"the base script printed no run line:\n{out}")
    seconds, lock, probes, wait, rows = found.groups()
    return {
        "seconds": float(seconds),
        "lock_seconds": float(lock),
        "probes": int(probes),
        "writer_wait_max": float(wait),
        "rows": int(rows.replace(",", "")),
    }


def rebuild_this(conn: psycopg.Connection) -> dict:
    build = champions_store.refresh_champions(conn, latency.MEMORY)
    assert build.outcome == "built", build
    return {
        "seconds": build.seconds,
        "lock_seconds": build.lock_seconds,
        "read_seconds": build.read_seconds,
        "load_seconds": build.load_seconds,
        "drop_seconds": build.drop_seconds,
        "rows": build.rows,
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    latency.add_kept_arguments(p)
    p.add_argument(
        "--base", type=Path, help="an earlier checkout (its own bench_champion_rebuild.py is run)"
    )
    p.add_argument("--base-home", type=Path, help="the kept database for --base, at its migrations")
    p.add_argument("--runs", type=int, default=2)
    p.add_argument("--probe-every", type=float, default=0.1)
    args = p.parse_args()
    if args.base and not args.base_home:
        p.error("--base needs --base-home (a copy of the kept database the earlier code opened)")
    variants = (["base"] if args.base else []) + ["this"]
    results: dict[str, list[dict]] = {v: [] for v in variants}
    print(f"load average before: {os.getloadavg()[0]:.2f}", flush=True)
    with latency.opened_kept_url(args) as url, psycopg.connect(url, autocommit=True) as conn:
        for run in range(args.runs):
            for variant in variants:
                if variant == "base":
                    figures = rebuild_base(args.base, args.base_home, args)
                else:
                    with Probe(url, latency.MEMORY, args.probe_every) as probe:
                        figures = rebuild_this(conn)
                    figures["writer_wait_max"] = max(probe.waits)
                    figures["probes"] = len(probe.waits)
                results[variant].append(figures)
                print(
                    f"run {run + 1} {variant:>4}: rebuild {figures['seconds']:6.1f}s, lock held "
                    f"{figures['lock_seconds']:6.2f}s, slowest of {figures['probes']} writer probes "
                    f"{figures['writer_wait_max']:6.2f}s, {figures['rows']:,} rows",
                    flush=True,
                )
                if "load_seconds" in figures:
                    print(
                        f"           read {figures['read_seconds']:.1f}s, load {figures['load_seconds']:.1f}s,"
                        f" old generation dropped {figures['drop_seconds']:.1f}s",
                        flush=True,
                    )
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    for variant, runs in results.items():
        print(
            f"{variant:>4} median: rebuild {statistics.median(r['seconds'] for r in runs):.1f}s, lock held "
            f"{statistics.median(r['lock_seconds'] for r in runs):.2f}s, slowest writer probe "
            f"{statistics.median(r['writer_wait_max'] for r in runs):.2f}s"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
