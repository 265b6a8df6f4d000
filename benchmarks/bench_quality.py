#!/usr/bin/env python
"""Scoring labelled questions on a large memory: how long ``Memory.score_questions`` takes.

State: the kept build of ``bench_search_latency.py`` (``user_path``: ``--notes`` one-paragraph
notes stored with ``memory-pipeline ingest`` and indexed with ``memory-pipeline index`` against
``model_server.py --vectors words``). Questions: ``--questions`` of the memory's episodes, each
asked with five words drawn from its own body (seeded), saved through ``Memory.add_questions``
against that episode. Timing: one ``Memory.score_questions`` of the memory (the fused default
search and the channels' own lists per question, ``search.quality``), wall seconds in this one
process, nothing recorded; ``--runs`` runs, the median quoted.

    python benchmarks/bench_quality.py --home /tmp/lat100k                 # 100,000 notes
    python benchmarks/bench_quality.py --quick                             # 10,000 notes

Target: 1,000 questions on 100,000 chunks in under 60 s (exit 1 when missed).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from pathlib import Path

from bench_search_latency import add_kept_arguments, opened_kept  # sibling module (benchmarks/)
from user_path import MEMORY

TARGET_S = 60.0
WORDS = 5


def labelled(mem, count: int, seed: int) -> int:
    """``count`` questions of the memory's newest episodes, saved; the number saved."""
    rng = random.Random(seed)
    episodes = mem.episodes(MEMORY, limit=min(count, 1000))
    while len(episodes) < count:
        more = mem.episodes(MEMORY, limit=min(count - len(episodes), 1000), before=episodes[-1].id)
        if not more:
            break
        episodes += more
    items = []
    for e in episodes[:count]:
        words = [w.strip(".,").lower() for w in mem.episode(e.id)["body"].split()]
        items.append({"question": " ".join(rng.sample(words, WORDS)), "expect": e.id})
    report = mem.add_questions(items, memory=MEMORY, author="bench_quality")
    if report.rejections:
        raise SystemExit(f"questions rejected: {report.rejections[:3]}")
    return len(report.saved_ids)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_kept_arguments(p, required=False)
    p.add_argument("--questions", type=int, default=1000)
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--quick", action="store_true", help="10,000 notes, 200 questions")
    p.add_argument("--json", type=Path, help="write the figures here")
    args = p.parse_args(argv)
    if args.quick:
        args.notes, args.questions = min(args.notes, 10000), min(args.questions, 200)
    with opened_kept(args) as (mem, _server, build):
        saved = labelled(mem, args.questions, args.seed + 7)
        runs = []
        for _ in range(args.runs):
            [scored] = mem.score_questions(MEMORY, record=False)
            runs.append(scored)
            print(
                f"{scored.questions} questions on {args.notes:,} notes: {scored.seconds:.1f} s; "
                f"first@1 {scored.fused.first_at_1}, recall@8 {scored.fused.recall_at_8}",
                flush=True,
            )
        mem.remove_questions(MEMORY, [q.id for q in mem.questions(MEMORY)])
    seconds = statistics.median(r.seconds for r in runs)
    figures = {
        "notes": args.notes,
        "questions": saved,
        "runs": args.runs,
        "median_seconds": round(seconds, 2),
        "questions_per_second": round(saved / seconds, 1),
        "fused": runs[-1].fused.to_json(),
        "channels": {n: f.to_json() for n, f in runs[-1].channels.items()},
        "build": build,
    }
    print(json.dumps(figures, indent=2))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2), encoding="utf-8")
    target_applies = args.notes >= 100000 and saved >= 1000
    return 1 if target_applies and seconds >= TARGET_S else 0


if __name__ == "__main__":
    sys.exit(main())
