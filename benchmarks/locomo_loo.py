"""Leave-one-conversation-out fusion tuning for ``bench_locomo.py`` (a helper, not a script).

The channels run once per question through the product (``SearchService.candidates``); their
ranked candidates and scores, with what each candidate holds, are cached as JSON under
``--home``. Fusion is then replayed offline exactly as ``search`` does it (``domain.fusion.fuse``
with the channels' scores, then ``domain.passages.sew`` with the limit counting passages; a
statement that cites no chunk is a result of its own) for every setting of a grid: CombSUM of
normalized scores (vector and graph weights) and RRF over ranks (k, vector and graph weights),
keyword 1.0. Settings are chosen by leave-one-conversation-out: for each of the five
conversations, the setting with the best mean recall@1/3/5/8 on the other four is scored on it;
then, with that setting, the date channel's weight, then the observation weight, the same way (with ``--merge-grid``, together
with how a statement channel merges its vector and word lists). The observation stage chooses only
among the settings that return no more characters a query on the four than the fold's search
without observations (the target says "no more characters"; the choice without that cap is
printed beside it). Nothing is chosen by its score on all five; the product takes the folds' most
common method and the median of their weights.

Settings that change a channel's own output (BM25's k1 and b for the keyword channel, the
statement merge for the observation channel) are run through the product once per setting with
only that channel (``build_variant_cache``), cached beside the channel cache, and swapped into
the cached items (``with_channel``); ``run_bm25`` chooses k1 and b leave-one-out on the fused
default. ``run_coverage`` replays a per-query keyword weight (the share of the query's idf its
memory can match, to a power chosen leave-one-out): tried for a vocabulary-gap question, not
shipped.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import math
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from memory_pipeline.domain import fusion, passages
from memory_pipeline.storage import observations_store, search_store

KS = (1, 3, 5, 8)
LIMIT = 8
CHUNK_CHANNELS = ("vector", "keyword", "graph", "date")
BASE_CHANNELS = (
    "vector",
    "keyword",
    "graph",
)  # the first stage (the date channel has a stage of its own)
# The grid: RRF k, and channel weights relative to keyword (1.0).
GRID_K = (10, 20, 30, 60)
GRID_VECTOR = (0.5, 0.7, 1.0, 1.2, 1.5)
GRID_GRAPH = (0.0, 0.2, 0.4, 0.7)
GRID_OBSERVATION = (0.1, 0.2, 0.35, 0.5, 0.7, 1.0, 1.5)
GRID_DATE = (0.0, 0.35, 0.7, 1.0, 1.5, 2.0, 3.0)
CACHE_VERSION = 4  # 3: statements rank the chunks they cite; 4: with the channels' scores
# BM25 of the keyword channel (keyword_store.Bm25): term saturation k1, length normalisation b.
GRID_K1 = (0.5, 0.9, 1.2, 1.6, 2.0)
GRID_B = (0.3, 0.5, 0.75, 0.9)
VARIANT_CACHE_VERSION = 1
# How a statement channel merges its vector and word lists (domain.observations.STATEMENT_MERGE).
GRID_MERGE = ("rrf", "combsum")
# --coverage-grid (tried, not shipped): the keyword weight times the share of the query's idf
# that its memory's words can match, to the power gamma; "transfer": what keyword loses goes to
# vector.
GRID_COVERAGE = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5)


@dataclass
class Candidate:
    text_chars: int
    holds: list[str]  # the evidence dia ids of its question it holds (or cites)
    salience: float
    occurred_at: str
    episode_id: int  # a statement: minus its id (adjacent to nothing)
    start: int
    end: int


def build_cache(path: Path, service, questions, turns_of, holds, statement_cites) -> dict:
    """Per question: each channel's ranked keys and, per key, what fusion and scoring need. A
    cache written before a channel existed gets that channel's lists added (the others kept)."""
    if path.is_file():
        cached = json.loads(path.read_text(encoding="utf-8"))
        if cached.get("version") == CACHE_VERSION and cached.get("questions") == len(questions):
            print(f"channel cache: {path} ({len(questions)} questions, reused)")
            channels = service.resolve_policy(None, limit=None, channels=None).channels
            missing = tuple(
                ch for ch in channels if any(ch not in it["ranked"] for it in cached["items"])
            )
            if missing:
                add_channels(cached, missing, service, questions, turns_of, holds, statement_cites)
                path.write_text(json.dumps(cached), encoding="utf-8")
                print(f"channel cache: {', '.join(missing)} added")
            return cached
    out = {"version": CACHE_VERSION, "questions": len(questions), "items": []}
    for i, q in enumerate(questions, 1):
        pairs = service.candidates(q.memory, q.text)
        if not pairs.get(
            "vector"
        ):  # a skipped query embedding would make the cache measure nothing
            raise SystemExit(
                f"the vector channel returned nothing for {q.memory} question {q.index}: "
                "is the model slow or down? (the cache was not written)"
            )
        ranked = {ch: [key for key, _ in hits] for ch, hits in pairs.items()}
        turns = [turns_of[q.memory][e] for e in q.evidence]
        with service.db.connection() as conn:
            cands = candidate_facts(
                conn, q, {k for ks in ranked.values() for k in ks}, turns, holds, statement_cites
            )
        out["items"].append(
            {
                "memory": q.memory,
                "index": q.index,
                "category": q.category,
                "evidence": q.evidence,
                "ranked": ranked,
                "candidates": cands,
                "scores": {ch: [score for _, score in hits] for ch, hits in pairs.items()},
            }
        )
        if i % 100 == 0:
            print(f"  channel cache {i}/{len(questions)}", flush=True)
    path.write_text(json.dumps(out), encoding="utf-8")
    print(f"channel cache written: {path}")
    return out


