"""Load on ``memory-pipeline serve``: concurrent searches over a large memory while episodes are
added and indexed through the same API.

    python benchmarks/bench_service_load.py                          # 16 clients, 60 s, 10,000 chunks
    python benchmarks/bench_service_load.py --clients 4 --seconds 10 --chunks 1000   # quick
    python benchmarks/bench_service_load.py --json figures.json

A fresh database (``bench_databases``) and a loopback Ollama-format model server
(``memory_pipeline_tests/support/loopback.py``, hashing vectors, in this process) serve one
``serve`` process. The memory is generated (two ~1,000-character paragraphs per episode, one
chunk each) and indexed before the clock starts. Then ``--clients`` threads, each with its own
HTTP connection, search in a loop for ``--seconds`` with questions written by hand (``QUESTIONS``,
not drawn from the generator's sentences), while one more thread adds ``--ingest-batch`` episodes
(``POST /v1/episodes``) and runs an index pass (``POST /v1/index``) over and over. It prints
searches/s, p50/p95/p99 latency, errors (any answer but 200), and what the writer managed.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]

TOPICS = {
    "garden": [
        "tomatoes",
        "compost",
        "the greenhouse",
        "watering",
        "seedlings",
        "the apple tree",
        "slugs",
    ],
    "work": [
        "the quarterly budget",
        "the deployment",
        "a code review",
        "the roadmap",
        "the client call",
        "hiring",
    ],
    "health": [
        "the dentist",
        "a morning run",
        "sleep",
        "the physiotherapist",
        "vitamin D",
        "a headache",
    ],
    "travel": [
        "the train to Lisbon",
        "a hotel in Kyoto",
        "passport renewal",
        "the ferry",
        "packing",
        "a delayed flight",
    ],
    "family": [
        "grandmother's birthday",
        "the school play",
        "a phone call with Dad",
        "the wedding",
        "Sunday lunch",
    ],
    "money": [
        "the mortgage",
        "taxes",
        "a savings plan",
        "the electricity bill",
        "a refund",
        "insurance",
    ],
}
VERBS = [
    "went over",
    "worried about",
    "finally sorted",
    "talked about",
    "planned",
    "wrote down notes on",
    "forgot",
]
PLACES = [
    "at home",
    "in the office",
    "on the bus",
    "after dinner",
    "before breakfast",
    "in the park",
    "late at night",
]

# Written by hand, not drawn from the generator's sentences.
QUESTIONS = [
    "what did the dentist say?",
    "when is grandmother's birthday?",
    "how is the greenhouse doing?",
    "did I renew my passport?",
    "notes from the client call",
    "what happened with the quarterly budget?",
    "how much was the electricity bill?",
    "plans for the trip to Japan",
    "how did I sleep last week?",
    "anything about the school play",
    "what went wrong with the deployment?",
    "running progress",
    "mortgage questions",
    "tax deadline",
    "ferry timetable",
    "compost tips",
    "who are we hiring?",
    "vitamin D",
    "slugs eating the seedlings",
    "the wedding plans",
    "insurance renewal",
    "a refund I was owed",
    "headaches in the morning",
    "Sunday lunch with the family",
    "physio exercises for my knee",
]


def paragraph(rng: random.Random) -> str:
    sentences = []
    while sum(len(s) for s in sentences) < 950:
        topic = rng.choice(list(TOPICS))
        sentences.append(
            f"{rng.choice(['I', 'We', 'Sam', 'Mara'])} {rng.choice(VERBS)} {rng.choice(TOPICS[topic])} "
            f"{rng.choice(PLACES)}, and {rng.choice(VERBS)} {rng.choice(TOPICS[topic])}."
        )
    return " ".join(sentences)


def episodes(rng: random.Random, n: int, memory: str, start: int = 0) -> list[dict]:
    return [
        {
            "memory": memory,
            "kind": rng.choice(["note", "journal", "chat"]),
            "title": f"Entry {start + i}",
            "occurred_at": f"2026-{1 + (start + i) % 12:02d}-{1 + (start + i) % 28:02d}T08:00:00Z",
            "body": paragraph(rng) + "\n\n" + paragraph(rng),
        }
        for i in range(n)
    ]


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def load(
    base_url: str, *, clients: int, seconds: float, memory: str, ingest_batch: int, seed: int
) -> dict:
    """Search from ``clients`` threads for ``seconds`` while one writer adds and indexes; the figures."""
    stop = threading.Event()
    lock = threading.Lock()
    latencies: list[float] = []
    errors: dict[str, int] = {}
    writer = {"batches": 0, "episodes": 0, "indexPasses": 0, "indexedEpisodes": 0, "errors": 0}

    def searcher(i: int) -> None:
        rng = random.Random(seed * 1000 + i)
        with httpx.Client(base_url=base_url, timeout=120) as client:
            while not stop.is_set():
                started = time.perf_counter()
                try:
                    response = client.get(
                        "/v1/search", params={"memory": memory, "q": rng.choice(QUESTIONS)}
                    )
                    outcome = "ok" if response.status_code == 200 else str(response.status_code)
                except httpx.HTTPError as exc:
                    outcome = type(exc).__name__
                elapsed = time.perf_counter() - started
                with lock:
                    if outcome == "ok":
                        latencies.append(elapsed)
                    else:
                        errors[outcome] = errors.get(outcome, 0) + 1

    def ingester() -> None:
        rng = random.Random(seed + 99)
        n = 1_000_000
        with httpx.Client(base_url=base_url, timeout=600) as client:
            while not stop.is_set():
                added = client.post(
                    "/v1/episodes", json=episodes(rng, ingest_batch, memory, start=n)
                )
                n += ingest_batch
                indexed = client.post("/v1/index")
                writer["batches"] += 1
                if added.status_code == 201:
                    writer["episodes"] += added.json()["inserted"]
                if indexed.status_code == 200:
                    writer["indexPasses"] += 1
                    writer["indexedEpisodes"] += indexed.json()["episodes"]
                writer["errors"] += (added.status_code != 201) + (indexed.status_code != 200)

    threads = [threading.Thread(target=searcher, args=(i,)) for i in range(clients)]
    threads.append(threading.Thread(target=ingester))
    started = time.perf_counter()
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads[:-1]:
        t.join()
    elapsed = time.perf_counter() - started
    threads[-1].join()
    return {
        "clients": clients,
        "seconds": round(elapsed, 1),
        "searches": len(latencies),
        "searchesPerSecond": round(len(latencies) / elapsed, 1),
        "p50Ms": round(percentile(latencies, 0.50) * 1000, 1),
        "p95Ms": round(percentile(latencies, 0.95) * 1000, 1),
        "p99Ms": round(percentile(latencies, 0.99) * 1000, 1),
        "meanMs": round(statistics.fmean(latencies) * 1000, 1) if latencies else None,
        "errors": errors,
        "writer": writer,
    }


def main(argv: list[str] | None = None) -> dict:
    sys.path.insert(0, str(ROOT))  # the loopback model server lives with the tests' support code
    from bench_databases import Databases  # a sibling module (benchmarks/)

    from memory_pipeline import Memory
    from memory_pipeline.storage.embedded import exit_cleanly_on_sigterm
    from memory_pipeline_tests.support.loopback import LoopbackEmbeddingServer
    from memory_pipeline_tests.support.service import ServerProcess, service_env

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument(
        "--chunks", type=int, default=10_000, help="chunks in the searched memory (two per episode)"
    )
    parser.add_argument(
        "--ingest-batch", type=int, default=50, help="episodes per POST /v1/episodes of the writer"
    )
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args(argv)
    exit_cleanly_on_sigterm()
    rng = random.Random(args.seed)
    databases = Databases()
    try:
        with LoopbackEmbeddingServer(dim=512, models={"qwen3-embedding:0.6b"}) as model:
            db_url = databases.fresh()
            seeded = time.perf_counter()
            with Memory.open(
                url=db_url,
                embed_provider="ollama",
                embed_url=model.url,
                embed_batch_size=64,
                record_in_dagster=False,
            ) as mem:
                for start in range(0, args.chunks // 2, 1000):
                    mem.add(episodes(rng, min(1000, args.chunks // 2 - start), "me", start=start))
                mem.index()
                chunks = mem.memories()[0].chunks
            seeded = time.perf_counter() - seeded
            print(
                f"memory 'me': {chunks} chunks, added and indexed in {seeded:.0f}s; {databases.where}",
                flush=True,
            )
            home = Path(
                tempfile.mkdtemp(prefix="mp_bench_home_")
            )  # the server's data folder (Dagster's home)
            env = service_env(db_url, model.url, home)
            env["MEMORY_PIPELINE_EMBED_BATCH"] = "64"
            server = ServerProcess(["serve", "--port", "0"], env)
            try:
                figures = load(
                    server.url,
                    clients=args.clients,
                    seconds=args.seconds,
                    memory="me",
                    ingest_batch=args.ingest_batch,
                    seed=args.seed,
                )
            finally:
                server.close()
                shutil.rmtree(home, ignore_errors=True)
            figures["chunks"] = chunks
            figures["serverTracebacks"] = sum("Traceback" in line for line in server.stderr)
    finally:
        databases.close()
    print(json.dumps(figures, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2), encoding="utf-8")
    return figures


if __name__ == "__main__":
    main()
