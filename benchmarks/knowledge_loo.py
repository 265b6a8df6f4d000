#!/usr/bin/env python
"""The constants of ``domain.supersession`` (what is true now) chosen leave-one-memory-out over
the knowledge-update memories, the small memories and the sample corpus together.

Each labelled question is searched once through the product's channels and fusion, as
``memory-pipeline search`` runs them (``SearchService``: the channel runner, then its fusion),
on homes the benchmarks built with the product's commands (``bench_knowledge_update.py --home``,
``bench_small_memories.py --keep``, and the sample corpus ingested and indexed here); the fused
order's first 10 candidates, their times and their vector-channel scores are kept. The
supersession step is then replayed on them (``supersession.in_time``, the product's function) for
every setting of the grid (``supersession.Grouping``: band, score share, same subject, depth,
margin). The same-subject cut is a position between the unrelated and paraphrase medians of the
home's calibration (``supersession.same_subject_cut``), so the chosen constant follows the
model; the grid's positions are the cosines 0.86-0.92 under the bundled model's calibration.
Every memory is held out in turn and scored with the setting whose objective on the others is
best (the share of questions first, each memory weighed alike) among those that put none of the
others below fusion alone; fusion alone (no step) is reported beside it, and the folds' most
common setting is the product's.

    python benchmarks/knowledge_loo.py --ku-home DIR --small-home DIR --sample-home DIR --cache DIR
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench_knowledge_update  # noqa: E402  (sibling modules)
import bench_small_memories  # noqa: E402

BANDS = (0.03, 0.05, 1.0)
SCORE_SHARES = (0.0, 0.3, 0.5, 0.6, 0.7, 0.8)
SAME_SUBJECT_POSITIONS = (0.385, 0.44, 0.5, 0.55, 0.61, 0.72)
DEPTHS = (3, 5, 8)
MARGINS = (0.0, 0.03)
KEEP = 10
NOW = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)


def _service(home: Path):
    from memory_pipeline.config import EmbedSettings
    from memory_pipeline.domain.policies import default_policies_path, load_policies
    from memory_pipeline.embedders.factory import build_embedder
    from memory_pipeline.search.service import SearchService
    from memory_pipeline.storage.database import Database

    db = Database.open(home=home, environ={})
    embedder = build_embedder(
        EmbedSettings.from_env({"MEMORY_PIPELINE_QUERY_EMBED_TIMEOUT": "120"})
    )
    policies = load_policies(default_policies_path())
    service = SearchService(db, policies, embedder=embedder, record=False, clock=lambda: NOW)
    return db, service, policies["default"]


def fused_items(home: Path, kind: str, questions: list[dict]) -> list[dict]:
    """Per question (``memory``, ``q``, ``expect``: a title, ``tense`` or None): the fused
    order's first candidates with title, time and vector score, as search fuses them."""
    from memory_pipeline.search.service import SearchService
    from memory_pipeline.storage import vector_store
    from memory_pipeline.storage.search_store import Filters

    db, service, policy = _service(home)
    items = []
    try:
        for q in questions:
            cq = service._channel_query(q["memory"], q["q"], Filters(), with_rows=True)
            found = service.channels.run(
                cq, policy.channels, contested_beliefs=policy.contested_beliefs
            )
            fused = SearchService._fuse(found, policy, NOW)
            vector = dict(found.ranked.get("vector", []))
            top = [f.key for f in fused if f.key in found.rows][:KEEP]
            score = {f.key: f.score for f in fused}
            with db.connection() as conn:  # the profile the vector channel read, as in_time
                alike = vector_store.cosines_to(conn, found.profile, q["memory"], top[0], top[1:])
            items.append(
                {
                    **q,
                    "kind": kind,
                    "order": top,
                    "title": {k: found.rows[k].title for k in top},
                    "written": {k: found.rows[k].occurred_at.isoformat() for k in top},
                    "closeness": {k: vector[k] for k in top if k in vector},
                    "score": {k: score[k] for k in top},
                    "likeness": alike,
                    "medians": dict(found.calibration.medians or {})
                    if found.calibration is not None
                    else None,
                }
            )
    finally:
        db.close()
    return items


def ku_questions() -> list[dict]:
    return [
        {"memory": m.name, "q": q["q"], "expect": m.titles[q["expect"]], "tense": q["tense"]}
        for m in bench_knowledge_update.load()
        for q in m.questions
    ]


def small_questions() -> list[dict]:
    _, questions = bench_small_memories.load(bench_small_memories.DATA)
    return [{"memory": q["memory"], "q": q["q"], "expect": q["expect"]} for q in questions]


def sample_questions(home: Path) -> list[dict]:
    from memory_pipeline.cli.commands import SAMPLE_CORPUS, SAMPLE_EPISODES

    if not (home / "pgdata").exists():
        exe = Path(sys.executable).with_name("memory-pipeline")
        env = bench_small_memories.environment(home, argparse.Namespace(embed_url=None))
        for path in SAMPLE_EPISODES:
            subprocess.run([str(exe), "ingest", str(path)], env=env, check=True)
        subprocess.run([str(exe), "index"], env=env, check=True, capture_output=True)
    raw = json.loads((SAMPLE_CORPUS / "questions.json").read_text(encoding="utf-8"))
    return [{"memory": "mara", "q": q["query"], "expect": q["expect_title"]} for q in raw]


