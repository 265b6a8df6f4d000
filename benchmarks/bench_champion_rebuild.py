#!/usr/bin/env python
"""How long a keyword champion-list rebuild takes and how long the memory's writers wait for it.

On the database ``bench_search_latency.py --home DIR`` keeps, rebuilds the memory's lists with
this code (``keyword_store.refresh_champions``: a snapshot read beside the writers, then a swap
under the memory's statistics row lock), and with ``--base DIR`` also the way a checkout before
migration 0026 did it (its ``keyword_champions_clear.sql`` and ``keyword_champions_refresh.sql``
in one transaction holding ``LOCK TABLE keyword_memory_stats IN SHARE ROW EXCLUSIVE MODE``),
alternating, ``--runs`` times each. Meanwhile a probe does what a chunk writer does to the
statistics (an UPDATE of the memory's row, rolled back) every ``--probe-every`` seconds: its
slowest probe is the longest a writer of the memory waited.

    git worktree add /tmp/base12a 947e77c   # or: git archive 947e77c | tar -x -C /tmp/base12a
    python benchmarks/bench_champion_rebuild.py --home /tmp/lat12a --chunks 100000 --base /tmp/base12a
"""

from __future__ import annotations

import argparse
import os
import statistics
import threading
import time
from pathlib import Path

import psycopg

from memory_pipeline.storage import keyword_store

import bench_search_latency as latency  # sibling modules (benchmarks/)


class Probe:
    """A writer's statistics update of the memory, rolled back, every ``every`` seconds."""

    def __init__(self, url: str, memory: str, every: float):
        self.url, self.memory, self.every = url, memory, every
        self.waits: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "Probe":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        with psycopg.connect(self.url) as conn:
            while not self._stop.is_set():
                t0 = time.perf_counter()
                conn.execute("UPDATE keyword_memory_stats SET chunks = chunks WHERE memory = %s", (self.memory,))
                conn.rollback()
                self.waits.append(time.perf_counter() - t0)
                self._stop.wait(self.every)


def rebuild_base(conn: psycopg.Connection, base: Path) -> dict:
    """The rebuild before migration 0026: everything under the table lock."""
    queries = base / "sql" / "queries"
    params = {"memory": latency.MEMORY, "min_df": keyword_store.CAP, "size": keyword_store.CHAMPIONS,
              **keyword_store.BM25.params()}
    t0 = time.perf_counter()
    with conn.transaction():
        conn.execute("LOCK TABLE keyword_memory_stats IN SHARE ROW EXCLUSIVE MODE")
        conn.execute((queries / "keyword_champions_clear.sql").read_text(encoding="utf-8"), params)
        rows = conn.execute((queries / "keyword_champions_refresh.sql").read_text(encoding="utf-8"), params).rowcount
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "lock_seconds": seconds, "rows": rows}


def rebuild_this(conn: psycopg.Connection) -> dict:
    build = keyword_store.refresh_champions(conn, latency.MEMORY)
    assert build.outcome == "built", build
    return {"seconds": build.seconds, "lock_seconds": build.lock_seconds, "read_seconds": build.read_seconds,
            "rows": build.rows}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    latency.add_kept_arguments(p)
    p.add_argument("--base", type=Path, help="a checkout before migration 0026 (its sql/queries are run)")
    p.add_argument("--runs", type=int, default=2)
    p.add_argument("--probe-every", type=float, default=0.1)
    args = p.parse_args()
    variants = (["base"] if args.base else []) + ["this"]
    results: dict[str, list[dict]] = {v: [] for v in variants}
    print(f"load average before: {os.getloadavg()[0]:.2f}", flush=True)
    with latency.opened_kept(args) as url, psycopg.connect(url, autocommit=True) as conn:
        for run in range(args.runs):
            for variant in variants:
                with Probe(url, latency.MEMORY, args.probe_every) as probe:
                    figures = rebuild_base(conn, args.base) if variant == "base" else rebuild_this(conn)
                figures["writer_wait_max"] = max(probe.waits)
                figures["probes"] = len(probe.waits)
                results[variant].append(figures)
                print(f"run {run + 1} {variant:>4}: rebuild {figures['seconds']:6.1f}s, lock held "
                      f"{figures['lock_seconds']:6.2f}s, slowest of {figures['probes']} writer probes "
                      f"{figures['writer_wait_max']:6.2f}s, {figures['rows']:,} rows", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    for variant, runs in results.items():
        print(f"{variant:>4} median: rebuild {statistics.median(r['seconds'] for r in runs):.1f}s, lock held "
              f"{statistics.median(r['lock_seconds'] for r in runs):.2f}s, slowest writer probe "
              f"{statistics.median(r['writer_wait_max'] for r in runs):.2f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