def add_channels(
    cached: dict, channels: tuple[str, ...], service, questions, turns_of, holds, statement_cites
) -> None:
    """``channels`` run through the product for every cached question and added to its item."""
    for q, item in zip(questions, cached["items"]):
        pairs = service.candidates(q.memory, q.text, channels=channels)
        new = {key for ch in channels for key, _ in pairs.get(ch, [])} - set(item["candidates"])
        turns = [turns_of[q.memory][e] for e in q.evidence]
        with service.db.connection() as conn:
            item["candidates"].update(
                candidate_facts(conn, q, new, turns, holds, statement_cites) if new else {}
            )
        for ch in channels:
            item["ranked"][ch] = [key for key, _ in pairs.get(ch, [])]
            item["scores"][ch] = [score for _, score in pairs.get(ch, [])]


def candidate_facts(conn, q, keys: Iterable[str], turns, holds, statement_cites) -> dict[str, dict]:
    """What fusion and scoring need of each chunk and statement (``"<kind>:<id>"``) of ``keys``."""
    keys = sorted(keys)
    rows = search_store.chunk_rows(conn, q.memory, [k for k in keys if ":" not in k])
    out = {
        k: Candidate(
            len(r.text),
            [t.dia_id for t in turns if holds(r.text, t)],
            r.salience,
            r.occurred_at.isoformat(),
            r.episode_id,
            r.start,
            r.end,
        ).__dict__
        for k, r in rows.items()
    }
    statement_ids = [int(k.split(":", 1)[1]) for k in keys if ":" in k]
    for o in (
        observations_store.rows(conn, q.memory, statement_ids) if statement_ids else {}
    ).values():
        out[f"{o.kind}:{o.id}"] = Candidate(
            len(o.text),
            [e for e in q.evidence if e in statement_cites(o)],
            o.confidence,
            o.observed_at.isoformat(),
            -o.id,
            0,
            len(o.text),
        ).__dict__
    return out


