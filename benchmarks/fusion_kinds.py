#!/usr/bin/env python
"""Fusion against the best single channel on every kind of memory, held out by kind: per-query
channel weights from the vector channel's own evidence, chosen leave-one-kind-out.

The kinds are LoCoMo's five dev conversations, the sample corpus (28 labelled questions), the
small memories (66) and the knowledge-update memories (``bench_knowledge_update.py``'s data,
labelled by the note each question expects). Every question's channel candidates and raw scores
come from the product (``fusion_loo.py``'s caches, which this script reuses; the
knowledge-update ones are read the same way from a home ``bench_knowledge_update.py --home``
built). Fusion is replayed as ``search`` fuses and sews (``fusion_loo.fused_passages``: the
keyword channel gated by the shipped ``domain.evidence`` scale, graph 0, date 1.5, 8 passages),
with the vector channel's weight set per query:

    w_vector = 1 + boost * lead      (only while the keyword channel's strength < cut)

``lead`` is the vector channel's best cosine's lead over its runner-up, in units of the bundled
model's calibration span (a question's cosine to its answer minus to an unrelated passage),
placed between a floor and floor + width and clipped to [0, 1]; the keyword channel's strength is
the share of its weight its best match earns on its evidence scale (``domain.evidence``; 0 with
no match). A vector channel that clearly singles one candidate out then outweighs a keyword
channel without real evidence; one whose first candidates are alike, or facing a keyword match
that covers the question, keeps today's weight.

Each kind is held out in turn: among the settings that leave the fewest training kinds below
their best single channel or below today's fusion (first results for the labelled kinds, mean
recall@1/3/5/8 for LoCoMo), the one with the best objective
(``fusion_loo.objective``, kinds weighed alike) is scored on the held-out kind. The last
``what is true now`` step (``search/in_time.py``) is not replayed: the figures are fusion's.

    python benchmarks/fusion_kinds.py --locomo-home DIR --cache DIR --ku-home DIR --json out.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench_knowledge_update  # noqa: E402  (sibling modules)
import fusion_loo  # noqa: E402

from memory_pipeline.domain import evidence, fusion  # noqa: E402
from memory_pipeline.domain.calibration import Calibration  # noqa: E402

BOOSTS = (1.0, 2.0, 4.0, 8.0)
LEAD_FLOORS = (0.03, 0.05, 0.08)
LEAD_WIDTHS = (0.03, 0.06, 0.1)
KEYWORD_CUTS = (0.5, 0.9, None)
TODAY = (0.0, 0.0, 1.0, None)


def ku_items(home: Path, cache: Path) -> list[dict]:
    """The knowledge-update memories' questions (``bench_knowledge_update.py --home home``)."""
    path = cache / "ku_items.json"
    if path.is_file():
        return json.loads(path.read_text(encoding="utf-8"))
    questions = [
        {"memory": m.name, "q": q["q"], "expect": m.titles[q["expect"]]}
        for m in bench_knowledge_update.load()
        for q in m.questions
    ]
    db, _, service = fusion_loo._service(home)
    try:
        items = fusion_loo.labelled_items(service, "ku", questions)
    finally:
        db.close()
    path.write_text(json.dumps(items), encoding="utf-8")
    return items


def anchors_items(home: Path, cache: Path) -> list[dict]:
    """``bench_anchors.py``'s documents (heading anchors on) indexed in ``home``; a question is
    answered first when the first fused chunk holds its answer phrase (chunks, unsewn, as that
    benchmark scores)."""
    path = cache / "anchors_items.json"
    if path.is_file():
        return json.loads(path.read_text(encoding="utf-8"))
    import bench_anchors

    from memory_pipeline.indexing.until_done import index_pending
    from memory_pipeline.ingest import ingest_paths
    from memory_pipeline.storage import search_store

    documents, questions = bench_anchors.load(bench_anchors.DATA)
    db, embedder, service = fusion_loo._service(home)
    try:
        ingest_paths(db, documents, memory="anchors")
        index_pending(db, embedder)
        asked = [{"memory": "anchors", "q": q["q"], "expect": q["answer"]} for q in questions]
        items = fusion_loo.labelled_items(service, "anchors", asked)
        for item in items:
            with db.connection() as conn:
                rows = search_store.chunk_rows(conn, "anchors", list(item["candidates"]))
            for key, cand in item["candidates"].items():
                cand["answers"] = item["expect"] in rows[key].text
    finally:
        db.close()
    path.write_text(json.dumps(items), encoding="utf-8")
    return items


