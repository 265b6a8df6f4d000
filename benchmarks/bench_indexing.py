#!/usr/bin/env python
"""Indexing benchmark: how fast the pipeline stores chunks, and what fraction of the bare model's
throughput it keeps.

Two measurements, each on fresh databases:

1. Store path. N synthetic episodes (seeded, 2-8 paragraphs of 150-900 characters each, so
   about 1-4 chunks per episode) are inserted with ``store_episodes`` (timed on its own), then
   indexed with ``index_pending`` and an embedder that costs almost nothing (``FastEmbedder``:
   a deterministic vector per text, picked from a seeded pool by crc32). What is left is the
   pipeline's own cost: pending query, chunking, hashing, paragraph windows, planning, and the
   COPY writes (each chunk's row carries its windows' vectors too, ``domain.windows``).
   Target: >= 3,000 chunks/s.

2. Model fraction (``--skip-model`` to skip). M chunk-sized texts of generated English prose are
   embedded (a) bare, ``LocalEmbedder.embed_documents`` in batches of 16, and (b) through the
   pipeline, one episode per text in a fresh database, ``index_pending`` with the same
   embedder (the probe call included). Bare and pipeline runs alternate; the medians and their
   ratio are printed. Target: pipeline >= 90% of bare. Each text is one paragraph, so it has no
   paragraph windows and both sides make the same model calls: the ratio is the pipeline's own
   overhead around the model (windows add model inputs, not overhead).

The database is ``MEMORY_PIPELINE_DATABASE_URL``'s server if that is set (fresh ``bench_*``
databases are created on it and dropped afterwards; the role needs CREATEDB), else an embedded
PostgreSQL started in a temporary folder and stopped at the end.

Run from the project root with the project's virtual environment::

    python benchmarks/bench_indexing.py --quick          # sanity check, well under a minute
    python benchmarks/bench_indexing.py                  # full run, several minutes
    python benchmarks/bench_indexing.py --json out.json --skip-model
    python benchmarks/bench_indexing.py --skip-model --repeats 1 --cprofile store.prof

Exit status: 0 when every measured target passes, 1 when one fails.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as dt
import json
import os
import platform
import pstats
import random
import statistics
import sys
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from bench_databases import Databases, fresh_database  # a sibling module (benchmarks/)

from memory_pipeline.domain.chunking import chunk_body
from memory_pipeline.domain.episodes import EpisodeDraft, make_episode
from memory_pipeline.embedders.base import Embedder, EmbeddingProfile
from memory_pipeline.indexing.until_done import index_pending
from memory_pipeline.storage.embedded import exit_cleanly_on_sigterm
from memory_pipeline.storage.episodes_store import store_episodes
from memory_pipeline.storage.index_store import count_summary
from memory_pipeline.storage.profiles_store import get_profile

STORE_TARGET_CHUNKS_PER_S = 3000.0
MODEL_FRACTION_TARGET = 0.90
MEMORY = "bench"
INGEST_DAY = dt.date(2024, 1, 15)
BASE_TIME = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)


# --------------------------------------------------------------------------------------------
# Deterministic English-looking prose
# --------------------------------------------------------------------------------------------

_NAMES = """Maria James Aiko Lukas Priya Omar Sofia Daniel Chen Elena Tom Nadia Ravi Grace Felix
Hannah Yusuf Clara Mateo Ingrid""".split()
_PLACES = """the office, the kitchen, the station, the garden, the library, the lab, the harbour,
the clinic, the workshop, the market, the warehouse, the studio, the school, the river path,
the meeting room""".replace("\n", " ").split(", ")
_DAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()
_TIMES = """this morning, last night, on Monday, after lunch, before the deadline, during the call,
at the end of the week, early today, later that evening, over the weekend""".replace(
    "\n", " "
).split(", ")
_ADJ = """quiet careful small large early late useful difficult simple broken new old final rough
clear strange important second quick slow patient honest shared local remote practical detailed
unexpected familiar fragile steady noisy""".split()
_NOUNS = """report budget plan schedule garden meeting project draft release question answer idea
problem solution customer contract invoice server database backup letter recipe journey train
ticket experiment result sample chapter review interview decision proposal deadline estimate
migration index vector notebook sketch garden fence roof window bicycle kettle workshop team
neighbour doctor teacher manager client friend sister brother cousin""".split()
_VERBS_PAST = """reviewed rewrote discussed postponed finished started fixed checked explained
described moved cancelled approved rejected measured counted painted repaired ordered shipped
tested compared summarised questioned shared forgot remembered found lost carried""".split()
_VERBS_INF = """review rewrite discuss finish start fix check explain describe move approve
measure repair order ship test compare summarise share remember find carry plan""".split()
_ADV = """slowly carefully quickly finally again together quietly honestly probably clearly
already barely nearly""".split()
_CONNECT = """However, Meanwhile, Later, Afterwards, In the end, Still, For now, Even so, At first,
Surprisingly, As expected, Before that,""".replace("\n", " ").split(", ")

_TEMPLATES: tuple[Callable[[random.Random], str], ...] = (
    lambda r: (
        f"{r.choice(_NAMES)} {r.choice(_VERBS_PAST)} the {r.choice(_ADJ)} {r.choice(_NOUNS)} {r.choice(_TIMES)}."
    ),
    lambda r: (
        f"We {r.choice(_VERBS_PAST)} the {r.choice(_NOUNS)} at {r.choice(_PLACES)} and {r.choice(_VERBS_PAST)} the {r.choice(_NOUNS)} {r.choice(_ADV)}."
    ),
    lambda r: (
        f"{r.choice(_CONNECT).rstrip(',')}, the {r.choice(_NOUNS)} was {r.choice(_ADJ)} and nobody {r.choice(_VERBS_PAST)} the {r.choice(_NOUNS)}."
    ),
    lambda r: (
        f"On {r.choice(_DAYS)} {r.choice(_NAMES)} asked whether we could {r.choice(_VERBS_INF)} the {r.choice(_ADJ)} {r.choice(_NOUNS)} before {r.choice(_DAYS)}."
    ),
    lambda r: (
        f"The {r.choice(_NOUNS)} from {r.choice(_PLACES)} turned out to be {r.choice(_ADJ)}, so I {r.choice(_VERBS_PAST)} it {r.choice(_ADV)}."
    ),
    lambda r: (
        f"I need to {r.choice(_VERBS_INF)} the {r.choice(_NOUNS)} and tell {r.choice(_NAMES)} about the {r.choice(_ADJ)} {r.choice(_NOUNS)}."
    ),
    lambda r: (
        f"{r.choice(_NAMES)} thinks the {r.choice(_NOUNS)} will take {r.randint(2, 19)} more days, which seems {r.choice(_ADJ)} to me."
    ),
    lambda r: (
        f"It cost {r.randint(3, 950)} euros, {r.choice(_ADV)} more than the {r.choice(_NOUNS)} we {r.choice(_VERBS_PAST)} last year."
    ),
)


def sentence(rng: random.Random) -> str:
    return rng.choice(_TEMPLATES)(rng)


def prose(rng: random.Random, min_chars: int, max_chars: int) -> str:
    """Sentences until the text is at least a target length drawn in [min_chars, max_chars]."""
    target = rng.randint(min_chars, max_chars)
    parts: list[str] = []
    length = 0
    while length < target:
        s = sentence(rng)
        parts.append(s)
        length += len(s) + 1
    text = " ".join(parts)
    if len(text) > max_chars:  # cut at the last sentence end that fits, or hard at max_chars
        cut = text.rfind(". ", 0, max_chars)
        text = text[: cut + 1] if cut >= min_chars else text[:max_chars].rstrip()
    return text


def episode_body(rng: random.Random) -> str:
    return "\n\n".join(prose(rng, 150, 900) for _ in range(rng.randint(2, 8)))


def make_drafts(bodies: Sequence[str], *, memory: str = MEMORY) -> list[EpisodeDraft]:
    return [
        make_episode(
            memory=memory,
            kind="note",
            title=f"Synthetic episode {i}",
            occurred_at=BASE_TIME + dt.timedelta(minutes=i),
            body=body,
            source=f"bench:{i}",
        )
        for i, body in enumerate(bodies)
    ]


# --------------------------------------------------------------------------------------------
# The free embedder
# --------------------------------------------------------------------------------------------


class FastEmbedder(Embedder):
    """Deterministic, nearly free vectors: row ``crc32(text) % pool`` of a seeded random pool."""

    service_name = "benchmark"
    POOL = 4096

    def __init__(self, dim: int = 384, batch_size: int = 256, seed: int = 0):
        super().__init__(EmbeddingProfile("bench", "fast-crc32", dim), batch_size=batch_size)
        self._pool = np.random.default_rng(seed).standard_normal((self.POOL, dim), dtype=np.float32)

    def _embed_batch(self, texts: Sequence[str], *, is_query: bool) -> np.ndarray:
        rows = [zlib.crc32(t.encode("utf-8", "surrogatepass")) % self.POOL for t in texts]
        return self._pool[rows]


# --------------------------------------------------------------------------------------------
# 1. Store path
# --------------------------------------------------------------------------------------------


@dataclass
class StoreRun:
    episodes: int
    chunks: int
    vectors: int
    windows: int
    insert_seconds: float
    pass_seconds: float  # report.seconds: the passes themselves
    wall_seconds: float  # around index_pending (+ its final pending count)
    store_seconds: float  # report.store_seconds: write_episodes only
    embed_seconds: float

    @property
    def chunks_per_s(self) -> float:
        return self.chunks / self.pass_seconds

    @property
    def store_chunks_per_s(self) -> float:
        return self.chunks / self.store_seconds


def store_run(
    dbs: Databases,
    drafts: list[EpisodeDraft],
    expected_chunks: int,
    profile_to: str | None,
    *,
    windows: bool = True,
) -> StoreRun:
    embedder = FastEmbedder()
    embedder.paragraph_windows = windows  # what MEMORY_PIPELINE_PARAGRAPH_WINDOWS sets
    with fresh_database(dbs) as db:
        with db.connection() as conn:
            t0 = time.perf_counter()
            stored = store_episodes(conn, drafts, INGEST_DAY)
            insert_seconds = time.perf_counter() - t0
        assert stored.inserted == len(drafts), (stored.inserted, len(drafts))
        profiler = cProfile.Profile() if profile_to else None
        t0 = time.perf_counter()
        if profiler:
            profiler.enable()
        report = index_pending(db, embedder)
        if profiler:
            profiler.disable()
        wall = time.perf_counter() - t0
        with db.connection() as conn:
            counts = count_summary(conn, get_profile(conn, embedder.profile))
    if profiler:
        profiler.dump_stats(profile_to)
        print(f"  cProfile of run 1 (top 12 by cumulative time; full stats in {profile_to}):")
        stats = pstats.Stats(profile_to)
        stats.sort_stats("cumulative")
        for func, (_cc, ncalls, _tt, cumtime, _callers) in sorted(
            stats.stats.items(), key=lambda kv: -kv[1][3]
        )[:12]:
            filename, line, name = func
            where = f"{Path(filename).name}:{line}({name})" if line else name
            print(f"    {cumtime:7.3f}s {ncalls:6d} calls  {where}")
    if (
        report.pending_after != 0
        or counts["chunks"] != expected_chunks
        or report.chunks != expected_chunks
    ):
        raise SystemExit(
            f"store path did not index everything: pending_after={report.pending_after}, "
            f"chunks stored={counts['chunks']} reported={report.chunks}, expected {expected_chunks}"
        )
    return StoreRun(
        episodes=report.episodes,
        chunks=report.chunks,
        vectors=report.vectors,
        windows=report.windows,
        insert_seconds=insert_seconds,
        pass_seconds=report.seconds,
        wall_seconds=wall,
        store_seconds=report.store_seconds,
        embed_seconds=report.embed_seconds,
    )


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def bench_store(dbs: Databases, args) -> dict:
    rng = random.Random(args.seed)
    bodies = [episode_body(rng) for _ in range(args.episodes)]
    drafts = make_drafts(bodies)
    per_episode = [len(chunk_body(b)) for b in bodies]
    chunks = sum(per_episode)
    chars = sum(len(b) for b in bodies)
    print(
        f"\n== Store path: {len(bodies)} episodes, {chars:,} characters, {chunks:,} chunks "
        f"(per episode: min {min(per_episode)}, mean {chunks / len(bodies):.2f}, max {max(per_episode)}); "
        f"FastEmbedder dim 384, batch 256"
    )
    runs: list[StoreRun] = []
    for i in range(args.repeats):
        profile_to = args.cprofile if (args.cprofile and i == 0) else None
        run = store_run(dbs, drafts, chunks, profile_to, windows=not args.no_windows)
        runs.append(run)
        print(
            f"  run {i + 1}/{args.repeats}: insert {run.insert_seconds:6.2f}s ({len(drafts) / run.insert_seconds:7.0f} episodes/s) | "
            f"index pass {run.pass_seconds:6.2f}s = {run.chunks_per_s:7.0f} chunks/s "
            f"(store {run.store_seconds:5.2f}s = {run.store_chunks_per_s:7.0f} chunks/s, embed {run.embed_seconds:5.2f}s, "
            f"wall {run.wall_seconds:5.2f}s; {run.windows:,} window vectors)"
            f"{' [cProfile -> ' + profile_to + ']' if profile_to else ''}"
        )
    med = lambda f: statistics.median(f(r) for r in runs)  # noqa: E731
    result = {
        "episodes": len(drafts),
        "characters": chars,
        "chunks": chunks,
        "vectors": runs[0].vectors,
        "window_vectors": runs[0].windows,
        "repeats": len(runs),
        "insert_seconds": med(lambda r: r.insert_seconds),
        "insert_episodes_per_s": med(lambda r: len(drafts) / r.insert_seconds),
        "pass_seconds": med(lambda r: r.pass_seconds),
        "chunks_per_s": med(lambda r: r.chunks_per_s),
        "wall_seconds": med(lambda r: r.wall_seconds),
        "store_seconds": med(lambda r: r.store_seconds),
        "store_chunks_per_s": med(lambda r: r.store_chunks_per_s),
        "embed_seconds": med(lambda r: r.embed_seconds),
        "target_chunks_per_s": STORE_TARGET_CHUNKS_PER_S,
        "runs": [r.__dict__ for r in runs],
    }
    result["pass"] = result["chunks_per_s"] >= STORE_TARGET_CHUNKS_PER_S
    result["store_only_pass"] = result["store_chunks_per_s"] >= STORE_TARGET_CHUNKS_PER_S
    print(
        f"  median: insert {result['insert_seconds']:.2f}s; whole pass {result['pass_seconds']:.2f}s = "
        f"{result['chunks_per_s']:.0f} chunks/s [{verdict(result['pass'])} >= {STORE_TARGET_CHUNKS_PER_S:.0f}]; "
        f"store only {result['store_seconds']:.2f}s = {result['store_chunks_per_s']:.0f} chunks/s "
        f"[{verdict(result['store_only_pass'])} >= {STORE_TARGET_CHUNKS_PER_S:.0f}]"
    )
    return result


# --------------------------------------------------------------------------------------------
# 2. Model fraction
# --------------------------------------------------------------------------------------------


def model_texts(count: int, seed: int) -> list[str]:
    rng = random.Random(seed + 1)
    texts = []
    for _ in range(count):
        # One paragraph, 1,000-1,400 characters: exactly one chunk, identical to the body.
        texts.append(prose(rng, 1000, 1400))
    return texts


def bench_model(dbs: Databases, args) -> dict:
    from memory_pipeline.embedders.local import LocalEmbedder

    texts = model_texts(args.model_chunks, args.seed)
    for t in texts:
        chunks = chunk_body(t)
        assert len(chunks) == 1 and chunks[0].text == t
    embedder = LocalEmbedder(EmbeddingProfile("local", "multilingual-e5-small", 384), batch_size=16)
    print(
        f"\n== Model fraction: {len(texts)} texts of {min(map(len, texts))}-{max(map(len, texts))} characters, "
        f"LocalEmbedder multilingual-e5-small@384, batch 16"
    )
    t0 = time.perf_counter()
    embedder.embed_documents(texts[:16])  # warm-up: loads the engine, spins up its threads
    print(f"  warm-up (load + one batch of {min(16, len(texts))}): {time.perf_counter() - t0:.2f}s")
    drafts = make_drafts(texts, memory="bench-model")

    def bare() -> float:
        t0 = time.perf_counter()
        vectors = embedder.embed_documents(texts)
        seconds = time.perf_counter() - t0
        assert vectors.shape == (len(texts), 384)
        return len(texts) / seconds

    def pipeline() -> tuple[float, float, float, float]:
        with fresh_database(dbs) as db:
            with db.connection() as conn:
                store_episodes(conn, drafts, INGEST_DAY)
            t0 = time.perf_counter()
            report = index_pending(db, embedder)
            wall = time.perf_counter() - t0
        if report.vectors != len(texts) or report.pending_after != 0:
            raise SystemExit(
                f"pipeline stored {report.vectors} vectors for {len(texts)} texts "
                f"(pending after: {report.pending_after})"
            )
        return (
            report.vectors / report.seconds,
            report.vectors / wall,
            report.embed_seconds,
            report.seconds,
        )

    bares: list[float] = []
    pipes: list[float] = []
    pipes_wall: list[float] = []
    shares: list[float] = []  # model time / pass time inside each pipeline run
    pair_ratios: list[float] = []
    for i in range(args.model_repeats):
        # Alternate which goes first so slow drift of the machine hits both sides alike.
        order = ("bare", "pipeline") if i % 2 == 0 else ("pipeline", "bare")
        for which in order:
            if which == "bare":
                bares.append(bare())
                print(f"  run {i + 1}/{args.model_repeats} bare:     {bares[-1]:6.2f} chunks/s")
            else:
                per_s, per_s_wall, embed_s, pass_s = pipeline()
                pipes.append(per_s)
                pipes_wall.append(per_s_wall)
                shares.append(embed_s / pass_s)
                print(
                    f"  run {i + 1}/{args.model_repeats} pipeline: {per_s:6.2f} vectors/s "
                    f"(wall incl. final pending count {per_s_wall:6.2f}/s; model batches {embed_s:.2f}s of the "
                    f"{pass_s:.2f}s pass = {embed_s / pass_s:.1%}; the rest is probe + database)"
                )
        pair_ratios.append(pipes[-1] / bares[-1])
    result = {
        "texts": len(texts),
        "repeats": args.model_repeats,
        "bare_chunks_per_s": statistics.median(bares),
        "pipeline_vectors_per_s": statistics.median(pipes),
        "pipeline_vectors_per_s_wall": statistics.median(pipes_wall),
        "bare_runs": bares,
        "pipeline_runs": pipes,
        "paired_ratios": pair_ratios,
        "median_paired_ratio": statistics.median(pair_ratios),
        "model_share_of_pass": statistics.median(shares),
        "target_ratio": MODEL_FRACTION_TARGET,
    }
    result["ratio"] = result["pipeline_vectors_per_s"] / result["bare_chunks_per_s"]
    result["pass"] = result["ratio"] >= MODEL_FRACTION_TARGET
    result["paired_pass"] = result["median_paired_ratio"] >= MODEL_FRACTION_TARGET
    print(
        f"  median: bare {result['bare_chunks_per_s']:.2f} chunks/s, pipeline {result['pipeline_vectors_per_s']:.2f} vectors/s, "
        f"ratio {result['ratio']:.1%} [{verdict(result['pass'])} >= {MODEL_FRACTION_TARGET:.0%}]"
    )
    print(
        f"  noise check: median of per-pair ratios {result['median_paired_ratio']:.1%} "
        f"[{verdict(result['paired_pass'])}] ({', '.join(f'{r:.1%}' for r in pair_ratios)}); model batches take {result['model_share_of_pass']:.1%} "
        f"of the pipeline pass (the pipeline's own cost is the other {1 - result['model_share_of_pass']:.1%})"
    )
    return result


# --------------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--episodes",
        type=int,
        default=None,
        help="synthetic episodes for the store path (default 3000; --quick 300)",
    )
    p.add_argument(
        "--repeats",
        type=int,
        default=None,
        help="store-path runs, each on a fresh database (default 3; --quick 1)",
    )
    p.add_argument(
        "--model-chunks",
        type=int,
        default=None,
        help="texts for the model fraction (default 48; --quick 16)",
    )
    p.add_argument(
        "--model-repeats", type=int, default=None, help="bare/pipeline pairs (default 3; --quick 1)"
    )
    p.add_argument("--skip-model", action="store_true", help="skip the model-fraction measurement")
    p.add_argument("--skip-store", action="store_true", help="skip the store-path measurement")
    p.add_argument(
        "--no-windows",
        action="store_true",
        help="store path without paragraph-window vectors (MEMORY_PIPELINE_PARAGRAPH_WINDOWS=off)",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="small sanity run: 300 episodes, 16 model texts, 1 repeat",
    )
    p.add_argument("--seed", type=int, default=20240115, help="seed of the generated text")
    p.add_argument("--json", metavar="PATH", help="also write the figures as JSON to PATH")
    p.add_argument(
        "--cprofile",
        metavar="PATH",
        help="cProfile the first store-path pass into PATH (pstats format)",
    )
    args = p.parse_args(argv)
    quick = {"episodes": 300, "repeats": 1, "model_chunks": 16, "model_repeats": 1}
    full = {"episodes": 3000, "repeats": 3, "model_chunks": 48, "model_repeats": 3}
    for name, value in (quick if args.quick else full).items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    for name in ("episodes", "repeats", "model_chunks", "model_repeats"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    exit_cleanly_on_sigterm()  # SIGTERM runs the finally below: no database or server left behind
    started = time.perf_counter()
    figures: dict = {
        "when": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
        },
        "args": {k: v for k, v in vars(args).items() if k not in ("json", "cprofile")},
    }
    dbs = Databases()
    try:
        print(f"database: {dbs.where}")
        figures["database"] = (
            "external" if os.environ.get("MEMORY_PIPELINE_DATABASE_URL") else "embedded"
        )
        if not args.skip_store:
            figures["store"] = bench_store(dbs, args)
        if not args.skip_model:
            figures["model"] = bench_model(dbs, args)
        figures["migrations"] = dbs.migrations
    finally:
        dbs.close()
    figures["total_seconds"] = time.perf_counter() - started

    print("\n== Summary")
    ok = True
    if "store" in figures:
        s = figures["store"]
        ok &= s["pass"]
        print(
            f"  store path   {s['chunks']:>6} chunks  whole pass {s['chunks_per_s']:8.0f} chunks/s  "
            f"[{verdict(s['pass'])} >= {STORE_TARGET_CHUNKS_PER_S:.0f}]  (median of {s['repeats']})"
        )
        print(
            f"               store only {s['store_seconds']:.2f}s = {s['store_chunks_per_s']:.0f} chunks/s "
            f"[{verdict(s['store_only_pass'])}]; insert {s['insert_seconds']:.2f}s = {s['insert_episodes_per_s']:.0f} episodes/s"
        )
    if "model" in figures:
        m = figures["model"]
        ok &= m["pass"]
        print(
            f"  model        {m['texts']:>6} texts   bare {m['bare_chunks_per_s']:.2f} chunks/s, pipeline "
            f"{m['pipeline_vectors_per_s']:.2f} vectors/s = {m['ratio']:.1%}  "
            f"[{verdict(m['pass'])} >= {MODEL_FRACTION_TARGET:.0%}]  (median of {m['repeats']})"
        )
        print(
            f"               per-pair median {m['median_paired_ratio']:.1%} [{verdict(m['paired_pass'])}]; "
            f"model batches are {m['model_share_of_pass']:.1%} of the pipeline pass"
        )
    print(f"  schema       migrations {', '.join(figures.get('migrations') or ['?'])}")
    print(f"  total        {figures['total_seconds']:.1f}s")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
        print(f"  figures written to {args.json}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
