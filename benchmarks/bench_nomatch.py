#!/usr/bin/env python
"""Nothing relevant: does search say so when the memory cannot answer, and only then?

Questions: ``benchmarks/data/nomatch/questions.jsonl``, written by hand (its README says how),
questions that the sample corpus (memory ``mara``) and the three small memories
(``benchmarks/data/small_memories/``) cannot answer: other subjects, absent facts about the
memory's own people and things, other languages; and, as the answerable side, the labelled
questions of the sample corpus (``questions.json``) and of the small memories, each with the
title of the episode that answers it.

Everything goes through the product's commands on a fresh embedded database (``ingest``,
``index``, ``search --batch`` with the default policy, 8 results), once per embedding profile
(``--profiles``): ``bundled``, the bundled multilingual-e5-small; ``centred``, the same model's
vectors without their common direction behind a loopback OpenAI-style server
(``bench_calibration.centred_server``: unrelated texts near cosine 0.1-0.2 instead of 0.75-0.85,
another baseline); ``words``, a loopback server of word vectors (``model_server.WordVectors``, a
bag of words: it cannot tell questions asked in other words than their notes', which the small
memories' are). Each result's grade evidence comes back in its JSON (``evidence``); the cut-offs
of ``domain.grades`` are then chosen leave-one-memory-out: for each memory, the pair (vector
cut, keyword cut) that reports the most unanswerable questions of the other memories as no
match while grading at most 5% of their answerable questions' expected notes no match, under
every profile of the run at once (the same constants serve every model); the held-out memory
is scored with it.

Figures: unanswerable questions reported no match (no result graded better than none), also by
kind, and answerable questions whose expected note, among the results, was graded none (a
question whose note is not among the 8 results is counted apart, as missed); held out (the
folds) and as the product graded them with its shipped constants (in-sample: they were chosen
on all memories).

    python benchmarks/bench_nomatch.py                      # bundled and centred, ~30 min on 2 cores
    python benchmarks/bench_nomatch.py --keep DIR           # the databases kept: a rerun only searches
    python benchmarks/bench_nomatch.py --profiles words     # word vectors alone, ~3 min
    python benchmarks/bench_nomatch.py --quick --profiles words   # two memories, few questions
    python benchmarks/bench_nomatch.py --rows OLD.json      # choose again on an earlier run's rows
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
import tempfile
from pathlib import Path

import bench_small_memories as small  # sibling modules (benchmarks/): loader, commands
from bench_calibration import centred_server
from model_server import CapacityServer

from memory_pipeline.cli.commands import SAMPLE_CORPUS, SAMPLE_EPISODES
from memory_pipeline.domain import grades

DATA = Path(__file__).resolve().parent / "data" / "nomatch"
LIMIT = 8
TARGET = 0.05  # at most this share of answerable questions' notes graded none (training)
VECTOR_GRID = [round(-0.5 + 0.05 * i, 2) for i in range(41)] + [math.inf]  # -0.5 .. 1.5, off
KEYWORD_GRID = [round(0.2 + 0.05 * i, 2) for i in range(17)] + [math.inf]  # 0.2 .. 1.0, off
QUICK_MEMORIES = ("owen", "tally-team")
QUICK_QUESTIONS = 5
PROFILES = ("bundled", "centred", "words")
KINDS = ("unrelated", "absent", "language")


def load_questions() -> tuple[dict[str, list[Path]], list[dict]]:
    """The memories (name -> paths to ingest) and every question, answerable or not."""
    folders, labelled = small.load(small.DATA)
    memories = {"mara": list(SAMPLE_EPISODES), **{n: [f] for n, f in folders.items()}}
    sample = json.loads((SAMPLE_CORPUS / "questions.json").read_text(encoding="utf-8"))
    questions = [{"memory": "mara", "q": q["query"], "expect": q["expect_title"]} for q in sample]
    questions += [{"memory": q["memory"], "q": q["q"], "expect": q["expect"]} for q in labelled]
    for line in (DATA / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            q = json.loads(line)
            if q["memory"] not in memories:
                raise SystemExit(f"unanswerable question for unknown memory {q['memory']!r}")
            questions.append(
                {"memory": q["memory"], "q": q["q"], "expect": None, "kind": q["kind"]}
            )
    return memories, questions


def quick(memories: dict, questions: list[dict]) -> tuple[dict, list[dict]]:
    kept = {name: memories[name] for name in QUICK_MEMORIES}
    out = []
    for name, answerable in itertools.product(QUICK_MEMORIES, (True, False)):
        same = [
            q for q in questions if q["memory"] == name and (q["expect"] is not None) == answerable
        ]
        out += same[:QUICK_QUESTIONS]
    return kept, out


def searched(env: dict, memories: dict, questions: list[dict]) -> list[dict]:
    """Ingest, index and search every question through the commands; one row a question with
    the response's match and each result's title, grade and evidence."""
    for paths in memories.values():
        for path in paths:
            small.command(env, "ingest", str(path))
    small.command(env, "index", "--json")
    lines = [
        json.dumps({"memory": q["memory"], "query": q["q"], "limit": LIMIT}, ensure_ascii=False)
        for q in questions
    ]
    out = small.command(env, "search", "--batch", "-", stdin="\n".join(lines) + "\n")
    documents = [json.loads(line) for line in out.splitlines() if line.strip()]
    if len(documents) != len(questions):
        raise SystemExit(f"search --batch answered {len(documents)} lines for {len(questions)}")
    rows = []
    for q, doc in zip(questions, documents):
        if "error" in doc or doc["vector"]["status"] != "ok":
            raise SystemExit(f"{q['memory']}: {q['q']!r}: {doc.get('error') or doc['vector']}")
        results = [
            {"title": r["title"], "grade": r["grade"], "evidence": r["evidence"]}
            for r in doc["results"]
        ]
        rows.append({**q, "match": doc["match"], "results": results})
    return rows


def graded(evidence: dict | None, cuts: grades.Cuts) -> str:
    if evidence is None:
        return grades.NONE
    return grades.grade(
        grades.Evidence(evidence["vector"], evidence["keyword"], evidence["date"]), cuts
    )


def rates(rows: list[dict], cuts: grades.Cuts | None) -> dict:
    """Unanswerable questions reported none; answerable ones whose expected note was graded
    none (``cuts`` None: the grades the product gave)."""

    def grade_of(result: dict) -> str:
        return result["grade"] if cuts is None else graded(result["evidence"], cuts)

    unanswerable = [r for r in rows if r["expect"] is None]
    answerable = [r for r in rows if r["expect"] is not None]
    reported = [
        grades.best([grade_of(x) for x in r["results"]]) == grades.NONE for r in unanswerable
    ]
    by_kind = {}
    for kind in KINDS:
        of_kind = [said for said, r in zip(reported, unanswerable) if r.get("kind") == kind]
        by_kind.update({f"none_{kind}": sum(of_kind), f"unanswerable_{kind}": len(of_kind)})
    found, missed, note_none = 0, 0, 0
    for r in answerable:
        notes = [grade_of(x) for x in r["results"] if x["title"] == r["expect"]]
        if not notes:
            missed += 1
            continue
        found += 1
        note_none += grades.best(notes) == grades.NONE
    return {
        "unanswerable": len(unanswerable),
        "reported_none": sum(reported),
        "answerable_found": found,
        "answerable_missed": missed,
        "expected_graded_none": note_none,
        **by_kind,
    }


def share(part: int, whole: int) -> float:
    return part / whole if whole else 0.0


def choose(by_profile: dict[str, list[dict]]) -> grades.Cuts:
    """The cut pair with the best worst-profile share of unanswerable questions reported none,
    among those that grade at most TARGET of every profile's expected notes none."""
    best_key, best_cuts = None, grades.Cuts()
    for vector, keyword in itertools.product(VECTOR_GRID, KEYWORD_GRID):
        cuts = grades.Cuts(vector=vector, keyword=keyword)
        figures = [rates(rows, cuts) for rows in by_profile.values()]
        worst_note = max(share(f["expected_graded_none"], f["answerable_found"]) for f in figures)
        if worst_note > TARGET:
            continue
        reported = [share(f["reported_none"], f["unanswerable"]) for f in figures]
        key = (min(reported), sum(reported), -worst_note, -vector, -keyword)
        if best_key is None or key > best_key:
            best_key, best_cuts = key, cuts
    return best_cuts


