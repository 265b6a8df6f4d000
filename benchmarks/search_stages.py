#!/usr/bin/env python
"""Where one search's time goes: each stage of ``Memory.search`` timed from the inside.

Every call of the stages below is wrapped with a timer (in whichever channel thread runs it), then
the build's mixed queries (``user_path.mixed_queries``: rare words with words most notes hold)
are searched, and p50 / p95 / mean per stage are printed (the first tenth of the searches left
out), with how many calls a query makes. The query is embedded by ``model_server.py --vectors
words`` in its own process over loopback HTTP, so the round trip is a stage of its own
(``embed_query``).

The state is the build ``bench_search_latency.py --home`` keeps (the same ``--home``,
``--notes``, ``--seed``, ``--dim``; built first if missing): notes stored with ``memory-pipeline
ingest`` and ``memory-pipeline index``, nothing else. Delete the folder when done.

Then the slowest searches (``--slowest``), each with its stages' milliseconds, and the CPU one
search costs: this process, the model server's and the whole machine's (Linux ``/proc``; on 2
cores the channels run side by side, so the fused latency follows that sum, not the slowest
channel alone).

    python benchmarks/search_stages.py --home /tmp/lat100k --notes 100000 --slowest 5
    python benchmarks/search_stages.py --home /tmp/lat100k --notes 100000 --channels keyword
"""

from __future__ import annotations

import argparse
import collections
import functools
import os
import statistics
import threading
import time
from pathlib import Path

import bench_search_latency as latency  # sibling modules (benchmarks/)

from memory_pipeline.domain import fusion
from memory_pipeline.search.channels import graph as graph_channel
from memory_pipeline.search.channels import run as channel_run
from memory_pipeline.search.channels import vector as vector_channel
from memory_pipeline.storage import observations_store, search_store

# (owner, attribute, label): the stages timed. Channel methods include the stages they call.
STAGES = (
    (search_store, "memory_exists", "memory_exists"),
    (vector_channel, "serving_in", "serving_in (alone: a memory's first search)"),
    (vector_channel, "nearest_chunks", "vector SQL (nearest_chunks)"),
    (search_store, "keyword_hits", "keyword channel"),
    (search_store, "record_telemetry", "record_telemetry"),
    (search_store, "entities_version", "graph: entities_version"),
    (search_store, "memory_entities", "graph: memory_entities"),
    (graph_channel, "followed_entities", "graph: followed_entities"),
    (search_store, "graph_candidates", "graph: graph_candidates"),
    (observations_store, "any_statements", "statements: any_statements"),
    (observations_store, "by_vector", "statements: by_vector"),
    (observations_store, "by_words", "statements: by_words"),
    (search_store, "chunk_rows", "chunk_rows"),
    (search_store, "chunk_texts", "chunk_texts (its chunk_rows call counted above too)"),
    (fusion, "fuse", "fuse"),
    (channel_run.ChannelRunner, "run", "all channels (ChannelRunner.run)"),
    (vector_channel.VectorChannel, "__call__", "vector channel"),
    (graph_channel.GraphChannel, "__call__", "graph channel"),
    (channel_run, "statement_channel", "statement channel"),
)


class Timers:
    def __init__(self) -> None:
        self.ms: dict[str, list[float]] = collections.defaultdict(list)
        self._lock = threading.Lock()

    def wrap(self, owner, attribute: str, label: str) -> None:
        original = owner.__dict__.get(attribute, getattr(owner, attribute))
        static = isinstance(original, staticmethod)
        func = original.__func__ if static else original

        @functools.wraps(func)
        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return func(*args, **kwargs)
            finally:
                with self._lock:
                    self.ms[label].append((time.perf_counter() - t0) * 1000)

        setattr(owner, attribute, staticmethod(timed) if static else timed)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    latency.add_kept_arguments(p)
    p.add_argument("--queries", type=int, default=300)
    p.add_argument(
        "--channels", help="comma-separated channels (default: the fused default policy)"
    )
    p.add_argument(
        "--slowest",
        type=int,
        default=10,
        help="how many of the slowest searches to show (default 10)",
    )
    args = p.parse_args()
    return measure(args)