def build_variant_cache(
    path: Path,
    service,
    questions,
    turns_of,
    holds,
    statement_cites,
    base: dict,
    channel: str,
    settings: dict[str, Callable[[], Callable[[], None]]],
) -> dict[str, list[dict]]:
    """Per setting (name -> a function that applies it and returns one that undoes it): per
    question (in ``base``'s order) ``channel``'s ranked keys and scores through the product
    (``SearchService.candidates`` with that channel only), and the facts of the candidates
    ``base`` does not hold yet."""
    if path.is_file():
        cached = json.loads(path.read_text(encoding="utf-8"))
        if (
            cached.get("version") == VARIANT_CACHE_VERSION
            and cached.get("questions") == len(questions)
            and set(cached["settings"]) == set(settings)
        ):
            print(f"{channel} variants cache: {path} (reused)")
            return cached["settings"]
    out: dict[str, list[dict]] = {}
    for name, apply in settings.items():
        undo = apply()
        try:
            variant = []
            for q, item in zip(questions, base["items"]):
                hits = service.candidates(q.memory, q.text, channels=(channel,)).get(channel, [])
                new = {key for key, _ in hits} - set(item["candidates"])
                turns = [turns_of[q.memory][e] for e in q.evidence]
                with service.db.connection() as conn:
                    facts = (
                        candidate_facts(conn, q, new, turns, holds, statement_cites) if new else {}
                    )
                variant.append(
                    {
                        "ranked": [key for key, _ in hits],
                        "scores": [s for _, s in hits],
                        "candidates": facts,
                    }
                )
        finally:
            undo()
        out[name] = variant
        print(f"  {channel} {name}: cached", flush=True)
    path.write_text(
        json.dumps(
            {"version": VARIANT_CACHE_VERSION, "questions": len(questions), "settings": out}
        ),
        encoding="utf-8",
    )
    print(f"{channel} variants cache written: {path}")
    return out


def _setter(module, name: str, value) -> Callable[[], Callable[[], None]]:
    def apply() -> Callable[[], None]:
        old = getattr(module, name)
        setattr(module, name, value)
        return lambda: setattr(module, name, old)

    return apply


def bm25_settings() -> dict[str, Callable]:
    from memory_pipeline.storage import keyword_store

    return {
        f"{k1},{b}": _setter(keyword_store, "BM25", keyword_store.Bm25(k1, b))
        for k1, b in itertools.product(GRID_K1, GRID_B)
    }


def merge_settings() -> dict[str, Callable]:
    from memory_pipeline.domain import observations

    return {method: _setter(observations, "STATEMENT_MERGE", method) for method in GRID_MERGE}


def with_channel(items: list[dict], variant: list[dict], channel: str) -> list[dict]:
    """``items`` with ``channel`` as one setting of ``build_variant_cache`` gave it."""
    return [
        {
            **it,
            "ranked": {**it["ranked"], channel: v["ranked"]},
            "scores": {**it["scores"], channel: v["scores"]},
            "candidates": {**it["candidates"], **v["candidates"]},
        }
        for it, v in zip(items, variant)
    ]


