#!/usr/bin/env python
"""Fusion's form and constants chosen leave-one-memory-out over several kinds of memory together:
LoCoMo's five dev conversations, the sample corpus (``mara``, its 28 labelled questions) and the
three small memories of ``benchmarks/data/small_memories`` (66 questions).

For every question each channel's ranked candidates and raw scores come from the product's
channels (``SearchService.candidates``; LoCoMo's from ``bench_locomo.py``'s channel cache), with
the statistics of the query's lexemes the keyword channel reads (``keyword_store.plan``) and what
each candidate is (its episode, offsets, characters; for LoCoMo the evidence turns it holds).
They are cached as JSON under ``--cache``. Fusion is then replayed offline exactly as ``search``
fuses and sews (``domain.fusion.fuse`` with each channel's scores and scales, graph 0, date 1.5,
``domain.passages.sew``, 8 passages) for every setting of a grid:

* the keyword channel min-max normalized (as before), or gated by its scale
  (``domain.evidence.keyword_scale``): its scores times how far its best one gets from a floor
  to a reach, both shares of the query's attainable BM25, with the query's lexemes no chunk
  holds counted at a share of the idf a word in no chunk has;
* the vector channel min-max normalized, or gated the same way between the bundled model's
  calibration floor (a question's cosine to unrelated passages, ``memory_pipeline.indexing.
  calibration.measure``) and a reach that share of the way to its answer level;
* the vector weight (keyword 1.0).

A question is scored by its kind: LoCoMo by evidence-turn recall@1/3/5/8 (``bench_locomo.py``'s
rule), the labelled sets by whether the expected episode is the first result (and in the first
3). Each memory is held out in turn (nine folds): the setting with the best objective on the
other eight is scored on it, where the objective weighs each kind equally (the mean over the
kinds present of: LoCoMo's mean recall@1/3/5/8; a labelled set's 0.75 x share first + 0.25 x
share in 3), so no kind's size decides. Two protocols: ``capped`` (shipped) lets compete only
the settings whose LoCoMo objective on the fold's training conversations is at least the old
constants' (the LoCoMo target, "not below today's", as a constraint, like ``locomo_loo``'s
characters cap); ``uncapped`` lets every setting compete. Figures are reported per kind, held
out; the product takes the folds' most common form and the median of their constants.

    python benchmarks/fusion_loo.py --locomo-home DIR --cache DIR          # builds what is missing
    python benchmarks/fusion_loo.py --locomo-home DIR --cache DIR --json fusion.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import statistics
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from memory_pipeline.domain import evidence, fusion, passages
from memory_pipeline.domain.calibration import Calibration

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench_small_memories  # noqa: E402  (sibling modules)

KS = (1, 3, 5, 8)
LIMIT = 8
CHANNELS = ("vector", "keyword", "graph", "date")
CACHE_VERSION = 1
# LoCoMo's questions are ranked as of bench_locomo.SEARCH_NOW; the labelled sets as of a fixed
# day after their last episode, so two runs give the same figures.
LOCOMO_NOW = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
LABELLED_NOW = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)
# The keyword channel: min-max (None), or gated by its scale (``evidence.keyword_scale``):
# unmatched lexemes counted at this share, floor and reach as shares of the attainable BM25.
KEYWORD_SETTINGS = [(None, None, None)] + [
    (u, lo, hi)
    for u in (0.0, 0.25, 0.5, 0.75, 1.0)
    for lo in (0.0, 0.1, 0.2, 0.3, 0.4)
    for hi in (0.5, 0.75, 1.0, 1.5)
]
# The vector channel: min-max (None), or gated between the calibration's floor (a question's
# cosine to unrelated passages) and a reach this share of the way to its answer level.
GRID_VECTOR = (None, 0.75, 1.0)
GRID_VECTOR_WEIGHT = (1.0, 1.3, 1.6)
BASE_WEIGHTS = {**fusion.CHANNEL_WEIGHTS, "graph": 0.0, "date": 1.5}


# -- the caches ----------------------------------------------------------------------------------
def _lexeme_stats(conn, memory: str, text: str) -> tuple[list[int], int, int]:
    """The keyword channel's plan of ``text``: the df of each query lexeme the memory holds, how
    many it does not hold, and the memory's chunk rows."""
    from memory_pipeline.storage import keyword_store

    plan = keyword_store.plan(conn, memory, text)
    return list(plan.dfs), plan.unmatched, plan.chunks


