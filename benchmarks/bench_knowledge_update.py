#!/usr/bin/env python
"""Facts that change: does search put the latest note of a subject first for a question asked of
today, and the note of the time for a question that names a time or an earlier state?

Data (``benchmarks/data/knowledge_update/``, written by hand for this benchmark; its README says
how): three memories in different voices (``maya``: a person's journal; ``kestrel``: a team's
decision log; ``berger``: a family's notes in German), each ``<memory>.jsonl`` (episodes with an
``id`` and a unique title), ``<memory>.subjects.json`` (the notes telling each changing subject,
oldest first) and ``<memory>.questions.json`` (``q``, ``expect``: a note's id, ``tense``:
``present`` expects the latest note of its subject, ``past`` an older one). The script refuses to
run when a question's note is missing, or its tense disagrees with the subjects.

Everything goes through the product's commands, as a user runs them: ``memory-pipeline ingest``
of each memory's file, ``memory-pipeline index``, then ``memory-pipeline search --batch`` with
every question once fused (the default policy) and once per channel alone (``channels``),
``limit`` 3. Model: the bundled local model (multilingual-e5-small), or ``--embed-url`` for an
OpenAI-compatible server on loopback. ``--home DIR`` builds the database there and reuses it on
the next run (ingest and index of stored, indexed notes do nothing), unless the data changed.

Scores, per memory and over all, for each row: ``present``, the share of present-tense questions
whose first result is the latest note; ``past``, the share of past questions whose first result
is the expected older note; ``in 3``, the share of all questions with the expected note among
the first three. Nothing is tuned here (``benchmarks/fusion_loo.py`` chooses constants
leave-one-memory-out).

    python benchmarks/bench_knowledge_update.py --home /tmp/ku-home   # ~4-8 min first run on 2 cores
    python benchmarks/bench_knowledge_update.py --json ku.json
    python benchmarks/bench_knowledge_update.py --quick                # one memory, 6 questions
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench_small_memories import command, environment  # sibling module (benchmarks/)

DATA = Path(__file__).resolve().parent / "data" / "knowledge_update"
ROWS = {
    "fused default": None,
    "vector alone": "vector",
    "keyword alone": "keyword",
    "graph alone": "graph",
    "date alone": "date",
}
LIMIT = 3
QUICK_QUESTIONS = 6
TENSES = ("present", "past")
FINGERPRINT = "knowledge-update.json"


@dataclass(frozen=True)
class MemoryData:
    """One memory's notes (id -> title), its subjects and its questions."""

    name: str
    path: Path
    titles: dict[str, str]
    subjects: dict[str, list[str]]
    questions: list[dict]


def read_memory(path: Path) -> MemoryData:
    """``path`` (``<memory>.jsonl``) and the subjects and questions beside it, checked."""
    name = path.name.removesuffix(".jsonl")
    notes = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]
    titles = {note["id"]: note["title"] for note in notes}
    if len(titles) != len(notes) or len(set(titles.values())) != len(notes):
        raise SystemExit(f"{path.name}: every note needs its own id and its own title")
    if {note["memory"] for note in notes} != {name}:
        raise SystemExit(f"{path.name}: every note must be of memory {name!r}")
    subjects = json.loads((path.parent / f"{name}.subjects.json").read_text("utf-8"))
    questions = json.loads((path.parent / f"{name}.questions.json").read_text("utf-8"))
    latest = {ids[-1] for ids in subjects.values()}
    told = {i for ids in subjects.values() for i in ids}
    for q in questions:
        where = f"{name}.questions.json: {q['q']!r}"
        if q["expect"] not in titles:
            raise SystemExit(f"{where}: no note {q['expect']!r}")
        if q["tense"] not in TENSES:
            raise SystemExit(f"{where}: tense must be one of {TENSES}")
        if q["tense"] == "present" and q["expect"] not in latest:
            raise SystemExit(f"{where}: a present question must expect its subject's latest note")
        if q["tense"] == "past" and (q["expect"] not in told or q["expect"] in latest):
            raise SystemExit(f"{where}: a past question must expect an older note of a subject")
    return MemoryData(name, path, titles, subjects, questions)


def load(data: Path = DATA) -> list[MemoryData]:
    return [read_memory(path) for path in sorted(data.glob("*.jsonl"))]


def fingerprint(memories: list[MemoryData], args: argparse.Namespace) -> str:
    digest = hashlib.sha256()
    for memory in memories:
        digest.update(memory.path.read_bytes())
    digest.update(f"{args.embed_url}|{args.embed_model}|{args.embed_dim}".encode())
    return digest.hexdigest()


def build(home: Path, memories: list[MemoryData], args: argparse.Namespace) -> dict:
    """Ingest and index the memories into ``home`` (a reused home must hold the same data)."""
    stamp = home / FINGERPRINT
    wanted = fingerprint(memories, args)
    if stamp.exists() and json.loads(stamp.read_text())["fingerprint"] != wanted:
        raise SystemExit(
            f"{home} holds another version of the data or another model; remove it or pick "
            "another --home"
        )
    env = environment(home, args)
    started = time.perf_counter()
    for memory in memories:
        command(env, "ingest", str(memory.path))
    ingest_s = time.perf_counter() - started
    started = time.perf_counter()
    indexed = json.loads(command(env, "index", "--json"))
    index_s = time.perf_counter() - started
    stamp.write_text(json.dumps({"fingerprint": wanted}) + "\n")
    return {
        "episodes": indexed["episodes"],
        "chunks": indexed["chunks"],
        "ingest_seconds": round(ingest_s, 1),
        "index_seconds": round(index_s, 1),
    }