def run_bm25(items: list[dict], settings: dict[str, list[dict]], now: dt.datetime) -> dict:
    """BM25's k1 and b chosen leave-one-conversation-out on the fused default (the shipped
    fusion constants, without observations): per held-out conversation the setting with the
    best mean recall@1/3/5/8 on the other four, scored on it."""
    weights = dict(fusion.CHANNEL_WEIGHTS)
    fused, keyword = {}, {}
    for name, variant in settings.items():
        its = with_channel(items, variant, "keyword")
        fused[name] = evaluate(its, CHUNK_CHANNELS, weights, fusion.RRF_K, now)
        keyword[name] = evaluate(its, ("keyword",), weights, fusion.RRF_K, now)
    folds, held_fused, held_keyword = [], [None] * len(items), [None] * len(items)
    for memory in sorted({it["memory"] for it in items}):
        train = [i for i, it in enumerate(items) if it["memory"] != memory]
        test = [i for i, it in enumerate(items) if it["memory"] == memory]
        best = max(settings, key=lambda s: (objective([fused[s][i] for i in train]), s))
        for i in test:
            held_fused[i], held_keyword[i] = fused[best][i], keyword[best][i]
        folds.append(
            {
                "held_out": memory,
                "chosen": best,
                "questions": len(test),
                **{f"@{k}": mean([fused[best][i] for i in test], f"@{k}") for k in KS},
                "train_objective": objective([fused[best][i] for i in train]),
            }
        )
    head = f"  {'':<34}" + "".join(f"{'@' + str(k):>7}" for k in KS) + f"{'chars/q':>9}{'n':>6}"
    print(
        f"\n== BM25 k1 {GRID_K1} x b {GRID_B}, chosen leave-one-conversation-out on the fused default"
    )
    print(head)
    base = f"{keyword_store_bm25()}"
    if base in settings:
        print(table(f"keyword alone, BM25 {base} (shipped)", keyword[base]))
        print(table(f"fused, BM25 {base} (shipped)", fused[base]))
    print(table("keyword alone, BM25 LOO", held_keyword))
    print(table("fused, BM25 LOO", held_fused))
    for f in folds:
        print(
            f"  {f['held_out']:<8} n={f['questions']:<4} chose k1,b {f['chosen']} -> "
            + " ".join(f"@{k} {f[f'@{k}']:.3f}" for k in KS)
        )
    print(
        "  every setting on all five (in-sample, for the spread only): "
        + ", ".join(
            f"{s} {objective(r):.3f}"
            for s, r in sorted(fused.items(), key=lambda kv: -objective(kv[1]))[:8]
        )
    )
    k1 = statistics.median_low([float(f["chosen"].split(",")[0]) for f in folds])
    b = statistics.median_low([float(f["chosen"].split(",")[1]) for f in folds])
    print(f"  the folds' median choice (the product's constants): k1 {k1}, b {b}")
    summary = lambda rows: {
        **{f"@{k}": mean(rows, f"@{k}") for k in KS},
        "chars": mean(rows, "chars"),
    }  # noqa: E731
    return {
        "folds": folds,
        "loo_fused": summary(held_fused),
        "loo_keyword": summary(held_keyword),
        "median_choice": {"k1": k1, "b": b},
        "all_settings": {
            s: {"fused": summary(fused[s]), "keyword": summary(keyword[s])} for s in settings
        },
    }


def query_coverage(lexemes: Sequence[tuple[str, int | None]], n: int | None) -> float:
    """The share of a query's BM25 idf (``bm25_weight``'s) carried by lexemes some chunk of the
    memory holds (``keyword_lexemes.sql``'s rows: df None for none); 1.0 without lexemes."""
    idf = (
        [(math.log(1 + (n - (df or 0) + 0.5) / ((df or 0) + 0.5)), bool(df)) for _, df in lexemes]
        if n
        else []
    )
    total = math.fsum(w for w, _ in idf)
    return math.fsum(w for w, held in idf if held) / total if total else 1.0


def run_coverage(items: list[dict], coverages: list[float], now: dt.datetime) -> dict:
    """The keyword channel's weight scaled per query by ``coverage ** gamma`` (alone, or with
    vector taking what keyword loses), the other weights as shipped: every gamma in-sample per
    category, and gamma chosen leave-one-conversation-out."""
    base = dict(fusion.CHANNEL_WEIGHTS)
    out = {}
    print(f"\n== keyword weight x query coverage ** gamma, gamma {GRID_COVERAGE} (not shipped)")
    print(f"  coverage < 1 for {sum(c < 1 for c in coverages)} of {len(coverages)} questions")
    for variant in ("keyword", "transfer"):
        rows = {}
        for g in GRID_COVERAGE:
            rows[g] = [
                scores(
                    it,
                    results(
                        it,
                        CHUNK_CHANNELS,
                        {
                            **base,
                            "keyword": c**g,
                            **({"vector": 2 - c**g} if variant == "transfer" else {}),
                        },
                        fusion.RRF_K,
                        now,
                    ),
                )
                for it, c in zip(items, coverages)
            ]
        held = [None] * len(items)
        folds = []
        for memory in sorted({it["memory"] for it in items}):
            train = [i for i, it in enumerate(items) if it["memory"] != memory]
            best = max(GRID_COVERAGE, key=lambda g: (objective([rows[g][i] for i in train]), -g))
            for i, it in enumerate(items):
                if it["memory"] == memory:
                    held[i] = rows[best][i]
            folds.append({"held_out": memory, "chosen": best})
        print(
            f"  {variant}: folds chose "
            + ", ".join(f"{f['held_out']} {f['chosen']}" for f in folds)
        )
        named = [
            *((f"{variant} gamma {g} (in-sample)", rows[g]) for g in GRID_COVERAGE),
            (f"{variant} gamma LOO", held),
        ]
        for name, part in named:
            print(
                table(name, part)
                + "  multi-hop/temporal/open-domain/single-hop @8 "
                + " ".join(
                    f"{mean([r for r, it in zip(part, items) if it['category'] == c], '@8'):.3f}"
                    for c in CATEGORY_NAMES
                )
            )
        out[variant] = {
            "folds": folds,
            **{name: {f"@{k}": mean(part, f"@{k}") for k in KS} for name, part in named},
        }
    return out