def locomo_items(home: Path, cache: Path, data: Path) -> list[dict]:
    """``bench_locomo.py``'s channel cache (``--home``), each item with its query's lexeme
    statistics (read once from that home's database, then cached here)."""
    from memory_pipeline.storage.database import Database

    channel_cache = json.loads((home / "channel_cache.json").read_text(encoding="utf-8"))
    stats_path = cache / "locomo_lexemes.json"
    if stats_path.is_file():
        stats = json.loads(stats_path.read_text(encoding="utf-8"))
    else:
        sys.path.insert(0, str(HERE))
        import bench_locomo

        convs = bench_locomo.load_conversations(data)
        questions = bench_locomo.pick_questions(convs, None)
        cached = [(it["memory"], it["index"]) for it in channel_cache["items"]]
        if cached != [(q.memory, q.index) for q in questions]:
            raise SystemExit("the channel cache's questions are not bench_locomo.py's")
        db = Database.open(home=home, environ={})
        try:
            with db.connection() as conn:
                stats = [_lexeme_stats(conn, q.memory, q.text) for q in questions]
        finally:
            db.close()
        stats_path.write_text(json.dumps(stats), encoding="utf-8")
    items = []
    for item, (dfs, unmatched, chunks) in zip(channel_cache["items"], stats, strict=True):
        if "dfs" in item:  # a cache of another layout
            raise SystemExit(f"{home / 'channel_cache.json'}: unexpected layout")
        items.append(
            {
                **item,
                "kind": "locomo",
                "ranked": {ch: item["ranked"].get(ch, []) for ch in CHANNELS},
                "scores": {ch: item["scores"].get(ch, []) for ch in CHANNELS},
                "dfs": dfs,
                "unmatched": unmatched,
                "chunks": chunks,
            }
        )
    return items


def labelled_items(service, kind: str, questions: list[dict]) -> list[dict]:
    """Per question (``memory``, ``q``, ``expect``): the channels' candidates through the product,
    the query's lexeme statistics, and each candidate's episode title, offsets and length."""
    from memory_pipeline.storage import search_store

    items = []
    for q in questions:
        pairs = service.candidates(q["memory"], q["q"], channels=CHANNELS)
        if not pairs.get("vector"):
            raise SystemExit(f"the vector channel returned nothing for {q['q']!r}")
        keys = sorted({key for hits in pairs.values() for key, _ in hits})
        with service.db.connection() as conn:
            rows = search_store.chunk_rows(conn, q["memory"], keys)
            dfs, unmatched, chunks = _lexeme_stats(conn, q["memory"], q["q"])
        items.append(
            {
                "kind": kind,
                "memory": q["memory"],
                "query": q["q"],
                "expect": q["expect"],
                "ranked": {ch: [k for k, _ in pairs.get(ch, [])] for ch in CHANNELS},
                "scores": {ch: [s for _, s in pairs.get(ch, [])] for ch in CHANNELS},
                "candidates": {
                    k: {
                        "title": r.title,
                        "text_chars": len(r.text),
                        "salience": r.salience,
                        "occurred_at": r.occurred_at.isoformat(),
                        "episode_id": r.episode_id,
                        "start": r.start,
                        "end": r.end,
                    }
                    for k, r in rows.items()
                },
                "dfs": dfs,
                "unmatched": unmatched,
                "chunks": chunks,
            }
        )
    return items


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
    service = SearchService(
        db,
        load_policies(default_policies_path()),
        embedder=embedder,
        reranker=None,
        record=False,
        clock=lambda: LABELLED_NOW,
    )
    return db, embedder, service


