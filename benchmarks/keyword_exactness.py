#!/usr/bin/env python
"""How much of exact BM25's top the keyword channel's capped path keeps, query by query.

For every hand-written query (``data/search_queries.txt``) that takes the capped path
(``keyword_store.plan``) on the build ``bench_search_latency.py --home DIR`` keeps (its mixed
queries, ``user_path.mixed_queries``), the reference
is every chunk matching one of its lexemes scored with the same BM25 (``keyword_capped.sql`` with
all of them as candidates: seconds a query); the channel's own answer (``keyword_store.ranked``,
best of three timings) is compared with it: the share of the reference's top 10 and top 50 it
returns. ``--without-champions`` hides the champion lists (migration 0025) for a run, so the
two paths compare on one database:

    python benchmarks/keyword_exactness.py --home /tmp/lat100k --notes 100000
    python benchmarks/keyword_exactness.py --home /tmp/lat100k --notes 100000 --without-champions
"""

from __future__ import annotations

import argparse
import statistics
import time

import bench_search_latency as latency  # sibling modules (benchmarks/)
import psycopg

from memory_pipeline.storage import keyword_store
from memory_pipeline.storage.paths import query
from memory_pipeline.storage.search_store import Filters


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    latency.add_kept_arguments(p)
    p.add_argument(
        "--without-champions",
        action="store_true",
        help="hide the champion lists (inside a transaction rolled back at the end)",
    )
    p.add_argument("--queries", type=int, default=300)
    args = p.parse_args()
    with (
        latency.opened_kept_url(args) as url,
        psycopg.connect(url) as conn,
    ):  # one transaction, rolled back
        if args.without_champions:
            conn.execute("DELETE FROM keyword_champion_lists WHERE memory = %s", (latency.MEMORY,))
        compare(conn, latency.kept_queries(args, args.queries))
        conn.rollback()
    return 0


def compare(conn: psycopg.Connection, queries: list[str]) -> None:
    filters, rows = Filters(), []
    for text in queries:
        path, name, params = keyword_store.planned_query(conn, latency.MEMORY, text, filters)
        if path != "capped":
            continue
        everything = {
            **params,
            "gate": keyword_store.or_tsquery(params["lexemes"]),
            "common": None,
            "fill": None,
            "champion": None,
            "cap": 2**31 - 1,
        }
        reference = [c for c, _ in conn.execute(query(name), everything).fetchall()]
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            got, _ = keyword_store.ranked(conn, latency.MEMORY, text, filters)
            best = min(best, (time.perf_counter() - t0) * 1000)
        ids = [c for c, _ in got]
        rows.append(
            (
                text,
                best,
                *(
                    len(set(ids[:k]) & set(reference[:k])) / max(len(reference[:k]), 1)
                    for k in (10, 50)
                ),
            )
        )
    for text, ms, top10, top50 in rows:
        print(f"  {ms:6.1f} ms  top 10 {top10:.2f}  top 50 {top50:.2f}  {text!r}")
    times = sorted(r[1] for r in rows)
    print(
        f"{len(rows)} of {len(queries)} queries took the capped path: share of exact BM25's top 10 "
        f"{statistics.mean(r[2] for r in rows):.3f}, top 50 {statistics.mean(r[3] for r in rows):.3f}; "
        f"time p50 {statistics.median(times):.1f} ms, p95 {times[int(0.95 * (len(times) - 1))]:.1f} ms"
    )


if __name__ == "__main__":
    raise SystemExit(main())