def leave_one_out(by_profile: dict[str, list[dict]]) -> tuple[dict, list[dict]]:
    """Each memory scored with the cuts chosen on the others; the held-out figures summed per
    profile, and each fold's choice."""
    memories = sorted({r["memory"] for rows in by_profile.values() for r in rows})
    totals: dict[str, dict] = {}
    folds = []
    for held in memories:
        training = {p: [r for r in rows if r["memory"] != held] for p, rows in by_profile.items()}
        cuts = choose(training)
        folds.append(
            {
                "held_out": held,
                "vector_cut": cuts.vector,
                "keyword_cut": cuts.keyword,
            }
        )
        for profile, rows in by_profile.items():
            figures = rates([r for r in rows if r["memory"] == held], cuts)
            total = totals.setdefault(profile, dict.fromkeys(figures, 0))
            for name, value in figures.items():
                total[name] += value
    return totals, folds


def line(name: str, f: dict) -> str:
    kinds = ", ".join(f"{k} {f[f'none_{k}']}/{f[f'unanswerable_{k}']}" for k in KINDS)
    return (
        f"{name:34} unanswerable reported none {f['reported_none']:>3}/{f['unanswerable']:<3} "
        f"({share(f['reported_none'], f['unanswerable']):6.1%});  expected notes graded none "
        f"{f['expected_graded_none']:>3}/{f['answerable_found']:<3} "
        f"({share(f['expected_graded_none'], f['answerable_found']):5.1%}), "
        f"{f['answerable_missed']} not in the {LIMIT} results\n{'':34} reported none by kind: {kinds}"
    )