def sample_items(home: Path, cache: Path) -> list[dict]:
    """The sample corpus indexed as its test indexes it (``test_sample_questions.py``), in
    ``home``; its 28 labelled questions' candidates."""
    path = cache / "sample_items.json"
    if path.is_file():
        return json.loads(path.read_text(encoding="utf-8"))
    from memory_pipeline.cli.commands import SAMPLE_CORPUS, SAMPLE_EPISODES
    from memory_pipeline.indexing.until_done import index_pending
    from memory_pipeline.ingest import ingest_paths
    from memory_pipeline.storage import entities_store

    sys.path.insert(0, str(HERE.parent))  # the tests' store oracles
    from memory_pipeline_tests.support import stores

    questions = [
        {"memory": "mara", "q": q["query"], "expect": q["expect_title"]}
        for q in json.loads((SAMPLE_CORPUS / "questions.json").read_text(encoding="utf-8"))
    ]
    db, embedder, service = _service(home)
    try:
        ingest_paths(db, SAMPLE_EPISODES)
        index_pending(db, embedder)
        with db.connection() as conn:
            stores.refresh_memories(conn, ["mara"], entities_store.EntityReport())
        items = labelled_items(service, "sample", questions)
    finally:
        db.close()
    path.write_text(json.dumps(items), encoding="utf-8")
    return items


def small_items(home: Path, cache: Path) -> list[dict]:
    """The small memories as ``bench_small_memories.py --keep home`` built them (built here
    through the same commands when ``home`` holds nothing); their questions' candidates."""
    path = cache / "small_items.json"
    if path.is_file():
        return json.loads(path.read_text(encoding="utf-8"))
    memories, questions = bench_small_memories.load(bench_small_memories.DATA)
    if not (home / "pgdata").exists():
        bench_small_memories.main(["--keep", str(home)])
    db, _, service = _service(home)
    try:
        items = labelled_items(service, "small", questions)
    finally:
        db.close()
    path.write_text(json.dumps(items), encoding="utf-8")
    return items


# -- the replay ----------------------------------------------------------------------------------
def _now(item: dict) -> dt.datetime:
    return LOCOMO_NOW if item["kind"] == "locomo" else LABELLED_NOW


def fused_passages(
    item: dict, weights: dict, scales: dict, now: dt.datetime, channels=CHANNELS
) -> list:
    cands = item["candidates"]
    ranked = {ch: item["ranked"][ch] for ch in channels}
    facts = {
        key: fusion.ChunkFacts(c["salience"], dt.datetime.fromisoformat(c["occurred_at"]))
        for key, c in cands.items()
    }
    fused = fusion.fuse(
        ranked,
        facts,
        now=now,
        weights=weights,
        scores={ch: item["scores"][ch] for ch in channels},
        scales=scales,
    )
    hits = (
        passages.Hit(f.key, cands[f.key]["episode_id"], cands[f.key]["start"], cands[f.key]["end"])
        for f in fused
    )
    return passages.sew(hits, LIMIT)


def score_item(item: dict, sewn: list) -> dict:
    cands = item["candidates"]
    if item["kind"] == "locomo":
        evidence_turns = set(item["evidence"])
        held = [set().union(*(cands[k]["holds"] for k in p.keys)) for p in sewn]
        row = {
            f"@{k}": len(set().union(set(), *held[:k]) & evidence_turns) / len(evidence_turns)
            for k in KS
        }
        row["chars"] = sum(cands[k]["text_chars"] for p in sewn for k in p.keys)
        return row
    titles = [cands[p.best.key]["title"] for p in sewn]
    return {
        "first": float(titles[:1] == [item["expect"]]),
        "in3": float(item["expect"] in titles[:3]),
    }


def kind_objective(kind: str, rows: Sequence[dict]) -> float:
    if kind == "locomo":
        return statistics.fmean(statistics.fmean(r[f"@{k}"] for r in rows) for k in KS)
    return 0.75 * statistics.fmean(r["first"] for r in rows) + 0.25 * statistics.fmean(
        r["in3"] for r in rows
    )


def objective(items: list[dict], rows: list[dict], chosen: Sequence[int]) -> float:
    by_kind: dict[str, list[dict]] = {}
    for i in chosen:
        by_kind.setdefault(items[i]["kind"], []).append(rows[i])
    return statistics.fmean(kind_objective(kind, r) for kind, r in sorted(by_kind.items()))


def settings() -> list[tuple]:
    """(unmatched share, keyword floor, keyword reach, vector reach, vector weight)."""
    return [
        (*kw, v, w)
        for kw, v, w in itertools.product(KEYWORD_SETTINGS, GRID_VECTOR, GRID_VECTOR_WEIGHT)
    ]


def vector_scale(calibration: Calibration, reach: float) -> fusion.ChannelScale | None:
    floor, match = calibration.query_floor, calibration.query_match
    if not calibration.measured or not match > floor:
        return None
    return fusion.ChannelScale(floor, floor + reach * (match - floor))