def keyword_store_bm25() -> str:
    from memory_pipeline.storage import keyword_store

    return f"{keyword_store.BM25.k1},{keyword_store.BM25.b}"


def results(
    item: dict,
    channels: Sequence[str],
    weights: dict,
    k: float,
    now: dt.datetime,
    method: str = "combsum",
) -> list[tuple[set, int]]:
    """(evidence held, characters) of each result ``search`` would return with these settings
    (``method`` "combsum": normalized scores, as ``search`` fuses; "rrf": ranks only)."""
    cands = item["candidates"]
    ranked = {ch: item["ranked"].get(ch, []) for ch in channels}
    facts = {
        key: fusion.ChunkFacts(c["salience"], dt.datetime.fromisoformat(c["occurred_at"]))
        for key, c in cands.items()
    }
    scores = {ch: item["scores"].get(ch, []) for ch in channels} if method == "combsum" else None
    fused = fusion.fuse(ranked, facts, now=now, weights=weights, k=k, scores=scores)
    hits = (
        passages.Hit(f.key, cands[f.key]["episode_id"], cands[f.key]["start"], cands[f.key]["end"])
        for f in fused
    )
    out = []
    for passage in passages.sew(hits, LIMIT):
        held = set().union(*(cands[key]["holds"] for key in passage.keys))
        out.append((held, sum(cands[key]["text_chars"] for key in passage.keys)))
    return out


def scores(item: dict, found: list[tuple[set, int]]) -> dict:
    evidence = item["evidence"]
    row = {
        f"@{k}": len(set().union(set(), *(h for h, _ in found[:k])) & set(evidence)) / len(evidence)
        for k in KS
    }
    row["chars"] = sum(c for _, c in found)
    return row


def evaluate(
    items: list[dict], channels, weights: dict, k: float, now, method: str = "combsum"
) -> list[dict]:
    return [scores(item, results(item, channels, weights, k, now, method)) for item in items]


def mean(rows: Iterable[dict], key: str) -> float:
    values = [r[key] for r in rows]
    return statistics.fmean(values) if values else float("nan")


def objective(rows: list[dict]) -> float:
    return statistics.fmean(mean(rows, f"@{k}") for k in KS)


def weights_of(setting: dict) -> dict:
    return {
        "vector": setting["vector"],
        "keyword": 1.0,
        "graph": setting["graph"],
        "date": setting.get("date", 0.0),
        "observation": setting.get("observation", 0.0),
        "belief": setting.get("observation", 0.0),
    }


def setting_key(setting: dict) -> tuple:
    """A setting as the key of ``leave_one_out``'s ``evaluated`` cache."""
    return tuple(sorted(setting.items()))