def run_profile(
    profile: str, memories: dict, questions: list[dict], keep: Path | None
) -> list[dict]:
    """``profile``'s rows, on a fresh database (``keep``: in ``keep/profile``, kept; a second run
    there ingests and indexes nothing new and only searches)."""
    args = argparse.Namespace(embed_url=None, embed_model="loopback", embed_dim=384)
    with tempfile.TemporaryDirectory(prefix="nomatch-") as scratch:
        home = Path(scratch) if keep is None else keep / profile
        home.mkdir(parents=True, exist_ok=True)
        if profile == "bundled":
            return searched(small.environment(home, args), memories, questions)
        with (
            centred_server()
            if profile == "centred"
            else CapacityServer(slots=None, latency_s=0, batch=16, dim=384, vectors="words")
        ) as server:
            args.embed_url, args.embed_model = server.url, profile
            return searched(small.environment(home, args), memories, questions)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--profiles", default="bundled,centred", help=f"some of {', '.join(PROFILES)}"
    )
    parser.add_argument("--quick", action="store_true", help="two memories, a few questions")
    parser.add_argument("--json", type=Path, help="write every row and figure here")
    parser.add_argument("--rows", type=Path, help="reuse the rows of an earlier --json run")
    parser.add_argument("--keep", type=Path, help="build the databases here and keep them")
    args = parser.parse_args(argv)
    profiles = [p.strip() for p in args.profiles.split(",") if p.strip()]
    if not profiles or any(p not in PROFILES for p in profiles):
        parser.error(f"--profiles: choose among {', '.join(PROFILES)}")
    memories, questions = load_questions()
    if args.quick:
        memories, questions = quick(memories, questions)
    unanswerable = sum(q["expect"] is None for q in questions)
    print(
        f"{len(memories)} memories, {len(questions) - unanswerable} answerable and "
        f"{unanswerable} unanswerable questions; profiles {', '.join(profiles)}",
        flush=True,
    )
    if args.rows:
        by_profile = json.loads(args.rows.read_text(encoding="utf-8"))["rows"]
        kinds = {(q["memory"], q["q"]): q.get("kind") for q in questions}
        for rows in by_profile.values():
            for r in rows:
                r["kind"] = kinds.get((r["memory"], r["q"]))
    else:
        by_profile = {p: run_profile(p, memories, questions, args.keep) for p in profiles}
    totals, folds = leave_one_out(by_profile)
    print("\nheld out (cut-offs chosen on the other memories):")
    for profile, figures in totals.items():
        print(line(profile, figures))
    for fold in folds:
        print(f"  fold {fold['held_out']:12} vector cut {fold['vector_cut']:5}  keyword cut "
              f"{fold['keyword_cut']}")  # fmt: skip
    chosen = choose(by_profile)
    print(f"\nchosen on all memories: vector cut {chosen.vector}, keyword cut {chosen.keyword}")
    print(f"as the product graded (vector cut {grades.VECTOR_CUT}, "
          f"keyword cut {grades.KEYWORD_CUT}; in-sample):")  # fmt: skip
    shipped = {p: rates(rows, None) for p, rows in by_profile.items()}
    for profile, figures in shipped.items():
        print(line(profile, figures))
    if args.json:
        document = {
            "held_out": totals,
            "folds": folds,
            "chosen": {"vector_cut": chosen.vector, "keyword_cut": chosen.keyword},
            "shipped": shipped,
            "rows": by_profile,
        }
        args.json.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
