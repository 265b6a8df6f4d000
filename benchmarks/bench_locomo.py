#!/usr/bin/env python
"""Retrieval-quality benchmark on LoCoMo: evidence-turn recall@k of each search channel and of the
fused default.

Data: the LoCoMo development split (``../shared/data/locomo/locomo-dev.json`` from the project root;
see that folder's README). It is read in place and never copied into the project.

Ingest (idempotent, so a second run reuses everything). Each conversation is its own memory, named
by its ``sample_id`` (``conv-26``, ...): one episode per session, kind ``chat``, title
``session N``, occurring at ``session_N_date_time`` (``1:56 pm on 8 May, 2023``, taken as UTC),
whose body has one paragraph per turn, ``"{speaker}: {text}"`` plus ``" [shared a photo:
{blip_caption}]"`` when the turn has a photo caption, paragraphs separated by a blank line. The
episodes are indexed with the bundled local model (``LocalEmbedder``, multilingual-e5-small, 384
dimensions; a few chunks per second, so the first run takes minutes), entities are refreshed,
and the HNSW index is built. All of it lives in an embedded PostgreSQL under ``--home``
(default ``benchmarks/.locomo_home``, git-ignored), which later runs reuse.

Questions: categories 1-4 (5, adversarial, has no evidence). Evidence ids that do not exist in the
conversation (a few LoCoMo ids are malformed, e.g. ``"D8:6; D9:17"``) are skipped and counted; a
question left with no valid evidence is dropped and counted.

Scoring rule (evidence-turn recall@k). A turn's needle is its exact paragraph text
``"{speaker}: {text}"`` (without the photo caption). A returned chunk *holds* a turn when the
needle is a substring of the chunk's text. A turn longer than one chunk can hold is cut by the
1,600-character hard cut of ``domain.chunking``; such a turn (no chunk of its session holds it
whole) counts when a returned chunk contains its first 200 characters or its last 200 characters,
i.e. when either of the chunks it was split into is returned. For one question, recall@k = the
fraction of its valid evidence turns held by at least one of the first k returned chunks;
recall@k of a row is the mean over questions.

Rows: each channel alone, fused without observations and the fused default (every channel),
through ``SearchService``
with no reranker and ``record=False``, ``limit=8``. Columns: recall@1/3/5/8, mean characters
returned per query (sum of the returned chunks' ``len(text)``), p50 latency of ``search()``
(query embedding included for rows with the vector channel), questions. Reference figures from a
plain BM25 / cosine / RRF setup over the same 759 questions are printed alongside.

Diagnostics (no product code changed): channels called directly (``vector_store.nearest_chunks``
with and without ``by_windows``, i.e. with the product's paragraph-window scoring and without it,
``search_store.keyword_candidates``, ``search_store.graph_candidates``) and fused here with
``domain.fusion``: vector+keyword without the graph, plain RRF of vector+keyword, graph at a
smaller weight, and each channel's recall@50 (is the evidence in the candidate pool at all?).

Run from the project root with the project's virtual environment::

    python benchmarks/bench_locomo.py --limit-questions 40     # quick check (first run indexes: minutes)
    python benchmarks/bench_locomo.py --json locomo.json       # all 759 questions
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import math
import os
import platform
import re
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from memory_pipeline.config import EmbedSettings
from memory_pipeline.domain import fusion
from memory_pipeline.domain.chunking import chunk_body
from memory_pipeline.domain.entities import entity_matcher
from memory_pipeline.domain.episodes import EpisodeDraft, make_episode
from memory_pipeline.domain.observations import make_observation
from memory_pipeline.domain.policies import default_policies_path, load_policies
from memory_pipeline.embedders.base import Embedder
from memory_pipeline.embedders.factory import build_embedder
from memory_pipeline.indexing.until_done import index_pending
from memory_pipeline.progress import Meter, Progress, describe
from memory_pipeline.search.channels.graph import GRAPH_CANDIDATES, followed_entities
from memory_pipeline.search.channels.keyword import KEYWORD_CANDIDATES
from memory_pipeline.search.channels.vector import VECTOR_CANDIDATES, VECTOR_RESCORE_POOL
from memory_pipeline.search.service import SearchService
from memory_pipeline.storage import entities_store, hnsw_store, observations_store, search_store
from memory_pipeline.storage.database import Database
from memory_pipeline.storage.embedded import exit_cleanly_on_sigterm
from memory_pipeline.storage.episodes_store import store_episodes
from memory_pipeline.storage.paths import query
from memory_pipeline.storage.search_store import Filters
from memory_pipeline.storage.vector_store import nearest_chunks

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))  # the tests' store oracles
from memory_pipeline_tests.support import stores  # noqa: E402

DEFAULT_DATA = REPO_ROOT / ".." / "shared" / "data" / "locomo" / "locomo-dev.json"
DEFAULT_HOME = REPO_ROOT / "benchmarks" / ".locomo_home"
INGEST_DAY = dt.date(2024, 1, 1)
# Every search and replay of a run ranks as of this moment (the ingest day): recency breaks exact
# score ties, so a clock that moves between runs moved the characters returned by a few.
SEARCH_NOW = dt.datetime.combine(INGEST_DAY, dt.time(), tzinfo=dt.UTC)
KS = (1, 3, 5, 8)
LIMIT = 8
POOL_K = 50
SPLIT_PROBE = 200
CATEGORIES = (1, 2, 3, 4)
DATE_FORMAT = "%I:%M %p on %d %B, %Y"

ROWS: tuple[tuple[str, tuple[str, ...] | None], ...] = (
    ("vector alone", ("vector",)),
    ("keyword alone", ("keyword",)),
    ("graph alone", ("graph",)),
    ("observation alone", ("observation",)),
    ("fused, no observations", ("vector", "keyword", "graph", "date")),
    ("fused default", None),
)
# The dev conversations' ``observation`` field, loaded as observations citing their turns.
STATEMENT_AUTHOR = "locomo-observation-v2"  # v2: cites the chunks that hold its turns too

# Plain BM25 / cosine / RRF over the same 759 questions (recall@1, @3, @5, @8).
REFERENCE = {
    "BM25 alone": (0.52, 0.68, 0.77, 0.83),
    "cosine alone": (0.41, 0.61, 0.70, 0.78),
    "RRF of the two": (0.52, 0.73, 0.80, 0.85),
}
REFERENCE_QUESTIONS = 759


# --------------------------------------------------------------------------------------------
# The data
# --------------------------------------------------------------------------------------------


@dataclass
class Turn:
    dia_id: str
    session: int
    needle: str  # "{speaker}: {text}", the exact start of its paragraph
    split: bool = False  # no chunk of its session holds it whole (cut by the hard cut)


@dataclass
class Question:
    memory: str
    index: int  # position in the conversation's qa list
    text: str
    category: int
    evidence: list[str]  # valid dia ids only


@dataclass
class Conversation:
    memory: str
    drafts: list[EpisodeDraft]
    turns: dict[str, Turn]
    questions: list[Question]
    skipped_evidence: list[str] = field(default_factory=list)
    dropped_questions: int = 0
    statements: list[tuple[int, str, list[str]]] = field(
        default_factory=list
    )  # (session, text, dia ids)
    skipped_statements: int = 0  # malformed entries, and statements of a session without turns


def session_numbers(conv: dict) -> list[int]:
    return sorted(int(m.group(1)) for k in conv for m in [re.fullmatch(r"session_(\d+)", k)] if m)


def turn_paragraph(turn: dict) -> tuple[str, str]:
    """(needle, paragraph): the paragraph is the needle plus the photo caption, if any."""
    needle = f"{turn['speaker']}: {turn['text']}"
    caption = turn.get("blip_caption")
    return needle, needle + (f" [shared a photo: {caption}]" if caption else "")


def load_conversations(path: Path) -> list[Conversation]:
    data = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for sample in data:
        memory = sample["sample_id"]
        conv = sample["conversation"]
        drafts: list[EpisodeDraft] = []
        turns: dict[str, Turn] = {}
        for n in session_numbers(conv):
            session = conv[f"session_{n}"]
            if not session:
                continue
            when = dt.datetime.strptime(
                conv[f"session_{n}_date_time"].strip(), DATE_FORMAT
            ).replace(tzinfo=dt.UTC)
            paragraphs = []
            for t in session:
                needle, paragraph = turn_paragraph(t)
                paragraphs.append(paragraph)
                turns[t["dia_id"]] = Turn(t["dia_id"], n, needle)
            body = "\n\n".join(paragraphs)
            drafts.append(
                make_episode(
                    memory=memory,
                    kind="chat",
                    title=f"session {n}",
                    occurred_at=when,
                    body=body,
                    source=f"locomo:{memory}:session_{n}",
                )
            )
            chunk_texts = [c.text for c in chunk_body(body)]
            for t in session:
                turn = turns[t["dia_id"]]
                turn.split = not any(turn.needle in c for c in chunk_texts)
        c = Conversation(memory, drafts, turns, [])
        c.statements, c.skipped_statements = _statements(
            sample.get("observation"), {t.session for t in turns.values()}
        )
        for i, qa in enumerate(sample["qa"]):
            if qa.get("category") not in CATEGORIES:
                continue
            valid = [e for e in qa.get("evidence", []) if e in turns]
            c.skipped_evidence += [e for e in qa.get("evidence", []) if e not in turns]
            if not valid:
                c.dropped_questions += 1
                continue
            c.questions.append(
                Question(memory, i, qa["question"], qa["category"], list(dict.fromkeys(valid)))
            )
        out.append(c)
    return out


def _statements(observation, sessions: set[int]) -> tuple[list[tuple[int, str, list[str]]], int]:
    """The ``observation`` field's statements, (session, text, cited dia ids), and how many entries
    were skipped: those that are not ``[statement, dia_id or [dia_ids]]`` (the field was written
    by a model: entries without their turn occur) and those of a session without turns. What is
    not a mapping where one is expected counts as one skipped entry."""
    statements: list[tuple[int, str, list[str]]] = []
    skipped = 0
    if observation is None:
        return statements, skipped
    if not isinstance(observation, dict):
        return statements, 1
    for key, by_speaker in sorted(observation.items()):
        m = re.fullmatch(r"session_(\d+)_observation", key)
        if m is None or not isinstance(by_speaker, dict):
            skipped += 1
            continue
        for items in by_speaker.values():
            for item in items if isinstance(items, list) else [None]:
                statement = _statement(item)
                if statement is None or int(m.group(1)) not in sessions:
                    skipped += 1
                else:
                    statements.append((int(m.group(1)), *statement))
    return statements, skipped


def _statement(item) -> tuple[str, list[str]] | None:
    """(text, cited dia ids) of one ``[statement, dia_id or [dia_ids]]`` entry; None when it is
    not one."""
    if not isinstance(item, (list, tuple)) or len(item) != 2:
        return None
    text, cited = item
    cited = [cited] if isinstance(cited, str) else cited
    if (
        not isinstance(text, str)
        or not text.strip()
        or not isinstance(cited, list)
        or not cited
        or not all(isinstance(d, str) for d in cited)
    ):
        return None
    return text, list(cited)


def pick_questions(convs: list[Conversation], limit: int | None) -> list[Question]:
    """All questions, or the first ``limit`` taken round-robin across conversations."""
    if limit is None:
        return [q for c in convs for q in c.questions]
    queues = [list(c.questions) for c in convs]
    picked: list[Question] = []
    while len(picked) < limit and any(queues):
        for q in queues:
            if q and len(picked) < limit:
                picked.append(q.pop(0))
    return picked


def holds(chunk_text: str, turn: Turn) -> bool:
    if turn.needle in chunk_text:
        return True
    if turn.split:
        return turn.needle[:SPLIT_PROBE] in chunk_text or turn.needle[-SPLIT_PROBE:] in chunk_text
    return False


def statement_cites(o) -> set[str]:
    """The dia ids an observation cites (its passages)."""
    return set(o.passages)


def result_holds(result, turn: Turn) -> bool:
    """A chunk or passage holds a turn by its text; a statement by citing it."""
    if result.kind in ("observation", "belief"):
        return turn.dia_id in (result.sources or {}).get("passages", [])
    return holds(result.text, turn)


def result_recall_at(found, turns: Sequence[Turn], k: int) -> float:
    top = found[:k]
    return sum(1 for t in turns if any(result_holds(r, t) for r in top)) / len(turns)


def recall_at(texts: Sequence[str], turns: Sequence[Turn], k: int) -> float:
    top = texts[:k]
    return sum(1 for t in turns if any(holds(c, t) for c in top)) / len(turns)


# --------------------------------------------------------------------------------------------
# Building the index
# --------------------------------------------------------------------------------------------


def load_statements(conn, convs: list[Conversation]) -> int:
    """The conversations' ``observation`` field as observations (once, after the chunks exist), as
    an agent reading the memory would have written them: each cites its session's episode, the
    turns it came from (dia ids, for scoring) and the chunks that hold those turns (the product
    ranks a statement's cited chunks in its place). Statements loaded by an earlier version of
    this benchmark (dia ids only) are forgotten and loaded again."""
    inserted = 0
    for c in convs:
        authors = {
            a
            for (a,) in conn.execute(
                "SELECT DISTINCT author FROM observations WHERE memory = %s", (c.memory,)
            ).fetchall()
        }
        if STATEMENT_AUTHOR in authors:
            continue
        if authors:
            conn.execute(query("observation_forget_memory"), {"memory": c.memory})
        episode_of = dict(
            conn.execute(
                "SELECT source, id FROM episodes WHERE memory = %s", (c.memory,)
            ).fetchall()
        )
        chunks_of: dict[int, list[tuple[str, str]]] = {}
        for episode_id, chunk_id, text in conn.execute(
            "SELECT episode_id, chunk_id, text FROM chunks WHERE memory = %s ORDER BY episode_id, ordinal",
            (c.memory,),
        ).fetchall():
            chunks_of.setdefault(episode_id, []).append((chunk_id, text))
        for n, text, cited in c.statements:
            episode_id = episode_of[f"locomo:{c.memory}:session_{n}"]
            sources = [
                chunk_id
                for chunk_id, chunk_text in chunks_of.get(episode_id, [])
                if any(d in c.turns and holds(chunk_text, c.turns[d]) for d in cited)
            ]
            draft = make_observation(
                memory=c.memory,
                text=text,
                passages=[*cited, *sources],
                author=STATEMENT_AUTHOR,
                episode_ids=[episode_id],
            )
            observations_store.insert(conn, draft)
            inserted += 1
    print(f"observations: {inserted} loaded now")
    return inserted


def prepare(db: Database, convs: list[Conversation], embedder: Embedder) -> dict:
    info: dict = {}
    with db.connection() as conn:
        t0 = time.perf_counter()
        stored = store_episodes(conn, [d for c in convs for d in c.drafts], INGEST_DAY)
        info["episodes_inserted"] = stored.inserted
        info["episodes_already_stored"] = stored.duplicates
        print(
            f"ingest: {stored.inserted} new episode(s), {stored.duplicates} already stored "
            f"({time.perf_counter() - t0:.1f}s)"
        )
        # A second run has nothing pending, so index_pass would not activate the profile itself.
        profile = stores.activate_profile(conn, embedder.profile)

    last = [0.0]
    meter = Meter()

    def progress(p: Progress) -> None:
        meter.update(p)
        now = time.perf_counter()
        if now - last[0] >= 10:
            last[0] = now
            print(f"  {describe(p, meter)}", flush=True)

    t_index = time.perf_counter()
    report = index_pending(db, embedder, on_progress=progress)
    info["index_seconds"] = time.perf_counter() - t_index
    info["index_vectors"] = report.vectors
    info["index_window_vectors"] = report.windows
    print(
        f"index: {report.episodes} episode(s), {report.chunks} chunk(s), {report.vectors} chunk vector(s), "
        f"{report.statement_vectors} observation vector(s) and "
        f"{report.windows} paragraph-window vector(s) written "
        f"in {info['index_seconds']:.1f}s; pending after: {report.pending_after}"
    )
    if report.pending_after:
        raise SystemExit(f"{report.pending_after} episode(s) still pending after indexing")
    with db.connection() as conn:
        info["statements_inserted"] = load_statements(conn, convs)
    if info["statements_inserted"]:
        report = index_pending(db, embedder)
        print(f"index: {report.statement_vectors} observation vector(s) written")

    with db.connection() as conn:
        t0 = time.perf_counter()
        er = entities_store.EntityReport()
        stores.refresh_memories(conn, [c.memory for c in convs], er)
        print(
            f"entities: {er.extracted_episodes} episode(s) read, {er.promoted} promoted, "
            f"{er.mentions_added} mention(s) added ({time.perf_counter() - t0:.1f}s)"
        )
        state = hnsw_store.ensure_index(conn, profile)  # pool connections are autocommit
        print(
            f"hnsw: {state.name} valid={state.valid} rows={state.rows} "
            f"{'built in %.1fs' % state.build_seconds if state.build_seconds is not None else 'reused'}"
        )
        conn.execute(
            "ANALYZE episodes, chunks, embeddings, entities, entity_mentions, observations, "
            "observation_embeddings"
        )
        counts = {}
        for c in convs:
            e, ch, ents = conn.execute(
                """SELECT (SELECT count(*) FROM episodes WHERE memory = %(m)s),
                          (SELECT count(*) FROM chunks WHERE memory = %(m)s),
                          (SELECT count(*) FROM entities WHERE memory = %(m)s)""",
                {"m": c.memory},
            ).fetchone()
            counts[c.memory] = {"episodes": e, "chunks": ch, "entities": ents}
    info["memories"] = counts
    info["profile"] = profile.name
    return info


# --------------------------------------------------------------------------------------------
# Measuring
# --------------------------------------------------------------------------------------------


def pct(values: Sequence[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, max(0, math.ceil(q * len(s)) - 1))]


@dataclass
class RowResult:
    name: str
    recalls: dict[int, list[float]] = field(default_factory=lambda: {k: [] for k in KS})
    categories: list[int] = field(default_factory=list)
    chars: list[int] = field(default_factory=list)
    latency_ms: list[float] = field(default_factory=list)
    returned: list[int] = field(default_factory=list)

    def summary(self) -> dict:
        return {
            "recall": {
                f"@{k}": statistics.fmean(v) if v else float("nan") for k, v in self.recalls.items()
            },
            "mean_chars": statistics.fmean(self.chars) if self.chars else float("nan"),
            "mean_results": statistics.fmean(self.returned) if self.returned else float("nan"),
            "p50_ms": pct(self.latency_ms, 0.5),
            "p95_ms": pct(self.latency_ms, 0.95),
            "questions": len(self.chars),
            "by_category": {
                str(cat): {
                    **{
                        f"@{k}": statistics.fmean(
                            v for v, c in zip(self.recalls[k], self.categories) if c == cat
                        )
                        for k in KS
                    },
                    "questions": self.categories.count(cat),
                }
                for cat in sorted(set(self.categories))
            },
        }


def run_service(
    service: SearchService, questions: list[Question], turns_of: dict[str, dict[str, Turn]]
) -> dict[str, RowResult]:
    rows = {name: RowResult(name) for name, _ in ROWS}
    # Warm-up: load the model, fill caches, so the first timed query is not an outlier.
    for name, channels in ROWS:
        service.search(questions[0].memory, questions[0].text, limit=LIMIT, channels=channels)
    for i, q in enumerate(questions, 1):
        turns = [turns_of[q.memory][e] for e in q.evidence]
        for name, channels in ROWS:
            t0 = time.perf_counter()
            resp = service.search(q.memory, q.text, limit=LIMIT, channels=channels)
            ms = (time.perf_counter() - t0) * 1000
            if "vector" in (channels or ("vector",)) and resp.vector_status != "ok":
                raise SystemExit(f"vector channel unavailable: {resp.vector_status}")
            texts = [r.text for r in resp.results]
            row = rows[name]
            for k in KS:
                row.recalls[k].append(result_recall_at(resp.results, turns, k))
            row.chars.append(sum(len(t) for t in texts))
            row.categories.append(q.category)
            row.returned.append(len(texts))
            row.latency_ms.append(ms)
        if i % 100 == 0:
            print(f"  searched {i}/{len(questions)} questions", flush=True)
    return rows


def graph_ids(conn, memory: str, query: str, cache: dict) -> list[int]:
    """The entity ids the graph channel follows for ``query`` (search.channels.graph.followed_entities)."""
    if memory not in cache:
        cache[memory] = entity_matcher(search_store.memory_entities(conn, memory))
    return followed_entities(conn, memory, query, cache[memory])[0]


# The fused default's weights with the vector channel scored by chunk vectors only (before windows).
CHUNK_ONLY_WEIGHTS = {
    ("vector_chunk" if ch == "vector" else ch): w for ch, w in fusion.CHANNEL_WEIGHTS.items()
}


def run_diagnostics(
    db: Database,
    embedder: Embedder,
    questions: list[Question],
    turns_of: dict[str, dict[str, Turn]],
) -> dict:
    """Channels called directly, pools of 50, fused here in several ways."""
    now = SEARCH_NOW
    variants = {
        # name: (channels, fuse kwargs or None for plain RRF)
        "reproduced fused default (v+k+g)": (("vector", "keyword", "graph"), {}),
        "vector+keyword, product fuse": (("vector", "keyword"), {}),
        "vector+keyword, plain RRF k=60": (("vector", "keyword"), None),
        "v+k+g, graph weight 0.35": (
            ("vector", "keyword", "graph"),
            {"weights": {**fusion.CHANNEL_WEIGHTS, "graph": 0.35}},
        ),
        "v+k+g, plain RRF (graph 0.7)": (("vector", "keyword", "graph"), None),
        "v+k+g, vector weight 0.5": (
            ("vector", "keyword", "graph"),
            {"weights": {**fusion.CHANNEL_WEIGHTS, "vector": 0.5}},
        ),
        "vector+keyword, vector weight 0.5": (
            ("vector", "keyword"),
            {"weights": {**fusion.CHANNEL_WEIGHTS, "vector": 0.5}},
        ),
        "vector+keyword, RRF k=10": (("vector", "keyword"), {"k": 10}),
        "chunk vector alone (no windows)": (("vector_chunk",), {"weights": CHUNK_ONLY_WEIGHTS}),
        "v+k+g, chunk vectors without windows": (
            ("vector_chunk", "keyword", "graph"),
            {"weights": CHUNK_ONLY_WEIGHTS},
        ),
    }
    recall = {name: {k: [] for k in KS} for name in variants}
    pool_recall = {ch: [] for ch in ("vector", "keyword", "graph", "vector_chunk", "union")}
    pool_sizes = {ch: [] for ch in ("vector", "keyword", "graph", "vector_chunk", "union")}
    # Recall at the product's own candidate limits (graph is cut at 25).
    product_pool = {ch: [] for ch in ("vector", "keyword", "graph", "vector_chunk")}
    graph_fired = 0
    cache: dict = {}
    with db.connection() as conn:
        from memory_pipeline.storage.profiles_store import active_profile

        profile = active_profile(conn)
        for i, q in enumerate(questions, 1):
            turns = [turns_of[q.memory][e] for e in q.evidence]
            qv = embedder.embed_query(q.text)
            # As the service does: the re-scored pool, cut to the channel's candidates below.
            vec = [
                h.chunk_id
                for h in nearest_chunks(
                    conn, profile, q.memory, qv, limit=VECTOR_RESCORE_POOL, by_windows=True
                )
            ][:POOL_K]
            chunk_only = [
                h.chunk_id for h in nearest_chunks(conn, profile, q.memory, qv, limit=POOL_K)
            ]
            kw = [
                c
                for c, _ in search_store.keyword_candidates(
                    conn, q.memory, q.text, Filters(), limit=POOL_K
                )[0]
            ]
            ids = graph_ids(conn, q.memory, q.text, cache)
            gr = [
                c
                for c, _ in search_store.graph_candidates(
                    conn, q.memory, ids, Filters(), limit=POOL_K
                )
            ]
            graph_fired += bool(gr)
            pools = {"vector": vec, "keyword": kw, "graph": gr, "vector_chunk": chunk_only}
            union = sorted(set(vec) | set(kw) | set(gr) | set(chunk_only))
            rows = search_store.chunk_rows(conn, q.memory, union)
            text = {c: r.text for c, r in rows.items()}
            facts = {
                c: fusion.ChunkFacts(salience=r.salience, occurred_at=r.occurred_at)
                for c, r in rows.items()
            }
            for ch, ids_ in (*pools.items(), ("union", union)):
                pool_recall[ch].append(
                    recall_at([text[c] for c in ids_], turns, len(ids_)) if ids_ else 0.0
                )
                pool_sizes[ch].append(len(ids_))
            limits = {
                "vector": VECTOR_CANDIDATES,
                "keyword": KEYWORD_CANDIDATES,
                "graph": GRAPH_CANDIDATES,
                "vector_chunk": VECTOR_CANDIDATES,
            }
            for ch, ids_ in pools.items():
                cut = ids_[: limits[ch]]
                product_pool[ch].append(
                    recall_at([text[c] for c in cut], turns, len(cut)) if cut else 0.0
                )
            for name, (channels, kwargs) in variants.items():
                ranked = {ch: pools[ch][: limits[ch]] for ch in channels}
                if kwargs is None:
                    scores = fusion.reciprocal_rank_fusion(ranked)
                    order = sorted(scores, key=lambda c: (-scores[c], c))
                else:
                    order = [f.key for f in fusion.fuse(ranked, facts, now=now, **kwargs)]
                texts = [text[c] for c in order[:LIMIT]]
                for k in KS:
                    recall[name][k].append(recall_at(texts, turns, k))
            if i % 200 == 0:
                print(f"  diagnostics {i}/{len(questions)}", flush=True)
    return {
        "variants": {
            name: {f"@{k}": statistics.fmean(v) for k, v in r.items()} for name, r in recall.items()
        },
        "pool_recall_at_50": {ch: statistics.fmean(v) for ch, v in pool_recall.items()},
        "pool_mean_size": {ch: statistics.fmean(v) for ch, v in pool_sizes.items()},
        "product_pool_recall": {ch: statistics.fmean(v) for ch, v in product_pool.items()},
        "graph_fired_share": graph_fired / len(questions),
    }


# --------------------------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------------------------


def print_table(summary: dict[str, dict], questions: int) -> list[dict]:
    print(f"\n== Evidence-turn recall, limit {LIMIT}, {questions} questions (categories 1-4)")
    head = (
        f"  {'row':<16}"
        + "".join(f"{'@' + str(k):>7}" for k in KS)
        + f"{'chars/q':>9}{'p50 ms':>9}{'p95 ms':>9}{'n':>6}"
    )
    print(head)
    print("  " + "-" * (len(head) - 2))
    for name, s in summary.items():
        print(
            f"  {name:<16}"
            + "".join(f"{s['recall']['@' + str(k)]:7.3f}" for k in KS)
            + f"{s['mean_chars']:9.0f}{s['p50_ms']:9.1f}{s['p95_ms']:9.1f}{s['questions']:6d}"
        )
    print(f"  reference ({REFERENCE_QUESTIONS} questions):")
    for name, vals in REFERENCE.items():
        print(f"  {name:<16}" + "".join(f"{v:7.2f}" for v in vals))
    names = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
    cats = sorted(summary["fused default"]["by_category"])
    print(
        "\n  recall@5 by category:"
        + "".join(
            f"{names.get(int(c), c) + ' (' + str(summary['fused default']['by_category'][c]['questions']) + ')':>20}"
            for c in cats
        )
    )
    for name, s in summary.items():
        print(f"  {name:<22}" + "".join(f"{s['by_category'][c]['@5']:20.3f}" for c in cats))
    fused = summary["fused default"]["recall"]
    print(
        "\n  fused default vs every single channel (exact) and every reference figure (to 2 decimals):"
    )
    verdicts = []
    for i, k in enumerate(KS):
        f = fused[f"@{k}"]
        singles = {
            n: summary[n]["recall"][f"@{k}"] for n, ch in ROWS if ch is not None and len(ch) == 1
        }
        refs = {n: v[i] for n, v in REFERENCE.items()}
        beats_singles = all(f > v for v in singles.values())
        # The references are given to two decimals: compare at that precision.
        beats_refs = all(round(f, 2) > v for v in refs.values())
        ties = [n for n, v in refs.items() if round(f, 2) == v]
        best_other = max(singles.items(), key=lambda kv: kv[1])
        print(
            f"    @{k}: fused {f:.3f}; beats every channel: {'yes' if beats_singles else 'NO'} "
            f"(best channel: {best_other[0]} {best_other[1]:.3f}); beats every reference: "
            f"{'yes' if beats_refs else 'NO'}" + (f" (ties {', '.join(ties)})" if ties else "")
        )
        verdicts.append(
            {
                "k": k,
                "fused": f,
                "beats_channels": beats_singles,
                "beats_reference": beats_refs,
                "reference_ties": ties,
                "best_channel": best_other[0],
                "best_channel_value": best_other[1],
            }
        )
    return verdicts


def print_diagnostics(diag: dict) -> None:
    print("\n== Diagnostics (channels called directly, fused here; no product code changed)")
    print(f"  {'variant':<36}" + "".join(f"{'@' + str(k):>7}" for k in KS))
    for name, r in diag["variants"].items():
        print(f"  {name:<36}" + "".join(f"{r['@' + str(k)]:7.3f}" for k in KS))
    print("\n  candidate pools (recall over the whole pool; is the evidence there at all?)")
    print(f"  {'channel':<10}{'recall@50':>10}{'mean size':>11}{'recall at product cut':>23}")
    for ch in ("vector", "keyword", "graph", "union"):
        cut = diag["product_pool_recall"].get(ch)
        cut_s = f"{cut:23.3f}" if cut is not None else f"{'':>23}"
        print(
            f"  {ch:<10}{diag['pool_recall_at_50'][ch]:10.3f}{diag['pool_mean_size'][ch]:11.1f}{cut_s}"
        )
    print(
        f"  (product cuts: vector {VECTOR_CANDIDATES}, keyword {KEYWORD_CANDIDATES}, graph {GRAPH_CANDIDATES}; "
        f"the graph channel found something for {diag['graph_fired_share']:.0%} of the questions)"
    )


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--data",
        type=Path,
        default=DEFAULT_DATA,
        help="LoCoMo JSON (default ../shared/data/locomo/locomo-dev.json from the project root)",
    )
    p.add_argument(
        "--home",
        type=Path,
        default=DEFAULT_HOME,
        help="folder of the persistent embedded PostgreSQL (default benchmarks/.locomo_home)",
    )
    p.add_argument(
        "--limit-questions",
        type=int,
        default=None,
        metavar="N",
        help="only N questions, taken round-robin across the conversations",
    )
    p.add_argument("--skip-diagnostics", action="store_true", help="only the service table")
    p.add_argument(
        "--skip-loo", action="store_true", help="no leave-one-conversation-out fusion section"
    )
    p.add_argument(
        "--loo-only",
        action="store_true",
        help="only the leave-one-out section (channels cached in --home/channel_cache.json)",
    )
    p.add_argument(
        "--bm25-grid",
        action="store_true",
        help="also choose the keyword channel's BM25 k1 and b leave-one-out (its channel cached per "
        "setting in --home/bm25_grid_cache.json)",
    )
    p.add_argument(
        "--merge-grid",
        action="store_true",
        help="also choose how a statement channel merges its vector and word lists (RRF or CombSUM) "
        "leave-one-out, with the observation weight (cached in --home/merge_grid_cache.json)",
    )
    p.add_argument(
        "--coverage-grid",
        action="store_true",
        help="also replay the keyword weight scaled by the share of the query's idf its memory can match "
        "(tried, not shipped; benchmarks/README.md)",
    )
    p.add_argument(
        "--no-windows",
        action="store_true",
        help="index without paragraph-window vectors (MEMORY_PIPELINE_PARAGRAPH_WINDOWS=off); "
        "use a --home of its own: a home indexed one way keeps its vectors",
    )
    p.add_argument("--json", metavar="PATH", help="also write the figures as JSON to PATH")
    args = p.parse_args(argv)
    if args.limit_questions is not None and args.limit_questions < 1:
        p.error("--limit-questions must be at least 1")
    args.data = args.data.resolve()
    args.home = args.home.resolve()
    if not args.data.is_file():
        p.error(f"--data {args.data}: no such file (see /work/shared/data/locomo/README.md)")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    exit_cleanly_on_sigterm()
    started = time.perf_counter()
    convs = load_conversations(args.data)
    questions = pick_questions(convs, args.limit_questions)
    turns_of = {c.memory: c.turns for c in convs}
    skipped = [e for c in convs for e in c.skipped_evidence]
    dropped = sum(c.dropped_questions for c in convs)
    split_turns = sum(t.split for c in convs for t in c.turns.values())
    print(f"data: {args.data}")
    print(
        f"  {len(convs)} conversations, {sum(len(c.drafts) for c in convs)} sessions, "
        f"{sum(len(c.turns) for c in convs)} turns ({split_turns} cut by the hard cut); "
        f"{sum(len(c.questions) for c in convs)} questions of categories 1-4 with evidence, "
        f"{len(questions)} used"
    )
    print(
        f"  skipped {len(skipped)} evidence id(s) not in their conversation: {skipped}; "
        f"dropped {dropped} question(s) left without evidence"
    )
    skipped_statements = sum(c.skipped_statements for c in convs)
    if skipped_statements:
        print(
            f"  skipped {skipped_statements} observation entr{'y' if skipped_statements == 1 else 'ies'} "
            "not of the form [statement, turn id(s)] or of a session without turns"
        )
    if os.environ.get("MEMORY_PIPELINE_DATABASE_URL"):
        print(
            "  note: MEMORY_PIPELINE_DATABASE_URL is ignored; this benchmark uses its own embedded server under --home"
        )
    print(f"home: {args.home}")

    # A long query-embedding deadline: on a loaded machine the default 5 s skips the vector channel
    # (search.query_embedding), which would measure the machine's load, not the ranking.
    embedder = build_embedder(
        EmbedSettings.from_env(
            {
                "MEMORY_PIPELINE_PARAGRAPH_WINDOWS": "off" if args.no_windows else "on",
                "MEMORY_PIPELINE_QUERY_EMBED_TIMEOUT": "120",
            }
        )
    )
    figures: dict = {
        "when": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
        },
        "data": str(args.data),
        "embedder": embedder.profile.name,
        "questions": len(questions),
        "skipped_evidence_ids": skipped,
        "dropped_questions": dropped,
        "skipped_statements": skipped_statements,
        "split_turns": split_turns,
        "scoring_rule": (
            "turn needle '{speaker}: {text}' is a substring of a returned chunk; a turn cut by the "
            f"hard cut counts if a returned chunk contains its first or last {SPLIT_PROBE} characters"
        ),
        "reference": {
            "questions": REFERENCE_QUESTIONS,
            **{k: dict(zip((f"@{k_}" for k_ in KS), v)) for k, v in REFERENCE.items()},
        },
    }
    db = Database.open(home=args.home, environ={})
    try:
        figures["setup"] = prepare(db, convs, embedder)
        service = SearchService(
            db,
            load_policies(default_policies_path()),
            embedder=embedder,
            reranker=None,
            record=False,
            clock=lambda: SEARCH_NOW,
        )
        if not args.skip_loo:
            import locomo_loo

            cache = locomo_loo.build_cache(
                args.home / "channel_cache.json",
                service,
                questions,
                turns_of,
                holds,
                statement_cites,
            )
            merges = None
            if args.merge_grid:
                merges = locomo_loo.build_variant_cache(
                    args.home / "merge_grid_cache.json",
                    service,
                    questions,
                    turns_of,
                    holds,
                    statement_cites,
                    cache,
                    "observation",
                    locomo_loo.merge_settings(),
                )
            figures["leave_one_out"] = locomo_loo.run(cache["items"], SEARCH_NOW, merges)
            if args.bm25_grid:
                settings = locomo_loo.build_variant_cache(
                    args.home / "bm25_grid_cache.json",
                    service,
                    questions,
                    turns_of,
                    holds,
                    statement_cites,
                    cache,
                    "keyword",
                    locomo_loo.bm25_settings(),
                )
                figures["bm25_leave_one_out"] = locomo_loo.run_bm25(
                    cache["items"], settings, SEARCH_NOW
                )
            if args.coverage_grid:
                with db.connection() as conn:
                    lexemes = [
                        conn.execute(
                            query("keyword_lexemes"), {"memory": q.memory, "text": q.text}
                        ).fetchall()
                        for q in questions
                    ]
                coverages = [
                    locomo_loo.query_coverage(
                        [(r[0], r[1]) for r in rows], rows[0][2] if rows else None
                    )
                    for rows in lexemes
                ]
                figures["coverage_grid"] = locomo_loo.run_coverage(
                    cache["items"], coverages, SEARCH_NOW
                )
        if not args.loo_only:
            print(f"\nsearching {len(questions)} questions x {len(ROWS)} rows ...")
            t0 = time.perf_counter()
            rows = run_service(service, questions, turns_of)
            print(f"  done in {time.perf_counter() - t0:.1f}s")
            summary = {name: r.summary() for name, r in rows.items()}
            figures["rows"] = summary
            figures["fused_verdicts"] = print_table(summary, len(questions))
        if not args.skip_diagnostics and not args.loo_only:
            print("\nrunning diagnostics ...")
            diag = run_diagnostics(db, embedder, questions, turns_of)
            figures["diagnostics"] = diag
            print_diagnostics(diag)
    finally:
        db.close()
        if db.embedded is not None:
            with contextlib.suppress(Exception):
                db.embedded.release()
    figures["total_seconds"] = time.perf_counter() - started
    print(f"\ntotal {figures['total_seconds']:.1f}s")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
        print(f"figures written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