def search_all(home: Path, memories: list[MemoryData], args: argparse.Namespace) -> list[dict]:
    """Every question through ``search --batch``, once per row: each question with the ids of
    the first ``LIMIT`` results of each row."""
    env = environment(home, args)
    asked = [(m, q) for m in memories for q in m.questions]
    lines = [
        json.dumps(
            {
                "memory": m.name,
                "query": q["q"],
                "limit": LIMIT,
                **({"channels": channels} if channels else {}),
            },
            ensure_ascii=False,
        )
        for m, q in asked
        for channels in ROWS.values()
    ]
    out = command(env, "search", "--batch", "-", stdin="\n".join(lines) + "\n")
    documents = [json.loads(line) for line in out.splitlines() if line.strip()]
    if len(documents) != len(lines):
        raise SystemExit(f"search --batch answered {len(documents)} lines for {len(lines)}")
    answers = iter(documents)
    per_question = []
    for m, q in asked:
        ids = {title: i for i, title in m.titles.items()}
        rows = {}
        for row, channels in ROWS.items():
            doc = next(answers)
            if "error" in doc:
                raise SystemExit(f"{m.name}: {q['q']!r}: {doc['error']}")
            if channels in (None, "vector") and doc["vector"]["status"] != "ok":
                raise SystemExit(f"{q['q']!r}: the vector channel was {doc['vector']}")
            rows[row] = [ids.get(r["title"], r["title"]) for r in doc["results"]]
        per_question.append({"memory": m.name, **q, "results": rows})
    return per_question


def score(per_question: list[dict]) -> dict:
    """Per memory and over all, for each row: present latest-first, past right-first and
    expected-in-3, as counts and shares."""
    groups: dict[str, list[dict]] = {}
    for q in per_question:
        groups.setdefault(q["memory"], []).append(q)
    groups["all"] = per_question
    out: dict[str, dict] = {}
    for name, qs in groups.items():
        counts = {t: sum(q["tense"] == t for q in qs) for t in TENSES}
        out[name] = {"questions": len(qs), **counts}
        for row in ROWS:
            first = {
                t: sum(q["results"][row][:1] == [q["expect"]] for q in qs if q["tense"] == t)
                for t in TENSES
            }
            in3 = sum(q["expect"] in q["results"][row][:LIMIT] for q in qs)
            out[name][row] = {
                **{f"{t}_first": first[t] for t in TENSES},
                f"in_{LIMIT}": in3,
                **{f"{t}_share": share(first[t], counts[t]) for t in TENSES},
                f"in_{LIMIT}_share": share(in3, len(qs)),
            }
    return out


def share(count: int, total: int) -> float | None:
    return round(count / total, 3) if total else None


def percent(value: float | None) -> str:
    return "  -  " if value is None else f"{100 * value:5.1f}"


def report(figures: dict) -> None:
    print(
        f"{figures['episodes']} episodes, {figures['chunks']} chunks indexed by this run; ingest "
        f"{figures['ingest_seconds']} s, index {figures['index_seconds']} s, "
        f"search {figures['search_seconds']} s"
    )
    print("\n% first: present = latest note first, past = the right older note first; in 3: any")
    print(f"{'memory':9} {'row':14} {'present':>8} {'past':>6} {'in 3':>6}")
    for name, s in figures["scores"].items():
        for row in ROWS:
            r = s[row]
            print(
                f"{name:9} {row:14} {percent(r['present_share']):>8} "
                f"{percent(r['past_share']):>6} {percent(r[f'in_{LIMIT}_share']):>6}"
            )
        print(f"{'':9} ({s['present']} present, {s['past']} past questions)")
    misses = [
        q for q in figures["per_question"] if q["results"]["fused default"][:1] != [q["expect"]]
    ]
    if misses:
        print("\nfused default, not first:")
        for q in misses:
            got = (q["results"]["fused default"] or ["(nothing)"])[0]
            print(f"  {q['memory']} [{q['tense']}] {q['q']!r}: expected {q['expect']}, first {got}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one memory, 6 of its questions")
    parser.add_argument("--json", type=Path, help="write every figure here")
    parser.add_argument("--home", type=Path, help="build the database here and reuse it")
    parser.add_argument(
        "--embed-url",
        help="an OpenAI-compatible embedding server on loopback instead of the bundled model",
    )
    parser.add_argument("--embed-model", default="loopback")
    parser.add_argument("--embed-dim", type=int, default=384)
    args = parser.parse_args(argv)
    memories = load()
    if args.quick:
        first = memories[0]
        picked = [
            q
            for t in TENSES
            for q in [q for q in first.questions if q["tense"] == t][: QUICK_QUESTIONS // 2]
        ]
        memories = [MemoryData(first.name, first.path, first.titles, first.subjects, picked)]
    total = sum(len(m.questions) for m in memories)
    print(f"{len(memories)} memories ({', '.join(m.name for m in memories)}), {total} questions")
    with tempfile.TemporaryDirectory(prefix="knowledge-update-") as scratch:
        home = args.home or Path(scratch)
        home.mkdir(parents=True, exist_ok=True)
        figures = build(home, memories, args)
        started = time.perf_counter()
        figures["per_question"] = search_all(home, memories, args)
        figures["search_seconds"] = round(time.perf_counter() - started, 1)
    figures["scores"] = score(figures["per_question"])
    report(figures)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2, ensure_ascii=False) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
