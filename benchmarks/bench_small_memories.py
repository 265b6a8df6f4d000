#!/usr/bin/env python
"""Small memories, paraphrased questions: is the note a question is about the first result, as a
new user meets search with a few dozen notes of their own?

Data (``benchmarks/data/small_memories/``, written by hand for this benchmark, not generated; its
README says how): one folder per memory, each 16-18 notes in Markdown files and JSONL lines, in
different voices (``owen``: a person's life admin; ``tally-team``: a software team's work notes;
``beatriz``: a diary in Portuguese and English mixed), and ``questions.jsonl``: questions asked
in words the notes do not use, each with the title of the episode it is about (``expect``).
The script refuses to run if an expected title is missing from its memory or held twice.

Everything goes through the product's commands, as a user runs them, on a fresh embedded
database in a temporary folder (``--keep DIR`` keeps it there instead): ``memory-pipeline ingest``
of each memory's folder, ``memory-pipeline index``, then ``memory-pipeline search --batch`` with
every question three times: the fused default, ``channels`` vector alone, keyword alone
(``limit`` 3). Model: the bundled local model (multilingual-e5-small), or ``--embed-url`` for an
OpenAI-compatible server on loopback. A row's answer counts as first when its first result's
title is the expected episode's; "in 3" when one of its first three is.

Nothing is tuned here: no setting is chosen on these questions (``benchmarks/fusion_loo.py``
chooses fusion's constants leave-one-memory-out over several kinds of memory, these included).

    python benchmarks/bench_small_memories.py                  # ~2-4 min on 2 cores (indexing 52 notes)
    python benchmarks/bench_small_memories.py --json small.json
    python benchmarks/bench_small_memories.py --quick          # one memory, its first 6 questions
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import yaml

DATA = Path(__file__).resolve().parent / "data" / "small_memories"
ROWS = {"fused default": None, "vector alone": "vector", "keyword alone": "keyword"}
LIMIT = 3
QUICK_QUESTIONS = 6


def titles_of(folder: Path) -> Counter:
    """Each episode title of a memory folder (front matter of its Markdown files, the lines of
    its JSONL files), counted."""
    titles: Counter = Counter()
    for path in sorted(folder.iterdir()):
        if path.suffix == ".md":
            text = path.read_text(encoding="utf-8")
            front = text.split("---\n", 2)[1] if text.startswith("---\n") else ""
            titles[str((yaml.safe_load(front) or {}).get("title"))] += 1
        elif path.suffix == ".jsonl":
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    titles[json.loads(line)["title"]] += 1
    return titles


def load(data: Path) -> tuple[dict[str, Path], list[dict]]:
    memories = {p.name: p for p in sorted(data.iterdir()) if p.is_dir()}
    questions = [
        json.loads(line)
        for line in (data / "questions.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    titles = {name: titles_of(folder) for name, folder in memories.items()}
    for q in questions:
        found = titles.get(q["memory"], Counter())[q["expect"]]
        if found != 1:
            raise SystemExit(
                f"expected episode {q['expect']!r} is in memory {q['memory']!r} {found} times "
                "(must be once)"
            )
    return memories, questions


def command(env: dict[str, str], *args: str, stdin: str | None = None) -> str:
    """``memory-pipeline ARGS`` with ``env``: its standard output (exit on failure)."""
    exe = Path(sys.executable).with_name("memory-pipeline")
    done = subprocess.run(
        [str(exe), *args], env=env, input=stdin, capture_output=True, text=True, timeout=3600
    )
    if done.returncode != 0:
        raise SystemExit(
            f"memory-pipeline {' '.join(args)} exited {done.returncode}:\n{done.stderr[-3000:]}"
        )
    return done.stdout


def environment(home: Path, args: argparse.Namespace) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MEMORY_PIPELINE_", "OLLAMA_", "DAGSTER_"))
    }
    env.update(
        {
            "MEMORY_PIPELINE_HOME": str(home),
            "MEMORY_PIPELINE_TELEMETRY": "off",
            # A loaded machine must not skip the vector channel (the default deadline is 5 s).
            "MEMORY_PIPELINE_QUERY_EMBED_TIMEOUT": "120",
        }
    )
    if args.embed_url:
        env.update(
            {
                "MEMORY_PIPELINE_EMBED_PROVIDER": "openai",
                "MEMORY_PIPELINE_EMBED_URL": args.embed_url,
                "MEMORY_PIPELINE_EMBED_MODEL": args.embed_model,
                "MEMORY_PIPELINE_EMBED_DIM": str(args.embed_dim),
            }
        )
    return env


def run(home: Path, memories: dict[str, Path], questions: list[dict], args) -> dict:
    env = environment(home, args)
    started = time.perf_counter()
    for folder in memories.values():
        command(env, "ingest", str(folder))
    ingest_s = time.perf_counter() - started
    started = time.perf_counter()
    indexed = json.loads(command(env, "index", "--json"))
    index_s = time.perf_counter() - started
    lines = [
        json.dumps(
            {
                "memory": q["memory"],
                "query": q["q"],
                "limit": LIMIT,
                **({"channels": channels} if channels else {}),
            },
            ensure_ascii=False,
        )
        for q in questions
        for channels in ROWS.values()
    ]
    started = time.perf_counter()
    out = command(env, "search", "--batch", "-", stdin="\n".join(lines) + "\n")
    search_s = time.perf_counter() - started
    documents = [json.loads(line) for line in out.splitlines() if line.strip()]
    if len(documents) != len(lines):
        raise SystemExit(f"search --batch answered {len(documents)} lines for {len(lines)}")
    answers = iter(documents)
    per_question = []
    for q in questions:
        rows = {}
        for row in ROWS:
            doc = next(answers)
            if "error" in doc:
                raise SystemExit(f"{q['memory']}: {q['q']!r}: {doc['error']}")
            titles = [r["title"] for r in doc["results"]]
            if ROWS[row] != "keyword" and doc["vector"]["status"] != "ok":
                raise SystemExit(f"{q['q']!r}: the vector channel was {doc['vector']}")
            rows[row] = titles
        per_question.append({**q, "titles": rows})
    return {
        "episodes": indexed["episodes"],
        "chunks": indexed["chunks"],
        "ingest_seconds": round(ingest_s, 1),
        "index_seconds": round(index_s, 1),
        "search_seconds": round(search_s, 1),
        "per_question": per_question,
    }


def score(per_question: list[dict]) -> dict:
    """Per memory and over all: how many questions each row put first and in its first 3."""
    groups: dict[str, list[dict]] = {"all": per_question}
    for q in per_question:
        groups.setdefault(q["memory"], []).append(q)
    out = {}
    for name, qs in groups.items():
        out[name] = {"questions": len(qs)}
        for row in ROWS:
            first = sum(q["titles"][row][:1] == [q["expect"]] for q in qs)
            in3 = sum(q["expect"] in q["titles"][row][:LIMIT] for q in qs)
            out[name][row] = {"first": first, f"in_{LIMIT}": in3, "share_first": first / len(qs)}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one memory, its first 6 questions")
    parser.add_argument("--json", type=Path, help="write every figure here")
    parser.add_argument("--keep", type=Path, help="build the database here and keep it")
    parser.add_argument(
        "--embed-url",
        help="an OpenAI-compatible embedding server on loopback instead of the bundled model",
    )
    parser.add_argument("--embed-model", default="loopback")
    parser.add_argument("--embed-dim", type=int, default=384)
    args = parser.parse_args(argv)
    memories, questions = load(DATA)
    if args.quick:
        first = next(iter(memories))
        memories = {first: memories[first]}
        questions = [q for q in questions if q["memory"] == first][:QUICK_QUESTIONS]
    print(
        f"{len(memories)} memories ({', '.join(memories)}), {len(questions)} questions",
        flush=True,
    )
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        figures = run(args.keep, memories, questions, args)
    else:
        with tempfile.TemporaryDirectory(prefix="small-memories-") as home:
            figures = run(Path(home), memories, questions, args)
    figures["scores"] = score(figures["per_question"])
    print(
        f"{figures['episodes']} episodes, {figures['chunks']} chunks; ingest "
        f"{figures['ingest_seconds']} s, index {figures['index_seconds']} s, "
        f"search {figures['search_seconds']} s"
    )
    print(f"\n{'memory':12} {'questions':>9}  " + "  ".join(f"{row:>17}" for row in ROWS))
    for name, s in figures["scores"].items():
        cells = "  ".join(
            f"{s[row]['first']:>3} first, {s[row][f'in_{LIMIT}']:>3} in {LIMIT}" for row in ROWS
        )
        print(f"{name:12} {s['questions']:>9}  {cells}")
    misses = [
        q for q in figures["per_question"] if q["titles"]["fused default"][:1] != [q["expect"]]
    ]
    if misses:
        print("\nfused default, not first:")
        for q in misses:
            got = q["titles"]["fused default"][:1] or ["(nothing)"]
            print(f"  {q['memory']}: {q['q']!r}: expected {q['expect']!r}, first {got[0]!r}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2, ensure_ascii=False) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