def leave_one_out(
    items: list[dict],
    settings_for,
    channels,
    now,
    items_for=None,
    chars_cap=None,
    evaluated: dict[tuple, list[dict]] | None = None,
) -> dict:
    """Per conversation: of ``settings_for(held_out)``, the setting best on the other four
    conversations, and its scores on the held-out one. Each setting is evaluated once, on
    ``items_for(setting)`` when given (a setting that changes a channel's own output).

    ``chars_cap(held_out, train)`` (``train``: the indexes of the other four's items): the most
    characters a query a setting may return on them (a constraint of the target, chosen under like
    the rest); when no setting keeps to it, the one that returns the fewest. Each fold records its
    ``cap`` and whether its choice keeps to it (``within_cap``). ``evaluated``: a cache of
    setting -> rows to share between calls over the same items and channels."""
    evaluated = {} if evaluated is None else evaluated

    def rows_of(setting: dict) -> list[dict]:
        key = setting_key(setting)
        if key not in evaluated:
            evaluated[key] = evaluate(
                items_for(setting) if items_for else items,
                channels,
                weights_of(setting),
                setting["k"],
                now,
                setting["method"],
            )
        return evaluated[key]

    folds, held_out = [], [None] * len(items)
    for memory in sorted({it["memory"] for it in items}):
        train = [i for i, it in enumerate(items) if it["memory"] != memory]
        test = [i for i, it in enumerate(items) if it["memory"] == memory]
        options = settings_for(memory)
        chars = lambda st: mean([rows_of(st)[i] for i in train], "chars")  # noqa: E731
        capped = {}
        if chars_cap is not None:
            cap = chars_cap(memory, train)
            within = [st for st in options if chars(st) <= cap]
            options = within or [min(options, key=chars)]
            capped = {"cap": cap, "within_cap": bool(within)}
        best = max(options, key=lambda st: objective([rows_of(st)[i] for i in train]))
        chosen_rows = rows_of(best)
        for i in test:
            held_out[i] = chosen_rows[i]
        folds.append(
            {
                "held_out": memory,
                "chosen": best,
                "questions": len(test),
                **{f"@{k}": mean([chosen_rows[i] for i in test], f"@{k}") for k in KS},
                "chars": mean([chosen_rows[i] for i in test], "chars"),
                **capped,
            }
        )
    return {"folds": folds, "rows": held_out}


def chunk_grid() -> list[dict]:
    """CombSUM (no k) and RRF settings: the folds choose the method too."""
    combsum = [
        {"method": "combsum", "k": fusion.RRF_K, "vector": v, "graph": g}
        for v, g in itertools.product(GRID_VECTOR, GRID_GRAPH)
    ]
    rrf = [
        {"method": "rrf", "k": k, "vector": v, "graph": g}
        for k, v, g in itertools.product(GRID_K, GRID_VECTOR, GRID_GRAPH)
    ]
    return combsum + rrf


def date_grid(base: dict) -> list[dict]:
    return [{**base, "date": w} for w in GRID_DATE]


def observation_grid(base: dict, merges: Sequence[str] = ()) -> list[dict]:
    """The observation weights (and, when ``merges`` are given, each statement merge with each)."""
    if not merges:
        return [{**base, "observation": w} for w in GRID_OBSERVATION]
    return [{**base, "observation": w, "merge": m} for m in merges for w in GRID_OBSERVATION]


CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


def table(name: str, rows: list[dict]) -> str:
    return (
        f"  {name:<34}"
        + "".join(f"{mean(rows, f'@{k}'):7.3f}" for k in KS)
        + f"{mean(rows, 'chars'):9.0f}{len(rows):6d}"
    )