class CpuClock:
    """CPU seconds used so far by this process (all threads), by ``pid`` and by the whole machine
    (Linux ``/proc``; None elsewhere)."""

    def __init__(self, pid: int):
        self.pid = pid
        self.tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

    def read(self) -> tuple[float, float | None, float | None]:
        try:
            fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
            server = (int(fields[11]) + int(fields[12])) / self.tick  # utime + stime
            busy = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
            machine = (sum(busy) - busy[3] - busy[4]) / self.tick  # all but idle and iowait
        except (OSError, IndexError, ValueError):
            server = machine = None
        return time.process_time(), server, machine


def measure(args: argparse.Namespace) -> int:
    timers = Timers()
    for owner, attribute, label in STAGES:
        timers.wrap(owner, attribute, label)
    channels = tuple(args.channels.split(",")) if args.channels else None
    searches = []  # (ms, query, {stage: ms within that search})
    with latency.opened_kept(args) as (mem, server, _figures):
        timers.wrap(mem.embedder, "embed_query", "embed_query (HTTP round trip)")
        queries = latency.kept_queries(args, args.queries)
        clock = CpuClock(server.proc.pid)
        for i, q in enumerate(queries):
            if i == len(queries) // 10:  # the first tenth warms the caches, untimed
                timers.ms.clear()
                searches.clear()
                cpu_before = clock.read()
            before = {label: len(xs) for label, xs in timers.ms.items()}
            t0 = time.perf_counter()
            mem.search(latency.MEMORY, q, channels=channels)
            ms = (time.perf_counter() - t0) * 1000
            # The channels' threads are done when search returns: what they timed since is this search's.
            searches.append(
                (
                    ms,
                    q,
                    {
                        label: sum(xs[before.get(label, 0) :])
                        for label, xs in timers.ms.items()
                        if len(xs) > before.get(label, 0)
                    },
                )
            )
        cpu_after = clock.read()
        queries = [q for _, q, _ in searches]
    total = [ms for ms, _, _ in searches]
    print(
        f"{args.channels or 'fused default'}, {args.notes:,} notes, {len(queries)} queries: "
        f"p50 {latency.pct(total, 0.5):.1f}  p95 {latency.pct(total, 0.95):.1f}  mean {statistics.fmean(total):.1f} ms"
    )
    print(f"  {'stage':<32}{'calls/query':>12}{'p50 ms':>9}{'p95 ms':>9}{'mean ms':>9}")
    for label, xs in sorted(timers.ms.items(), key=lambda item: -sum(item[1])):
        print(
            f"  {label:<32}{len(xs) / len(queries):12.1f}{latency.pct(xs, 0.5):9.2f}"
            f"{latency.pct(xs, 0.95):9.2f}{statistics.fmean(xs):9.2f}"
        )
    if args.slowest > 0:
        print(
            f"the {args.slowest} slowest searches (ms; a stage's calls in that search summed, threads overlapping):"
        )
        for ms, q, stages in sorted(searches, key=lambda item: -item[0])[: args.slowest]:
            top = sorted(stages.items(), key=lambda item: -item[1])[:4]
            print(
                f"  {ms:6.1f}  {q[:44]!r:48}"
                + "  ".join(f"{label.split(' (')[0]} {t:.1f}" for label, t in top)
            )
    spent = [
        None if a is None or b is None else (b - a) * 1000 / len(queries)
        for a, b in zip(cpu_before, cpu_after)
    ]
    names = ("this process", "model server", "whole machine")
    print(
        "CPU per search: "
        + ", ".join(
            f"{name} {value:.1f} ms" for name, value in zip(names, spent) if value is not None
        )
        + f" (wall {statistics.fmean(total):.1f} ms)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