def load_items(args: argparse.Namespace) -> list[dict]:
    path = args.cache / "knowledge_items.json"
    if path.is_file():
        return json.loads(path.read_text(encoding="utf-8"))
    if not (args.ku_home / "pgdata").exists():
        bench_knowledge_update.main(["--home", str(args.ku_home)])
    if not (args.small_home / "pgdata").exists():
        bench_small_memories.main(["--keep", str(args.small_home)])
    items = (
        fused_items(args.ku_home, "knowledge", ku_questions())
        + fused_items(args.small_home, "small", small_questions())
        + fused_items(args.sample_home, "sample", sample_questions(args.sample_home))
    )
    args.cache.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(items, ensure_ascii=False), encoding="utf-8")
    return items


def replay(item: dict, setting: tuple | None) -> list[str]:
    """The item's titles in the order search would show them under ``setting`` (band, score
    share, same-subject position, depth, margin; None: fusion alone)."""
    from memory_pipeline.domain import supersession

    order = item["order"]
    if setting is not None:
        cut = supersession.same_subject_cut(item.get("medians"), setting[2])
        setting = (*setting[:2], cut, *setting[3:])
        order = supersession.in_time(
            item["q"],
            order,
            written={k: dt.datetime.fromisoformat(v) for k, v in item["written"].items()},
            closeness=item["closeness"],
            scores=item["score"],
            likeness=lambda first, others: item["likeness"],
            grouping=supersession.Grouping(*setting),
        )
    return [item["title"][k] for k in order]


class Scores:
    """Each memory's count of questions first under a setting, computed once."""

    def __init__(self, groups: dict[str, list[dict]]):
        self.groups = groups
        self._firsts: dict[tuple, int] = {}

    def firsts(self, name: str, setting) -> int:
        if (name, setting) not in self._firsts:
            self._firsts[(name, setting)] = sum(
                replay(it, setting)[:1] == [it["expect"]] for it in self.groups[name]
            )
        return self._firsts[(name, setting)]

    def objective(self, names: list[str], setting) -> float:
        return sum(self.firsts(n, setting) / len(self.groups[n]) for n in names) / len(names)

    def choose(self, train: list[str], grid: list) -> tuple | None:
        """The best setting on ``train`` among those that put no training memory below fusion
        alone (None, fusion alone, among them): a step that costs one kind of memory what it
        gains on another is not taken."""
        allowed = [s for s in grid if all(self.firsts(n, s) >= self.firsts(n, None) for n in train)]
        return max(allowed, key=lambda s: (self.objective(train, s), s is None))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ku-home", type=Path, required=True)
    parser.add_argument("--small-home", type=Path, required=True)
    parser.add_argument("--sample-home", type=Path, required=True)
    parser.add_argument("--cache", type=Path, required=True)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    groups: dict[str, list[dict]] = {}
    for it in load_items(args):
        groups.setdefault(it["memory"], []).append(it)
    scores = Scores(groups)
    grid = [
        None,
        *itertools.product(BANDS, SCORE_SHARES, SAME_SUBJECT_POSITIONS, DEPTHS, MARGINS),
    ]
    folds = {name: scores.choose([n for n in groups if n != name], grid) for name in groups}
    print(f"{'memory':12} {'n':>3} {'fusion':>7} {'held out':>9}  setting")
    out: dict = {"folds": folds, "held_out": {}, "fusion": {}}
    for name, its in groups.items():
        out["fusion"][name] = scores.firsts(name, None)
        out["held_out"][name] = scores.firsts(name, folds[name])
        print(
            f"{name:12} {len(its):>3} {out['fusion'][name]:>7} {out['held_out'][name]:>9}  "
            f"{folds[name]}"
        )
    common = Counter(folds.values()).most_common(1)[0][0]
    out["common"] = common
    out["common_in_sample"] = {n: scores.firsts(n, common) for n in groups}
    print(f"the folds' most common setting {common}: in-sample {out['common_in_sample']}")
    _report_tenses(groups, folds, out)
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    return 0


def _report_tenses(groups, folds, out) -> None:
    """For the knowledge-update memories: present latest-first, past right-first, in 3."""
    rows = {"present": [0, 0, 0], "past": [0, 0, 0]}
    in3 = [0, 0, 0]
    for name, its in groups.items():
        for it in its:
            if "tense" not in it:
                continue
            base, kept = replay(it, None), replay(it, folds[name])
            row = rows[it["tense"]]
            row[0] += 1
            row[1] += base[:1] == [it["expect"]]
            row[2] += kept[:1] == [it["expect"]]
            in3[0] += 1
            in3[1] += it["expect"] in base[:3]
            in3[2] += it["expect"] in kept[:3]
    for tense, (n, base, kept) in rows.items():
        print(f"knowledge {tense:8} {n:>3} questions: fusion {base} first, held out {kept}")
    print(f"knowledge in 3      {in3[0]:>3} questions: fusion {in3[1]}, held out {in3[2]}")
    out["knowledge"] = {"present": rows["present"], "past": rows["past"], "in_3": in3}


if __name__ == "__main__":
    sys.exit(main())