def run(items: list[dict], now: dt.datetime, merges: dict[str, list[dict]] | None = None) -> dict:
    """Every figure of the leave-one-out section, printed and returned. ``merges``: the observation
    channel under each statement merge (``build_variant_cache``), chosen with its weight."""
    merged_items = {m: with_channel(items, v, "observation") for m, v in (merges or {}).items()}
    items_for = (lambda setting: merged_items[setting["merge"]]) if merges else None
    head = f"  {'':<34}" + "".join(f"{'@' + str(k):>7}" for k in KS) + f"{'chars/q':>9}{'n':>6}"
    singles = {
        ch: evaluate(items, (ch,), dict(fusion.CHANNEL_WEIGHTS), fusion.RRF_K, now)
        for ch in (*CHUNK_CHANNELS, "observation")
    }
    shipped_base = evaluate(items, BASE_CHANNELS, dict(fusion.CHANNEL_WEIGHTS), fusion.RRF_K, now)
    shipped = evaluate(items, CHUNK_CHANNELS, dict(fusion.CHANNEL_WEIGHTS), fusion.RRF_K, now)
    shipped_obs = evaluate(
        items, (*CHUNK_CHANNELS, "observation"), dict(fusion.CHANNEL_WEIGHTS), fusion.RRF_K, now
    )
    print(
        f"\n== Leave-one-conversation-out fusion (grid: CombSUM, or RRF with k {GRID_K}; vector {GRID_VECTOR}, "
        f"graph {GRID_GRAPH}; keyword 1.0; then date {GRID_DATE}; then observation {GRID_OBSERVATION})"
    )
    base = leave_one_out(items, lambda memory: chunk_grid(), BASE_CHANNELS, now)
    base_of = {f["held_out"]: f["chosen"] for f in base["folds"]}
    plain_evaluated: dict[tuple, list[dict]] = {}
    plain = leave_one_out(
        items,
        lambda memory: date_grid(base_of[memory]),
        CHUNK_CHANNELS,
        now,
        evaluated=plain_evaluated,
    )
    chosen_of = {f["held_out"]: f["chosen"] for f in plain["folds"]}
    # The target: observations add recall without more characters a query than the search without
    # them, so the observation stage chooses among the settings that keep to the characters of the
    # fold's own search without observations on its four training conversations.
    plain_rows = {
        memory: plain_evaluated[setting_key(chosen)] for memory, chosen in chosen_of.items()
    }
    observation_rows: dict[
        tuple, list[dict]
    ] = {}  # both observation stages evaluate the same settings
    with_obs = leave_one_out(
        items,
        lambda memory: observation_grid(chosen_of[memory], tuple(merged_items)),
        (*CHUNK_CHANNELS, "observation"),
        now,
        items_for,
        chars_cap=lambda memory, train: mean([plain_rows[memory][i] for i in train], "chars"),
        evaluated=observation_rows,
    )
    uncapped = leave_one_out(
        items,
        lambda memory: observation_grid(chosen_of[memory], tuple(merged_items)),
        (*CHUNK_CHANNELS, "observation"),
        now,
        items_for,
        evaluated=observation_rows,
    )
    print(head)
    for ch, rows in singles.items():
        print(table(f"{ch} alone", rows))
    print(table("fused as shipped, v+k+g (no date)", shipped_base))
    print(table("fused, constants as shipped (v+k+g+d)", shipped))
    print(table("fused as shipped + observations", shipped_obs))
    print(table("fused LOO (v+k+g, no date)", base["rows"]))
    print(table("fused LOO (v+k+g+d)", plain["rows"]))
    print(table("fused LOO + observations", with_obs["rows"]))
    print(table("  (chosen without the chars cap)", uncapped["rows"]))
    print("\n  per fold (held-out conversation: setting chosen on the other four; recall there)")
    gaps = {k: [] for k in KS}
    for b, f, g in zip(base["folds"], plain["folds"], with_obs["folds"]):
        test = [r for r, it in zip(singles["keyword"], items) if it["memory"] == f["held_out"]]
        gap = {k: f[f"@{k}"] - mean(test, f"@{k}") for k in KS}
        for k in KS:
            gaps[k].append(gap[k])
        print(
            f"  {f['held_out']:<8} n={f['questions']:<4} chose {f['chosen']} (no date: "
            + " ".join(f"@{k} {b[f'@{k}']:.3f}" for k in KS)
            + ") -> "
            + " ".join(f"@{k} {f[f'@{k}']:.3f}" for k in KS)
            + " | minus keyword "
            + " ".join(f"{gap[k]:+.3f}" for k in KS)
            + f" | +obs weight {g['chosen']['observation']}"
            + ("" if g.get("within_cap", True) else " (none within the chars cap: the fewest)")
            + (f", merge {g['chosen']['merge']}" if "merge" in g["chosen"] else "")
            + ": "
            + " ".join(f"@{k} {g[f'@{k}']:.3f}" for k in KS)
            + f", {g['chars']:.0f} chars"
        )
    print(
        "  spread of (fused LOO - keyword) over folds: "
        + ", ".join(f"@{k} {min(v):+.3f}..{max(v):+.3f}" for k, v in gaps.items())
    )
    product = majority(plain["folds"])
    product_obs = majority(with_obs["folds"])
    print(
        f"  the folds' median choice (the product's constants): {product}, observation weight "
        f"{product_obs['observation']}"
        + (f", statement merge {product_obs['merge']}" if merges else "")
    )
    product_uncapped = majority(uncapped["folds"])
    print(
        "  without the chars cap the folds chose "
        + ", ".join(
            f"{f['held_out']} {f['chosen']['observation']}"
            + (f" {f['chosen']['merge']}" if merges else "")
            for f in uncapped["folds"]
        )
        + f" (median {product_uncapped['observation']})"
    )
    for m, its in merged_items.items():
        print(
            table(
                f"fused as shipped + obs, merge {m}",
                evaluate(
                    its,
                    (*CHUNK_CHANNELS, "observation"),
                    dict(fusion.CHANNEL_WEIGHTS),
                    fusion.RRF_K,
                    now,
                ),
            )
        )
    by = {}
    for label, key in (("category", "category"), ("conversation", "memory")):
        print(f"\n  per {label} (held-out figures; keyword alone for comparison)")
        print(head)
        groups = sorted({it[key] for it in items})
        by[label] = {}
        for grp in groups:
            idx = [i for i, it in enumerate(items) if it[key] == grp]
            name = CATEGORY_NAMES.get(grp, grp) if key == "category" else grp
            part = {
                "keyword": [singles["keyword"][i] for i in idx],
                "vector": [singles["vector"][i] for i in idx],
                "fused LOO, no date": [base["rows"][i] for i in idx],
                "fused LOO": [plain["rows"][i] for i in idx],
                "fused LOO + obs": [with_obs["rows"][i] for i in idx],
            }
            for row_name, rows in part.items():
                print(table(f"{name}: {row_name}", rows))
            by[label][str(name)] = {
                row_name: {
                    **{f"@{k}": mean(rows, f"@{k}") for k in KS},
                    "chars": mean(rows, "chars"),
                    "questions": len(rows),
                }
                for row_name, rows in part.items()
            }
    summary = lambda rows: {
        **{f"@{k}": mean(rows, f"@{k}") for k in KS},
        "chars": mean(rows, "chars"),
    }  # noqa: E731
    return {
        "singles": {ch: summary(rows) for ch, rows in singles.items()},
        "shipped_no_date": summary(shipped_base),
        "shipped": summary(shipped),
        "shipped_with_observations": summary(shipped_obs),
        "loo_no_date": summary(base["rows"]),
        "loo": summary(plain["rows"]),
        "loo_with_observations": summary(with_obs["rows"]),
        "folds_no_date": base["folds"],
        "folds": plain["folds"],
        "folds_with_observations": with_obs["folds"],
        "loo_with_observations_uncapped": summary(uncapped["rows"]),
        "folds_with_observations_uncapped": uncapped["folds"],
        "median_observation_weight_uncapped": product_uncapped["observation"],
        "statement_merge_choice_uncapped": product_uncapped.get("merge"),
        "gap_spread": {f"@{k}": [min(v), max(v)] for k, v in gaps.items()},
        "median_choice": product,
        "median_observation_weight": product_obs["observation"],
        "statement_merge_choice": product_obs.get("merge"),
        "by": by,
    }


def majority(folds: list[dict]) -> dict:
    """The setting for the product: per constant, the median of the five folds' choices."""
    keys = folds[0]["chosen"].keys()
    method = statistics.mode([f["chosen"]["method"] for f in folds])
    same = [f["chosen"] for f in folds if f["chosen"]["method"] == method]
    return {
        key: statistics.mode([c[key] for c in same])
        if isinstance(same[0][key], str)
        else statistics.median_low([c[key] for c in same])
        for key in keys
    }
