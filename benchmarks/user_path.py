"""The search benchmarks' shared state, built only the way a user builds it.

A corpus of one-paragraph notes is written as JSONL (``write_notes``), stored with
``memory-pipeline ingest FILE`` and indexed with ``memory-pipeline index --json``, both run as
subprocesses of the installed console script against ``model_server.py --vectors words`` (an
OpenAI-style loopback server in its own process whose vectors are normalized sums of fixed
per-word vectors); nothing else touches the database: no index, statistics or lists are built
behind the product's back, so what is timed is what a user has right after ``index``. Searches go
through the public API (``Memory.open(home=...)``, ``Memory.search``), the query embedded by the
same server over loopback HTTP.

Queries (``mixed_queries``) are not written from the generator's word lists: they are drawn from
the stored corpus's own document frequencies, as a user's words would fall, each of about six
words mixing words found in a handful of notes with words found in most of them.

``Kept`` keeps the build in a folder (``--home``: the embedded PostgreSQL, the corpus and
``build.json`` with the build's figures); a later run with the same arguments reuses it.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench_index_server import ServerProcess  # sibling module (benchmarks/)

MEMORY = "bench"
DIM = 384
MODEL = "words"
WORD = re.compile(r"[a-z]+")
# Content words a journal of work notes holds in most entries: each is written into a note with
# its own probability (here 0.45-0.92), so most notes hold several of them.
EVERYDAY = {
    "today": 0.92,
    "work": 0.85,
    "team": 0.8,
    "meeting": 0.75,
    "project": 0.72,
    "plan": 0.66,
    "week": 0.62,
    "time": 0.58,
    "call": 0.55,
    "update": 0.5,
    "notes": 0.47,
    "morning": 0.45,
}
GLUE = "the a and of to in with for on at from about after before we I it was is".split()
SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"] + ["an", "el", "or", "is", "un"]


def _vocabulary(rng: random.Random, size: int) -> list[str]:
    words: dict[str, None] = {}
    while len(words) < size:
        w = "".join(rng.choice(SYLLABLES) for _ in range(rng.choice((2, 2, 3, 3, 4))))
        if w not in EVERYDAY and w not in GLUE:
            words[w] = None
    return list(words)


def memory_names(memories: int) -> list[str]:
    """The memories of a build of ``memories`` (one: ``MEMORY``)."""
    return [MEMORY] if memories <= 1 else [f"m{i:05d}" for i in range(memories)]


def write_notes(
    path: Path, notes: int, seed: int, memory: str = MEMORY, *, memories: int = 1
) -> dict:
    """``notes`` one-paragraph notes (40-90 words, one chunk each) as ``memory-pipeline ingest``
    reads them: words of a Zipf vocabulary of 30,000, the everyday words, glue words and one of
    300 recurring names in a third of them; with ``memories`` > 1, dealt round-robin to that many
    memories (``memory_names``); returns the counts written."""
    names_of = memory_names(memories) if memories > 1 else [memory]
    rng = random.Random(seed)
    vocab = _vocabulary(rng, 30000)
    weights = [1 / (r + 1) ** 1.05 for r in range(len(vocab))]
    cum = list(_accumulate(weights))
    names = [
        f"{rng.choice(SYLLABLES).title()}{rng.choice(SYLLABLES)} {rng.choice(SYLLABLES).title()}"
        f"{rng.choice(SYLLABLES)}{rng.choice(SYLLABLES)}"
        for _ in range(300)
    ]
    written = 0
    with path.open("w", encoding="utf-8") as out:
        for i in range(notes):
            words = rng.choices(vocab, cum_weights=cum, k=rng.randint(28, 60))
            words += [w for w, p in EVERYDAY.items() if rng.random() < p]
            words += rng.choices(GLUE, k=len(words) // 3)
            rng.shuffle(words)
            if rng.random() < 0.33:
                words.insert(rng.randrange(len(words)), rng.choice(names))
            body = " ".join(words).capitalize() + "."
            day = 1 + i * 1000 // max(notes, 1) % 28
            out.write(
                json.dumps(
                    {
                        "memory": names_of[i % len(names_of)],
                        "kind": "note",
                        "title": " ".join(rng.choices(vocab[:2000], k=2)).title(),
                        "occurred_at": f"2026-{1 + i % 12:02d}-{day:02d}T09:00:00Z",
                        "body": body,
                    }
                )
                + "\n"
            )
            written += 1
    return {"notes": written, "bytes": path.stat().st_size}


def _accumulate(values: Sequence[float]) -> Iterator[float]:
    total = 0.0
    for v in values:
        total += v
        yield total


def document_frequencies(path: Path) -> tuple[int, Counter]:
    """(notes, each lower-case word's number of notes holding it) over a JSONL corpus."""
    df: Counter = Counter()
    n = 0
    with path.open(encoding="utf-8") as f:
        for line in f:
            n += 1
            df.update(set(WORD.findall(json.loads(line)["body"].lower())))
    return n, df


def mixed_queries(path: Path, count: int, seed: int) -> list[str]:
    """``count`` queries of six words: two or three found in at most 0.1% of the notes (at least
    two), one in 0.1-5%, the rest in more than half of them, in random order; all from the
    corpus's own frequencies."""
    n, df = document_frequencies(path)
    glue = set(GLUE) | {w.lower() for w in GLUE}
    words = [w for w in df if w not in glue]
    rare = sorted(w for w in words if 2 <= df[w] <= max(2, n // 1000))
    middle = sorted(w for w in words if n // 1000 < df[w] <= n // 20)
    common = sorted(w for w in words if df[w] > n // 2)
    if not (rare and middle and common):
        raise SystemExit(f"{path}: too small a corpus for mixed queries ({n} notes)")
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        k = rng.choice((2, 3))
        q = rng.sample(rare, k) + [rng.choice(middle)]
        q += rng.sample(common, min(6 - len(q), len(common)))
        rng.shuffle(q)
        out.append(" ".join(q))
    return out


def console_script() -> str:
    """The installed ``memory-pipeline`` beside this interpreter (the user's command)."""
    found = Path(sys.executable).with_name("memory-pipeline")
    return str(found) if found.exists() else (shutil.which("memory-pipeline") or "memory-pipeline")


def cli_env(home: Path, url: str, dim: int = DIM) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_PIPELINE_")}
    env.update(
        {
            "MEMORY_PIPELINE_HOME": str(home),
            "MEMORY_PIPELINE_EMBED_PROVIDER": "openai",
            "MEMORY_PIPELINE_EMBED_URL": url,
            "MEMORY_PIPELINE_EMBED_MODEL": MODEL,
            "MEMORY_PIPELINE_EMBED_DIM": str(dim),
        }
    )
    return env


def run_cli(args: Sequence[str], env: dict[str, str]) -> tuple[float, dict]:
    """Run ``memory-pipeline ARGS --json``; (wall seconds, its JSON report). Exits on failure."""
    t0 = time.perf_counter()
    done = subprocess.run(
        [console_script(), *args, "--json"], env=env, capture_output=True, text=True
    )
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(
            f"memory-pipeline {' '.join(args)} failed ({done.returncode}): {done.stderr}"
        )
    return seconds, json.loads(done.stdout)


@dataclass
class Kept:
    """A folder holding a corpus ingested and indexed with the console script (see the module)."""

    home: Path
    notes: int
    seed: int
    dim: int = DIM
    # The model server ``index`` runs against: ``slots`` x 16 inputs per ``latency_ms`` (0, 0:
    # one that answers at once, so the pipeline is measured, not a model).
    slots: int = 0
    latency_ms: float = 0.0
    memories: int = 1  # the notes dealt to this many memories (``memory_names``)

    @property
    def data(self) -> Path:
        return self.home / "data"

    @property
    def corpus(self) -> Path:
        return self.home / "notes.jsonl"

    def args(self) -> dict:
        return {
            "notes": self.notes,
            "seed": self.seed,
            "dim": self.dim,
            "slots": self.slots,
            "latency_ms": self.latency_ms,
            **({"memories": self.memories} if self.memories > 1 else {}),
        }

    def built(self) -> dict | None:
        path = self.home / "build.json"
        if not path.exists():
            return None
        done = json.loads(path.read_text(encoding="utf-8"))
        if done["args"] != self.args():
            raise SystemExit(
                f"--home {self.home} holds a build of {done['args']}, not {self.args()}: "
                "use another folder or the same arguments"
            )
        return done

    def build(self, server_url: str) -> dict:
        """Ingest and index the corpus (unless built already); the build's figures."""
        done = self.built()
        if done is not None:
            return done
        self.home.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(self.data, ignore_errors=True)  # a build that stopped part way
        t0 = time.perf_counter()
        corpus = write_notes(self.corpus, self.notes, self.seed, memories=self.memories)
        corpus["seconds"] = round(time.perf_counter() - t0, 1)
        print(f"corpus: {corpus['notes']:,} notes in {corpus['seconds']}s", flush=True)
        env = cli_env(self.data, server_url, self.dim)
        ingest_s, ingested = run_cli(["ingest", str(self.corpus)], env)
        print(
            f"memory-pipeline ingest: {ingested['inserted']:,} episodes in {ingest_s:.1f}s",
            flush=True,
        )
        index_s, indexed = run_cli(["index"], env)
        ready = indexed.get("searchReady") or {}
        hnsw = ready.get("hnswIndex") or {}
        print(
            f"memory-pipeline index: {indexed['chunks']:,} chunks in {index_s:.1f}s "
            f"(its pass {indexed['seconds']:.1f}s; HNSW {hnsw.get('outcome')} in "
            f"{hnsw.get('buildSeconds')}s, leaving search ready {ready.get('seconds')}s)",
            flush=True,
        )
        done = {
            "args": self.args(),
            "corpus": corpus,
            "ingest_seconds": round(ingest_s, 2),
            "index_seconds": round(index_s, 2),
            "index": indexed,
        }
        (self.home / "build.json").write_text(json.dumps(done, indent=2) + "\n", encoding="utf-8")
        return done

    @contextlib.contextmanager
    def opened(self) -> Iterator[tuple[object, ServerProcess, dict]]:
        """(the ``Memory`` over the build, the model server, the build's figures), built first if
        needed; the model server and the embedded PostgreSQL stop when the block ends."""
        from memory_pipeline import Memory

        if self.built() is None:
            with ServerProcess(
                slots=self.slots,
                latency_ms=self.latency_ms,
                batch=16,
                dim=self.dim,
                vectors="words",
            ) as srv:
                self.build(srv.url)
        with ServerProcess(slots=0, latency_ms=0, batch=16, dim=self.dim, vectors="words") as srv:
            figures = self.build(srv.url)
            with Memory.open(
                home=self.data,
                embed_provider="openai",
                embed_url=srv.url,
                embed_model=MODEL,
                embed_dim=self.dim,
                record_in_dagster=False,
            ) as mem:
                yield mem, srv, figures


def pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def time_searches(
    mem, queries: Sequence[str], rows: dict[str, tuple[str, ...] | None], *, memory: str = MEMORY
) -> dict[str, list[float]]:
    """Wall milliseconds of ``Memory.search`` for each query under each row's channels (None:
    the fused default), rows interleaved query by query with the first row turning, so that no
    row always meets the caches another warmed."""
    names = list(rows)
    ms: dict[str, list[float]] = {name: [] for name in names}
    for i, q in enumerate(queries):
        for name in names[i % len(names) :] + names[: i % len(names)]:
            t0 = time.perf_counter()
            mem.search(memory, q, channels=rows[name])
            ms[name].append((time.perf_counter() - t0) * 1000)
    return ms


def summary(ms: Sequence[float]) -> dict:
    """p50 / p95 / mean of a row's timings, its first tenth dropped (the caches warming)."""
    kept = list(ms)[len(ms) // 10 :]
    return {
        "p50": round(pct(kept, 0.5), 2),
        "p95": round(pct(kept, 0.95), 2),
        "mean": round(statistics.fmean(kept), 2) if kept else None,
        "n": len(kept),
    }