def score(item: dict, weights: dict, scales: dict, channels=fusion_loo.CHANNELS) -> dict:
    """``fusion_loo.score_item`` of the sewn passages; for the documents, whether the first
    fused chunk answers."""
    if item["kind"] != "anchors":
        sewn = fusion_loo.fused_passages(item, weights, scales, fusion_loo._now(item), channels)
        return fusion_loo.score_item(item, sewn)
    cands = item["candidates"]
    facts = {
        key: fusion.ChunkFacts(c["salience"], dt.datetime.fromisoformat(c["occurred_at"]))
        for key, c in cands.items()
    }
    fused = fusion.fuse(
        {ch: item["ranked"][ch] for ch in channels},
        facts,
        now=fusion_loo.LABELLED_NOW,
        weights=weights,
        scores={ch: item["scores"][ch] for ch in channels},
        scales=scales,
    )
    answered = [cands[f.key]["answers"] for f in fused]
    return {"first": float(answered[:1] == [True]), "in3": float(True in answered[:3])}


def settings() -> list[tuple]:
    """(boost, lead floor, lead width, keyword cut); boost 0 is today's fusion."""
    return [TODAY, *itertools.product(BOOSTS, LEAD_FLOORS, LEAD_WIDTHS, KEYWORD_CUTS)]


def keyword_strength(item: dict) -> float:
    """How much of its weight the keyword channel's best match earns (0 without a match)."""
    scale = evidence.keyword_scale(item["dfs"], item["chunks"], item["unmatched"])
    scores = item["scores"]["keyword"]
    return scale.strength(scores[0]) if scale is not None and scores else 0.0


def vector_weight(item: dict, setting: tuple, calibration: Calibration) -> float:
    """1 + boost x lead, when the keyword channel's strength is below the cut (the module's
    docstring)."""
    boost, lead_floor, lead_width, keyword_cut = setting
    scores = item["scores"]["vector"]
    if boost == 0 or len(scores) < 2:
        return 1.0
    if keyword_cut is not None and keyword_strength(item) >= keyword_cut:
        return 1.0
    span = calibration.query_match - calibration.query_floor
    lead = ((scores[0] - scores[1]) / span - lead_floor) / lead_width
    return 1.0 + boost * min(max(lead, 0.0), 1.0)


def keyword_scales(item: dict) -> dict:
    scale = evidence.keyword_scale(item["dfs"], item["chunks"], item["unmatched"])
    return {"keyword": scale} if scale is not None and item["scores"]["keyword"] else {}


def replay(items: list[dict], grid: list[tuple], calibration: Calibration) -> dict[tuple, list]:
    out = {}
    started = time.perf_counter()
    scales = [keyword_scales(it) for it in items]
    for n, setting in enumerate(grid, 1):
        rows = []
        for it, sc in zip(items, scales, strict=True):
            weights = {
                **fusion_loo.BASE_WEIGHTS,
                "vector": vector_weight(it, setting, calibration),
            }
            rows.append(score(it, weights, sc))
        out[setting] = rows
        if n % 20 == 0:
            print(f"  replayed {n}/{len(grid)} ({time.perf_counter() - started:.0f} s)", flush=True)
    return out


def alone(items: list[dict]) -> dict[str, list]:
    return {
        channel: [score(it, fusion_loo.BASE_WEIGHTS, {}, (channel,)) for it in items]
        for channel in ("vector", "keyword")
    }


def kind_rows(items: list[dict], rows: list[dict], kind: str) -> list[dict]:
    return [r for it, r in zip(items, rows, strict=True) if it["kind"] == kind]


def kind_figure(kind: str, rows: Sequence[dict]) -> dict:
    if kind == "locomo":
        return {f"@{k}": round(statistics.fmean(r[f"@{k}"] for r in rows), 3) for k in (1, 8)}
    return {"first": int(sum(r["first"] for r in rows)), "questions": len(rows)}