def scales_for(item: dict, setting: tuple, calibration: Calibration) -> dict:
    unmatched_share, floor, reach, vector_reach, _ = setting
    out = {}
    if reach is not None:
        scale = evidence.keyword_scale(
            item["dfs"],
            item["chunks"],
            item["unmatched"],
            floor=floor,
            reach=reach,
            unmatched_share=unmatched_share,
        )
        if scale is not None and item["scores"]["keyword"]:
            out["keyword"] = scale
    if vector_reach is not None:
        scale = vector_scale(calibration, vector_reach)
        if scale is not None:
            out["vector"] = scale
    return out


def replay(items: list[dict], grid: list[tuple], calibration: Calibration) -> dict[tuple, list]:
    out = {}
    started = time.perf_counter()
    for n, setting in enumerate(grid, 1):
        weights = {**BASE_WEIGHTS, "vector": setting[4]}
        out[setting] = [
            score_item(
                it,
                fused_passages(
                    it,
                    weights,
                    scales_for(it, setting, calibration),
                    _now(it),
                ),
            )
            for it in items
        ]
        if n % 20 == 0:
            print(f"  replayed {n}/{len(grid)} settings ({time.perf_counter() - started:.0f} s)")
    return out


def name(setting: tuple) -> str:
    unmatched_share, floor, reach, vector_reach, vector_weight = setting
    kw = (
        "min-max"
        if reach is None
        else f"gated {floor}..{reach} of attainable, unmatched x{unmatched_share}"
    )
    vec = "min-max" if vector_reach is None else f"gated x{vector_reach}"
    return f"keyword {kw}; vector {vec}, weight {vector_weight}"


def report(items: list[dict], rows: list[dict], label: str) -> dict:
    """Per kind (and per memory) figures of ``rows`` (one per item, in ``items``' order)."""
    out = {}
    groups: dict[str, list[int]] = {}
    for i, it in enumerate(items):
        groups.setdefault(it["kind"], []).append(i)
        groups.setdefault(f"{it['kind']}:{it['memory']}", []).append(i)
    for group, idx in sorted(groups.items()):
        part = [rows[i] for i in idx]
        if items[idx[0]]["kind"] == "locomo":
            out[group] = {
                **{f"@{k}": round(statistics.fmean(r[f"@{k}"] for r in part), 3) for k in KS},
                "chars": round(statistics.fmean(r["chars"] for r in part)),
                "questions": len(part),
            }
        else:
            out[group] = {
                "first": int(sum(r["first"] for r in part)),
                "in3": int(sum(r["in3"] for r in part)),
                "questions": len(part),
            }
    line = "  ".join(
        f"{g} "
        + (
            "/".join(f"{v[f'@{k}']:.3f}" for k in KS)
            if "@1" in v
            else f"{v['first']}/{v['questions']} first"
        )
        for g, v in out.items()
        if ":" not in g
    )
    print(f"  {label:<58} {line}")
    return out


def leave_one_memory_out(
    items: list[dict], table: dict[tuple, list], capped: tuple | None = None
) -> dict:
    """Each memory held out in turn, scored with the setting best on the others. ``capped``: a
    setting (the old constants) that LoCoMo's training conversations must not score below: only
    the settings whose LoCoMo objective on them is at least its own compete (the LoCoMo target,
    "not below today's", as a constraint, like the characters cap of ``locomo_loo``)."""
    memories = sorted({(it["kind"], it["memory"]) for it in items})
    held: list[dict | None] = [None] * len(items)
    folds = []
    for kind, memory in memories:
        train = [i for i, it in enumerate(items) if it["memory"] != memory]
        allowed = list(table)
        if capped is not None:
            locomo = [i for i in train if items[i]["kind"] == "locomo"]
            cap = kind_objective("locomo", [table[capped][i] for i in locomo])
            allowed = [
                s for s in table if kind_objective("locomo", [table[s][i] for i in locomo]) >= cap
            ] or [capped]
        best = max(allowed, key=lambda s: (objective(items, table[s], train), _prefer(s)))
        for i, it in enumerate(items):
            if it["memory"] == memory:
                held[i] = table[best][i]
        folds.append(
            {
                "held_out": memory,
                "kind": kind,
                "chosen": name(best),
                "setting": list(best),
                "within_cap": len(allowed),
                "train_objective": round(objective(items, table[best], train), 4),
            }
        )
        print(f"  fold {memory:<11} chose {name(best)}")
    return {"folds": folds, "held_out": held}


