#!/usr/bin/env python
"""Revisions of edited notes (DESIGN.md: revision, current): a folder of N notes ingested and
indexed, every note edited, the folder ingested twice more and indexed; then the memory must hold
N current episodes, search must return only current revisions, and ``search --history`` must find
the old ones, marked superseded.

Everything goes through the product's commands, as a user runs them (``memory-pipeline ingest``,
``index``, ``memories``, ``episodes``, ``search --batch``), on a fresh embedded database in a
temporary folder (``--keep DIR`` keeps it there instead), against ``model_server.py --vectors
words`` on loopback (``user_path``). Note i holds its own code word and a price; the edit changes
the price. A query names a note's code word and its old price: without history every result must
be a current revision (the edited note first), with history the note's old revision must be among
the results marked superseded.

    python benchmarks/bench_revisions.py                 # 1,000 notes
    python benchmarks/bench_revisions.py --notes 20 --queries 5 --json revisions.json
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_index_server import ServerProcess  # sibling modules (benchmarks/)
from user_path import DIM, SYLLABLES, cli_env, console_script

MEMORY = "notes"


def code_word(i: int) -> str:
    """A made-up word only note ``i`` holds (three syllables per base-|SYLLABLES| digit)."""
    digits = []
    n = i + len(SYLLABLES) ** 2  # at least three digits, so every word is long enough to index
    while n:
        n, d = divmod(n, len(SYLLABLES))
        digits.append(SYLLABLES[d])
    return "".join(reversed(digits))


def price(i: int, version: int) -> int:
    return 100 + i % 500 + 1000 * version


def write_notes(folder: Path, n: int, version: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    fillers = ["garden", "fence", "budget", "supplier", "delivery", "weekend", "paint", "wood"]
    for i in range(n):
        words = " ".join(rng.choice(fillers) for _ in range(12))
        sub = folder / f"area-{i % 10}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"note-{i:05d}.md").write_text(
            f"# Note {code_word(i)}\n\nCost estimate for {code_word(i)}: "
            f"{price(i, version)} EUR.\n\n{words}.\n",
            encoding="utf-8",
        )


def cli(env: dict[str, str], *args: str, stdin: str | None = None) -> tuple[float, str]:
    """``memory-pipeline ARGS``: (wall seconds, standard output); exits on failure."""
    started = time.perf_counter()
    done = subprocess.run(
        [console_script(), *args], env=env, input=stdin, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(
            f"memory-pipeline {' '.join(args)} exited {done.returncode}: {done.stderr}"
        )
    return time.perf_counter() - started, done.stdout


def current_sources(env: dict[str, str]) -> dict[str, dict]:
    """Every current episode of the memory by its source identity, through ``episodes`` pages."""
    found: dict[str, dict] = {}
    before: list[str] = []
    while True:
        _, out = cli(env, "episodes", "--memory", MEMORY, "--limit", "1000", "--json", *before)
        rows = json.loads(out)["episodes"]
        found.update({row["sourceId"]: row for row in rows})
        if len(rows) < 1000:
            return found
        before = ["--before", str(rows[-1]["id"])]


def searches(env: dict[str, str], notes: list[int], *, history: bool) -> tuple[float, list[dict]]:
    lines = "".join(
        json.dumps(
            {
                "memory": MEMORY,
                "query": f"cost estimate {code_word(i)} {price(i, 0)} EUR",
                "limit": 5,
                "history": history,
            }
        )
        + "\n"
        for i in notes
    )
    seconds, out = cli(env, "search", "--batch", "-", stdin=lines)
    return seconds, [json.loads(line) for line in out.splitlines()]


def run(home: Path, n: int, queries: int) -> dict:
    notes_dir = home / "corpus" / "notes"
    figures: dict = {"notes": n}
    with ServerProcess(slots=0, latency_ms=0, batch=64, dim=DIM, vectors="words") as server:
        env = cli_env(home, server.url)
        env["MEMORY_PIPELINE_TELEMETRY"] = "off"
        write_notes(notes_dir, n, version=0)
        figures["ingest_s"], out = cli(env, "ingest", str(notes_dir), "--memory", MEMORY, "--json")
        first = json.loads(out)
        figures["index_s"], _ = cli(env, "index", "--json")
        write_notes(notes_dir, n, version=1)
        steps = []
        for _ in range(2):
            seconds, out = cli(env, "ingest", str(notes_dir), "--memory", MEMORY, "--json")
            report = json.loads(out)
            steps.append(
                {
                    "seconds": round(seconds, 2),
                    **{k: report[k] for k in ("inserted", "revised", "duplicates")},
                }
            )
        figures["reingest"] = steps
        figures["reindex_s"], out = cli(env, "index", "--json")
        figures["reindexed_episodes"] = json.loads(out)["episodes"]
        _, out = cli(env, "memories", "--json")
        figures["current_episodes"] = next(m for m in json.loads(out) if m["name"] == MEMORY)[
            "episodes"
        ]
        current = current_sources(env)
        figures["listed_current"] = len(current)
        figures["listed_two_revisions"] = sum(
            1 for row in current.values() if row["revisions"] == 2
        )
        current_ids = {row["id"] for row in current.values()}
        old_ids = first["episodeIds"]  # in file order: area-0/note-00000, area-0/note-00010, ...
        order = sorted(range(n), key=lambda i: (i % 10, i))
        old_of = {note: old_ids[k] for k, note in enumerate(order)}

        sample = random.Random(3).sample(range(n), min(queries, n))
        plain_s, plain = searches(env, sample, history=False)
        history_s, with_history = searches(env, sample, history=True)
    stale = sum(1 for doc in plain for r in doc["results"] if r["episodeId"] not in current_ids)
    marked = sum(1 for doc in plain for r in doc["results"] if r.get("superseded"))
    first_is_note = sum(
        1
        for i, doc in zip(sample, plain)
        if doc["results"]
        and doc["results"][0]["episodeId"] == current[f"notes/area-{i % 10}/note-{i:05d}.md"]["id"]
    )
    found_old = sum(
        1
        for i, doc in zip(sample, with_history)
        if any(r.get("superseded") and r["episodeId"] == old_of[i] for r in doc["results"])
    )
    figures.update(
        {
            "queries": len(sample),
            "stale_results_without_history": stale,
            "superseded_marked_without_history": marked,
            "edited_note_first": first_is_note,
            "old_revision_found_with_history": found_old,
            "search_latency_ms_p50": round(statistics.median(d["latencyMs"] for d in plain), 2),
            "history_latency_ms_p50": round(
                statistics.median(d["latencyMs"] for d in with_history), 2
            ),
            "search_batch_s": round(plain_s, 2),
            "history_batch_s": round(history_s, 2),
        }
    )
    return figures


def check(figures: dict) -> list[str]:
    n, q = figures["notes"], figures["queries"]
    wanted = {
        "current_episodes": n,
        "listed_current": n,
        "listed_two_revisions": n,
        "reindexed_episodes": n,
        "stale_results_without_history": 0,
        "superseded_marked_without_history": 0,
        "old_revision_found_with_history": q,
    }
    problems = [f"{k}: {figures[k]} (expected {v})" for k, v in wanted.items() if figures[k] != v]
    steps = figures["reingest"]
    if (steps[0]["revised"], steps[1]["inserted"], steps[1]["duplicates"]) != (n, 0, n):
        problems.append(f"re-ingests: {steps} (expected {n} revised, then {n} already stored)")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notes", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--keep", type=Path, help="build in this folder and keep it")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-revisions-") as scratch:
        home = args.keep or Path(scratch)
        started = time.perf_counter()
        figures = run(home, args.notes, args.queries)
        figures["total_s"] = round(time.perf_counter() - started, 1)
    figures = {k: round(v, 2) if isinstance(v, float) else v for k, v in figures.items()}
    problems = check(figures)
    figures["ok"] = not problems
    print(json.dumps(figures, indent=2))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    for problem in problems:
        print("FAILED:", problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
