#!/usr/bin/env python
"""Search latency of two versions of the search code, timed query by query in turn over one
build, so both see the same load (on a shared machine the only fair comparison).

The other version is a copy of the package renamed ``mp_base`` (its own SQL files beside it):

    git -C /path/to/repo archive REF | tar -x -C /tmp/ab            # e.g. REF = main
    mv /tmp/ab/memory_pipeline /tmp/ab/mp_base
    grep -rl memory_pipeline /tmp/ab/mp_base | xargs sed -i 's/\\bmemory_pipeline\\b/mp_base/g'
    python benchmarks/ab_search_code.py --base /tmp/ab --home /tmp/lat100k --notes 100000

The build is the one ``bench_search_latency.py --home`` keeps (built there first if missing,
through ``memory-pipeline ingest`` and ``index``; its mixed queries, ``user_path.mixed_queries``).
Each version opens its own ``Memory`` over the same database (``Memory.open(url=...)``, telemetry
off, no reranker), the query embedded by the same loopback model server. Each query is searched
by one version then the other (the order alternating), with the fused default and with each of
the vector, keyword and graph channels alone; p50/p95 per version (the first tenth left out), and
the median of the per-query ratios, and the share of the base's results (default limit) the
other version returns too. A base older than migrations this code applied may refuse the
database; build a home for it with its own script then.
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import sys
import time
from pathlib import Path

import bench_search_latency as latency  # sibling modules (benchmarks/)
import numpy as np
import user_path
from user_path import MEMORY, pct

from memory_pipeline import Memory

ROWS = (
    ("fused default", None),
    ("vector", ("vector",)),
    ("keyword", ("keyword",)),
    ("graph", ("graph",)),
)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--base", type=Path, required=True, help="folder holding the renamed package mp_base"
    )
    latency.add_kept_arguments(p)
    p.add_argument("--queries", type=int, default=300)
    args = p.parse_args(argv)
    sys.path.insert(0, str(args.base))
    base = importlib.import_module("mp_base")
    with latency.opened_kept(args) as (mem, server, _figures):
        settings = {
            "embed_provider": "openai",
            "embed_url": server.url,
            "embed_model": user_path.MODEL,
            "embed_dim": args.dim,
            "telemetry": False,
            "record_in_dagster": False,
        }
        with (
            Memory.open(url=mem.db.url, **settings) as this,
            base.Memory.open(url=mem.db.url, **settings) as other,
        ):
            services = {"this": this, "base": other}
            queries = latency.kept_queries(args, args.queries)
            ms: dict = {(row, name): [] for row, _ in ROWS for name in services}
            shared: dict = {row: [] for row, _ in ROWS}  # share of the top 8 both return
            for i, q in enumerate(queries):
                order = list(services) if i % 2 == 0 else list(reversed(services))
                for row, channels in ROWS:
                    top = {}
                    for name in order:
                        t0 = time.perf_counter()
                        found = services[name].search(MEMORY, q, channels=channels)
                        ms[(row, name)].append((time.perf_counter() - t0) * 1000)
                        top[name] = {r.chunk_id for r in found.results}
                    shared[row].append(len(top["this"] & top["base"]) / max(len(top["base"]), 1))
    print(f"{len(queries)} mixed queries, {args.notes:,} notes, query over HTTP")
    for row, _ in ROWS:
        a, b = (ms[(row, name)][len(queries) // 10 :] for name in ("this", "base"))
        ratio = statistics.median(np.array(a) / np.array(b))
        print(
            f"  {row:<14} this p50 {pct(a, 0.5):6.1f} p95 {pct(a, 0.95):6.1f} | base p50 {pct(b, 0.5):6.1f} "
            f"p95 {pct(b, 0.95):6.1f} | median per-query ratio this/base {ratio:.2f} | "
            f"results shared {statistics.fmean(shared[row]):.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
