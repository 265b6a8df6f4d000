#!/usr/bin/env python
"""Many small memories in one database: search one of them, through the user's path.

State (``user_path``): ``--memories`` x ``--per-memory`` one-paragraph notes dealt round-robin to
the memories, stored with ``memory-pipeline ingest`` and indexed with ``memory-pipeline index``
(subprocesses of the console script, against ``model_server.py --vectors words``); nothing else.
One HNSW index covers every memory's vectors, as on an agent platform keeping thousands of
memories in one PostgreSQL.

Timing: each mixed query (``user_path.mixed_queries``) searches one memory picked at random,
through ``Memory.search``: the fused default and the vector and keyword channels alone, rows
interleaved, the first tenth dropped, p50 / p95. Then the vector channel's SQL both ways for the
same (memory, query) pairs (``vector_store.nearest_chunks``): the exact scan the channel takes for
a memory of at most ``vector_store.EXACT_MAX_ROWS`` rows (the memory's rows through the primary
key, each compared) and the HNSW index with pgvector's iterative scan (the graph shared with
every other memory); their p50 / p95 and the HNSW answer's recall@10 against the exact one.

    python benchmarks/bench_many_memories.py --home /tmp/many --memories 1000 --per-memory 100
    python benchmarks/bench_many_memories.py --home /tmp/many --memories 10000 --per-memory 100

Target (issue 26): search of one of 10,000 memories of 100 chunks, p95 <= 25 ms.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import user_path  # sibling module (benchmarks/)

from memory_pipeline.storage import profiles_store, vector_store
from memory_pipeline.storage.embedded import exit_cleanly_on_sigterm

TARGET_P95_MS = 25.0
ROWS = {"fused default": None, "vector": ("vector",), "keyword": ("keyword",)}


def vector_sql(mem, pairs: list[tuple[str, str]]) -> dict:
    """Both vector paths for each (memory, query): ms and the HNSW path's recall@10."""
    embedder = mem.embedder
    times: dict[str, list[float]] = {"exact": [], "hnsw": []}
    recall = []
    with mem.db.connection() as conn:
        profile = profiles_store.active_profile(conn)
        for i, (memory, q) in enumerate(pairs):
            vector = np.asarray(embedder.embed_query(q))
            found = {}
            for name in ("exact", "hnsw") if i % 2 == 0 else ("hnsw", "exact"):
                t0 = time.perf_counter()
                hits = vector_store.nearest_chunks(
                    conn, profile, memory, vector, limit=100, by_windows=True, exact=name == "exact"
                )
                times[name].append((time.perf_counter() - t0) * 1000)
                found[name] = [h.chunk_id for h in hits[:10]]
            truth = set(found["exact"])
            recall.append(len(truth & set(found["hnsw"])) / max(len(truth), 1))
    return {
        **{name: user_path.summary(ms) for name, ms in times.items()},
        "hnsw_recall_at_10": round(statistics.fmean(recall), 3),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--home", type=Path, required=True, help="folder of the kept build (reused)")
    p.add_argument("--memories", type=int, default=1000)
    p.add_argument("--per-memory", type=int, default=100)
    p.add_argument("--queries", type=int, default=300)
    p.add_argument("--seed", type=int, default=20261202)
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    exit_cleanly_on_sigterm()
    kept = user_path.Kept(
        args.home.expanduser().resolve(),
        args.memories * args.per_memory,
        args.seed,
        memories=args.memories,
    )
    with kept.opened() as (mem, _server, figures):
        queries = user_path.mixed_queries(kept.corpus, args.queries, args.seed + 1)
        rng = random.Random(args.seed + 2)
        names = user_path.memory_names(args.memories)
        pairs = [(rng.choice(names), q) for q in queries]
        ms: dict[str, list[float]] = {name: [] for name in ROWS}
        for i, (memory, q) in enumerate(pairs):
            order = list(ROWS)[i % len(ROWS) :] + list(ROWS)[: i % len(ROWS)]
            for name in order:
                t0 = time.perf_counter()
                mem.search(memory, q, channels=ROWS[name])
                ms[name].append((time.perf_counter() - t0) * 1000)
        rows = {name: user_path.summary(xs) for name, xs in ms.items()}
        sql_paths = vector_sql(mem, pairs)
    print(
        f"\n{args.memories:,} memories x {args.per_memory} notes; ingest "
        f"{figures['ingest_seconds']:.0f}s, index {figures['index_seconds']:.0f}s "
        f"(searchReady {figures['index'].get('searchReady')})"
    )
    print(f"{'search one memory':<26}{'p50 ms':>9}{'p95 ms':>9}{'mean ms':>9}")
    for name, r in rows.items():
        print(f"{name:<26}{r['p50']:9.1f}{r['p95']:9.1f}{r['mean']:9.1f}")
    print(f"{'vector SQL':<26}{'p50 ms':>9}{'p95 ms':>9}{'mean ms':>9}")
    for name in ("exact", "hnsw"):
        r = sql_paths[name]
        print(f"  {name:<24}{r['p50']:9.2f}{r['p95']:9.2f}{r['mean']:9.2f}")
    print(
        f"HNSW (iterative scan) recall@10 against the exact scan: {sql_paths['hnsw_recall_at_10']}"
    )
    ok = rows["fused default"]["p95"] <= TARGET_P95_MS
    print(f"fused p95 <= {TARGET_P95_MS:.0f} ms: {'yes' if ok else 'NO'}")
    if args.json:
        args.json.write_text(
            json.dumps({"build": figures, "rows": rows, "vector_sql": sql_paths}, indent=2) + "\n",
            encoding="utf-8",
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