def level(kind: str, rows: Sequence[dict], best: Sequence[dict]) -> bool:
    """Whether ``rows`` are at least level with the best single channel's on this kind."""
    if kind == "locomo":
        return fusion_loo.kind_objective(kind, rows) >= fusion_loo.kind_objective(kind, best)
    return sum(r["first"] for r in rows) >= sum(r["first"] for r in best)


def best_alone(kind: str, singles: dict[str, list[dict]]) -> list[dict]:
    return max(singles.values(), key=lambda rows: fusion_loo.kind_objective(kind, rows))


def leave_one_kind_out(items: list[dict], table: dict, singles: dict) -> dict:
    kinds = sorted({it["kind"] for it in items})
    per_kind = {k: {ch: kind_rows(items, rows, k) for ch, rows in singles.items()} for k in kinds}
    folds = {}
    for held in kinds:
        train = [i for i, it in enumerate(items) if it["kind"] != held]
        train_kinds = [k for k in kinds if k != held]

        def short(setting: tuple, train_kinds: list[str] = train_kinds) -> int:
            """How many training kinds this setting leaves below their best single channel or
            below today's fusion."""
            rows = table[setting]
            below = [
                k
                for k in train_kinds
                if not level(k, kind_rows(items, rows, k), best_alone(k, per_kind[k]))
                or not level(k, kind_rows(items, rows, k), kind_rows(items, table[TODAY], k))
            ]
            return len(below)

        chosen = max(
            table,
            key=lambda s: (-short(s), fusion_loo.objective(items, table[s], train), s == TODAY),
        )
        rows = kind_rows(items, table[chosen], held)
        folds[held] = {
            "chosen": list(chosen),
            "training_kinds_short": short(chosen),
            "held_out": kind_figure(held, rows),
            "today": kind_figure(held, kind_rows(items, table[TODAY], held)),
            "vector_alone": kind_figure(held, per_kind[held]["vector"]),
            "keyword_alone": kind_figure(held, per_kind[held]["keyword"]),
            "level_with_best_channel": level(held, rows, best_alone(held, per_kind[held])),
        }
        print(f"  held out {held:<7} chose {chosen}: {folds[held]}", flush=True)
    return folds


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--locomo-home", type=Path, required=True, help="bench_locomo.py's --home")
    parser.add_argument("--cache", type=Path, required=True, help="fusion_loo.py's --cache")
    parser.add_argument("--ku-home", type=Path, required=True, help="bench_knowledge_update --home")
    parser.add_argument(
        "--locomo-data",
        type=Path,
        default=HERE.parent / ".." / "shared" / "data" / "locomo" / "locomo-dev.json",
    )
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    args.cache.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    items = (
        fusion_loo.locomo_items(args.locomo_home, args.cache, args.locomo_data)
        + fusion_loo.sample_items(args.cache / "sample_home", args.cache)
        + fusion_loo.small_items(args.cache / "small_home", args.cache)
        + ku_items(args.ku_home, args.cache)
        + anchors_items(args.cache / "anchors_home", args.cache)
    )
    calibration = fusion_loo._calibration(args.cache)
    singles = alone(items)
    grid = settings()
    print(f"{len(items)} questions, {len(grid)} settings", flush=True)
    table = replay(items, grid, calibration)
    kinds = sorted({it["kind"] for it in items})
    in_sample = {
        kind: {
            "vector_alone": kind_figure(kind, kind_rows(items, singles["vector"], kind)),
            "keyword_alone": kind_figure(kind, kind_rows(items, singles["keyword"], kind)),
            "today": kind_figure(kind, kind_rows(items, table[TODAY], kind)),
        }
        for kind in kinds
    }
    every = list(range(len(items)))
    best = max(table, key=lambda s: fusion_loo.objective(items, table[s], every))
    for kind in kinds:
        in_sample[kind]["best_setting"] = kind_figure(kind, kind_rows(items, table[best], kind))
    print(f"best setting in-sample: {best}", flush=True)
    print(json.dumps(in_sample), flush=True)
    figures = {
        "calibration": calibration.to_json(),
        "settings": len(grid),
        "in_sample": in_sample,
        "best_in_sample": list(best),
        "folds": leave_one_kind_out(items, table, singles),
        "seconds": round(time.perf_counter() - started, 1),
    }
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