def _prefer(setting: tuple) -> tuple:
    """Ties go to the setting nearest the old product (min-max, weight 1.0)."""
    _, _, reach, vector_reach, vector_weight = setting
    return (reach is None, vector_reach is None, -abs(vector_weight - 1.0))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--locomo-home", type=Path, required=True, help="bench_locomo.py's --home")
    parser.add_argument("--cache", type=Path, required=True, help="folder for the caches and homes")
    parser.add_argument(
        "--locomo-data",
        type=Path,
        default=HERE.parent / ".." / "shared" / "data" / "locomo" / "locomo-dev.json",
        help="the LoCoMo file bench_locomo.py indexed (default as bench_locomo.py's --data)",
    )
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    args.cache.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    items = (
        locomo_items(args.locomo_home, args.cache, args.locomo_data)
        + sample_items(args.cache / "sample_home", args.cache)
        + small_items(args.cache / "small_home", args.cache)
    )
    print(f"{len(items)} questions: {dict(Counter(it['kind'] for it in items))}")
    calibration = _calibration(args.cache)
    print(f"calibration of the bundled model: {calibration.to_json()}")
    grid = settings()
    table = replay(items, grid, calibration)
    before = (None, None, None, None, 1.0)
    shipped = (
        evidence.UNMATCHED_SHARE,
        evidence.KEYWORD_FLOOR,
        evidence.KEYWORD_REACH,
        None,
        fusion.CHANNEL_WEIGHTS["vector"],
    )
    figures: dict = {"calibration": calibration.to_json(), "settings": len(grid)}
    print("\nin-sample (every memory), for reference:")
    for label, channels in (("vector alone", ("vector",)), ("keyword alone", ("keyword",))):
        rows = [
            score_item(it, fused_passages(it, BASE_WEIGHTS, {}, _now(it), channels)) for it in items
        ]
        figures[label] = report(items, rows, label + " (min-max)")
    figures["before"] = report(items, table[before], "before: " + name(before))
    if shipped in table:
        figures["shipped_in_sample"] = report(items, table[shipped], "shipped: " + name(shipped))
    for protocol, capped in (("capped", before), ("uncapped", None)):
        print(
            f"\n== {protocol}: each memory scored with the setting chosen on the other eight"
            + (", LoCoMo's training recall held at or above the old constants'" if capped else "")
        )
        loo = leave_one_memory_out(items, table, capped=capped)
        held = report(items, loo["held_out"], f"leave-one-memory-out, {protocol}")
        product = _product([tuple(f["setting"]) for f in loo["folds"]])
        if product not in table:
            table.update(replay(items, [product], calibration))
        print(f"  the folds' choice for the product: {name(product)}")
        figures[protocol] = {
            "held_out": held,
            "folds": loo["folds"],
            "product": {"setting": list(product), "name": name(product)},
            "product_in_sample": report(items, table[product], "in-sample: " + name(product)),
        }
    figures["seconds"] = round(time.perf_counter() - started, 1)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


def _product(chosen: list[tuple]) -> tuple:
    """The folds' most common form (whether each channel is gated), then the median constants
    of the folds that chose it."""
    form = Counter((s[2] is None, s[3] is None) for s in chosen).most_common(1)[0][0]
    same = [s for s in chosen if (s[2] is None, s[3] is None) == form]

    def median(values: list) -> float | None:
        values = [v for v in values if v is not None]
        return statistics.median_low(values) if values else None

    return tuple(median([s[i] for s in same]) for i in range(5))


def _calibration(cache: Path) -> Calibration:
    path = cache / "calibration.json"
    if path.is_file():
        return Calibration.from_json(json.loads(path.read_text(encoding="utf-8")))
    from memory_pipeline.config import EmbedSettings
    from memory_pipeline.embedders.factory import build_embedder
    from memory_pipeline.indexing.calibration import measure

    measured = measure(build_embedder(EmbedSettings.from_env({})))
    path.write_text(json.dumps(measured.to_json()), encoding="utf-8")
    return measured


if __name__ == "__main__":
    sys.exit(main())
