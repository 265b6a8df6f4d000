#!/usr/bin/env python
"""Search latency right after ``memory-pipeline index``, through the user's path only.

State (``user_path``): ``--notes`` one-paragraph notes (one chunk each) written as JSONL, stored
with ``memory-pipeline ingest`` and indexed with ``memory-pipeline index`` (subprocesses of the
installed console script) against ``model_server.py --vectors words`` in its own process (an
OpenAI-style loopback server; each text the normalized sum of fixed per-word vectors). Nothing
else runs: no ``maintain``, no Dagster job, no index or statistics built by this script, so the
figures are what a user has after ``index``. The build's own figures (ingest and index wall
seconds, the HNSW build's seconds and its share of the index command) are printed and kept.

Queries (``user_path.mixed_queries``): ``--queries`` of six words each, drawn from the stored
corpus's document frequencies (not from the generator's word lists): two or three words found in
at most 0.1% of the notes, one in 0.1-5%, the rest in more than half of them.

Timing: ``Memory.search`` (the public API, search telemetry on as a user has it, no reranker,
the default limit), rows interleaved query by query with the first row turning: the fused
default and each of the vector, keyword and graph channels alone, wall milliseconds in this
process with the query embedded by the model server over loopback HTTP; and the query embedding
alone (``Memory.embedder.embed_query``), whose share of the fused p50 is printed. The first tenth
of each row is dropped (caches warming); p50 / p95 / mean of the rest. The fused default's
latency as the project records it (``search_telemetry.latency_ms``) is printed beside it.

    python benchmarks/bench_search_latency.py --home /tmp/lat100k            # 100,000 notes
    python benchmarks/bench_search_latency.py --home /tmp/lat100k --runs 3   # medians of 3
    python benchmarks/bench_search_latency.py --quick                        # 10,000 notes

``--home`` keeps the build (reused by a later run with the same ``--notes``, ``--seed`` and
``--dim``; ``search_stages.py`` and ``keyword_exactness.py`` time the same one); without it a
temporary folder is used and deleted. Target: fused p95 <= 25 ms (exit 1 when missed).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import user_path  # sibling modules (benchmarks/)
from user_path import MEMORY, pct  # noqa: F401 (the scripts on the kept build import them)

from memory_pipeline.storage.embedded import exit_cleanly_on_sigterm

FUSED_P95_TARGET_MS = 25.0
ROWS: dict[str, tuple[str, ...] | None] = {
    "fused default": None,
    "vector": ("vector",),
    "keyword": ("keyword",),
    "graph": ("graph",),
}


def add_kept_arguments(p: argparse.ArgumentParser, *, required: bool = True) -> None:
    """``--home``, ``--notes``, ``--seed``, ``--dim``: the kept build (``user_path.Kept``) that
    ``opened_kept`` opens; the scripts that time or score one reuse it."""
    p.add_argument("--home", type=Path, required=required, help="folder of the kept build (reused)")
    p.add_argument("--notes", type=int, default=100000, help="one-paragraph notes (chunks)")
    p.add_argument("--seed", type=int, default=20261202)
    p.add_argument("--dim", type=int, default=user_path.DIM)
    p.add_argument(
        "--slots", type=int, default=0, help="the model server index runs against: its slots"
    )
    p.add_argument(
        "--latency-ms",
        type=float,
        default=0.0,
        help="... and its time per batch of 16 (0 and 0: it answers at once)",
    )


@contextmanager
def opened_kept(args: argparse.Namespace) -> Iterator[tuple[object, object, dict]]:
    """(the ``Memory`` over the kept build, the model server, the build's figures), built first
    if needed, through the user's commands."""
    exit_cleanly_on_sigterm()
    temporary = args.home is None
    home = Path(tempfile.mkdtemp(prefix="mp-lat-")) if temporary else args.home
    home = home.expanduser().resolve()
    try:
        with user_path.Kept(
            home, args.notes, args.seed, args.dim, args.slots, args.latency_ms
        ).opened() as opened:
            yield opened
    finally:
        if temporary:
            shutil.rmtree(home, ignore_errors=True)


@contextmanager
def opened_kept_url(args: argparse.Namespace) -> Iterator[str]:
    """The URL of the kept build's database (``opened_kept``), for scripts that read it in SQL."""
    with opened_kept(args) as (mem, _server, _figures):
        yield mem.db.url


def kept_queries(args: argparse.Namespace, count: int) -> list[str]:
    """``count`` mixed queries (``user_path.mixed_queries``) from the kept build's corpus."""
    corpus = args.home.expanduser().resolve() / "notes.jsonl"
    if not corpus.exists():
        raise SystemExit(f"{corpus}: the kept build has no corpus file")
    return user_path.mixed_queries(corpus, count, args.seed + 1)


def telemetry_ms(mem, since: float) -> list[float]:
    """The fused searches' latency as ``search_telemetry`` holds it, since ``since`` (epoch s)."""
    with mem.db.connection() as conn:
        rows = conn.execute(
            "SELECT latency_ms FROM search_telemetry WHERE searched_at >= to_timestamp(%s) "
            "AND array_length(channels, 1) > 1 ORDER BY id",
            (since,),
        ).fetchall()
    return [float(r[0]) for r in rows]


def one_run(mem, queries: list[str]) -> dict:
    since = time.time()
    ms = user_path.time_searches(mem, queries, ROWS)
    embedder = mem.embedder
    embed = []
    for q in queries:
        t0 = time.perf_counter()
        embedder.embed_query(q)
        embed.append((time.perf_counter() - t0) * 1000)
    out = {name: user_path.summary(xs) for name, xs in ms.items()}
    out["query embedding"] = user_path.summary(embed)
    out["fused (search_telemetry)"] = user_path.summary(telemetry_ms(mem, since))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_kept_arguments(p, required=False)
    p.add_argument("--queries", type=int, default=300)
    p.add_argument("--runs", type=int, default=1, help="timed runs (medians of their figures)")
    p.add_argument("--quick", action="store_true", help="10,000 notes, 100 queries")
    p.add_argument("--json", type=Path, help="write the figures here")
    args = p.parse_args(argv)
    if args.quick:
        args.notes, args.queries = 10000, 100
    if args.home is None:
        args.home = Path(tempfile.mkdtemp(prefix="mp-lat-"))
        temporary = True
    else:
        temporary = False
    try:
        with opened_kept(args) as (mem, _server, figures):
            status = mem.status().to_json()
            print(f"hnsw index after index: {status['index']}", flush=True)
            queries = kept_queries(args, args.queries)
            print(f"{len(queries)} queries, e.g. {queries[0]!r}, {queries[1]!r}", flush=True)
            runs = [one_run(mem, queries) for _ in range(args.runs)]
    finally:
        if temporary:
            shutil.rmtree(args.home, ignore_errors=True)
    rows = {
        name: {k: statistics.median(r[name][k] for r in runs) for k in ("p50", "p95", "mean")}
        for name in runs[0]
    }
    index = figures["index"]
    ready = (index.get("searchReady") or {}).get("hnswIndex") or {}
    build_s = ready.get("buildSeconds") or 0.0
    print(
        f"\n{args.notes:,} notes; ingest {figures['ingest_seconds']:.1f}s; index "
        f"{figures['index_seconds']:.1f}s, of which the HNSW build {build_s:.1f}s "
        f"({100 * build_s / max(figures['index_seconds'] - build_s, 1e-9):.1f}% on top of the rest)"
    )
    print(f"\n{'row':<26}{'p50 ms':>9}{'p95 ms':>9}{'mean ms':>9}   ({len(runs)} run(s), medians)")
    for name, r in rows.items():
        print(f"{name:<26}{r['p50']:9.1f}{r['p95']:9.1f}{r['mean']:9.1f}")
    share = rows["query embedding"]["p50"] / rows["fused default"]["p50"]
    print(f"query embedding: {100 * share:.0f}% of the fused p50")
    ok = rows["fused default"]["p95"] <= FUSED_P95_TARGET_MS
    print(f"fused p95 <= {FUSED_P95_TARGET_MS:.0f} ms: {'yes' if ok else 'NO'}")
    if args.json:
        args.json.write_text(
            json.dumps(
                {"build": figures, "rows": rows, "runs": runs, "embedding_share": share}, indent=2
            )
            + "\n",
            encoding="utf-8",
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
