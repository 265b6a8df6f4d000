#!/usr/bin/env python
"""Search latency of two versions of the search code, timed query by query in turn over one
database, so both see the same load (on a shared machine the only fair comparison).

The other version is a copy of the package renamed ``mp_base`` (its own SQL files beside it):

    git -C /path/to/repo archive REF | tar -x -C /tmp/ab            # e.g. REF = main
    mv /tmp/ab/memory_pipeline /tmp/ab/mp_base
    grep -rl memory_pipeline /tmp/ab/mp_base | xargs sed -i 's/\\bmemory_pipeline\\b/mp_base/g'
    python benchmarks/ab_search_code.py --base /tmp/ab --chunks 5000

Set-up as ``bench_search_latency.py --vectors structured`` (its functions: the same corpus, vectors,
hand-written queries and loopback model server); each version gets its own ``Database`` pool and
``SearchService`` (no reranker, ``record=False``) over the same database. After 20 warm-up queries
through both, each query is searched by one version then the other (the order alternating), with
the fused default and with each of the vector, keyword and graph channels alone; p50/p95 per
version, and the median of the per-query ratios. ``--home DIR`` times on the database
``bench_search_latency.py --home DIR`` keeps (built there first if missing), English vocabulary
by default:

    python benchmarks/ab_search_code.py --base /tmp/ab --home /tmp/lat100k --chunks 100000
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from bench_databases import Databases  # sibling modules (benchmarks/)
from bench_index_server import ServerProcess
from bench_search_latency import (
    MEMORY,
    QUERY_FILE,
    WARMUP,
    build,
    corpus_vectors,
    generate_corpus,
    kept_structured,
    load_queries,
    pct,
)

from memory_pipeline.domain.policies import default_policies_path, load_policies
from memory_pipeline.embedders.base import EmbeddingProfile
from memory_pipeline.embedders.openai_compat import OpenAICompatibleEmbedder
from memory_pipeline.search.service import SearchService
from memory_pipeline.storage.database import Database

DIM = 384
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
    p.add_argument("--chunks", type=int, default=5000)
    p.add_argument("--seed", type=int, default=20240115)
    p.add_argument(
        "--home",
        type=Path,
        metavar="DIR",
        help="time on the database bench_search_latency.py --home DIR keeps (structured vectors, "
        "--vocabulary; built there first if missing) instead of a fresh one",
    )
    p.add_argument(
        "--vocabulary",
        choices=("english", "shaped"),
        default=None,
        help="the corpus's words (default: english with --home, else shaped, as before)",
    )
    args = p.parse_args(argv)
    args.vocabulary = args.vocabulary or ("english" if args.home else "shaped")
    sys.path.insert(0, str(args.base))
    base = {
        name: importlib.import_module(f"mp_base.{name}")
        for name in (
            "search.service",
            "storage.database",
            "domain.policies",
            "embedders.openai_compat",
            "embedders.base",
        )
    }

    spec = EmbeddingProfile("bench", "structured", DIM)
    dbs_open: list = []
    if args.home:
        args.home = args.home.expanduser().resolve()
        args.home.mkdir(parents=True, exist_ok=True)
    dbs = Databases(prefix="mp_ab_", home=args.home / "pg" if args.home else None)
    try:
        if args.home:
            url = kept_structured(dbs, args.home, args.chunks, args.vocabulary, args.seed)
        else:
            url = dbs.fresh()
            episodes, _ = generate_corpus(args.chunks, args.seed, args.vocabulary)
            vectors, words = corpus_vectors(episodes, "structured", args.seed, DIM)
            with Database.open(url) as db:
                build(db, episodes, vectors, spec, words)
        with (
            Database.open(url) as db,
            ServerProcess(slots=0, latency_ms=0, batch=16, dim=DIM, vectors="words") as server,
        ):
            this = SearchService(
                db,
                load_policies(default_policies_path()),
                reranker=None,
                record=False,
                embedder=OpenAICompatibleEmbedder(spec, server.url),
            )
            base_db = base["storage.database"].Database.open(url)
            dbs_open.append(base_db)
            base_spec = base["embedders.base"].EmbeddingProfile("bench", "structured", DIM)
            other = base["search.service"].SearchService(
                base_db,
                base["domain.policies"].load_policies(
                    base["domain.policies"].default_policies_path()
                ),
                reranker=None,
                record=False,
                embedder=base["embedders.openai_compat"].OpenAICompatibleEmbedder(
                    base_spec, server.url
                ),
            )
            services = {"this": this, "base": other}
            queries = load_queries(QUERY_FILE)
            for q in queries[:WARMUP]:
                for service in services.values():
                    for _, channels in ROWS:
                        service.search(MEMORY, q, channels=channels)
            ms = {(row, name): [] for row, _ in ROWS for name in services}
            for i, q in enumerate(queries):
                order = list(services) if i % 2 == 0 else list(reversed(services))
                for row, channels in ROWS:
                    for name in order:
                        t0 = time.perf_counter()
                        services[name].search(MEMORY, q, channels=channels)
                        ms[(row, name)].append((time.perf_counter() - t0) * 1000)
            print(
                f"{len(queries)} hand-written queries, {args.chunks:,} chunks ({args.vocabulary} vocabulary), "
                f"structured vectors, query over HTTP"
            )
            for row, _ in ROWS:
                a, b = ms[(row, "this")], ms[(row, "base")]
                ratio = statistics.median(np.array(a) / np.array(b))
                print(
                    f"  {row:<14} this p50 {pct(a, 0.5):6.1f} p95 {pct(a, 0.95):6.1f} | base p50 {pct(b, 0.5):6.1f} "
                    f"p95 {pct(b, 0.95):6.1f} | median per-query ratio this/base {ratio:.2f}"
                )
    finally:
        for d in dbs_open:
            d.close()
        dbs.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
