#!/usr/bin/env python
"""Documents: each channel against its own model, and fusion against the channels, on a public
retrieval benchmark in BEIR's format (NFCorpus, FiQA-2018, ArguAna...), nDCG@10.

Data (``--data DIR``, read in place, never copied into the project): BEIR's layout,
``corpus.jsonl`` (``_id``, ``title``, ``text``), ``queries.jsonl`` (``_id``, ``text``) and
``qrels/SPLIT.tsv`` (``query-id``, ``corpus-id``, ``score``, with a header line). ``--queries Q
--docs N --seed S`` takes a seeded subset: Q of the split's queries and every document they
judge, then documents drawn at random until N (a whole corpus that cannot be indexed within a
session; the figures say which). A result whose document id is the query's own id is skipped,
as BEIR scores ArguAna.

Everything the product does goes through its commands, as a user runs them, on a fresh embedded
database in a temporary folder (``--keep DIR`` keeps it): each document is one JSONL episode
(title, then the body: ``# title``, a blank line and the text, as a titled document is stored;
``--body plain`` writes the title as a plain first line instead), ``memory-pipeline ingest``,
``memory-pipeline index``, then ``memory-pipeline search --batch`` at limit 10: the fused
default, the vector channel alone and the keyword channel alone. Each result's episode is mapped
back to its document through the episode's ``source`` (``memory-pipeline episodes --json``).

Beside them, computed in this script from the same subset, the two references each channel is
held to:

* the bundled model alone (the product's local embedder, the same model and prefixes): each
  whole document embedded once as "passage: " + title + " " + text, exact cosine;
* BM25 (Okapi, k1 0.9, b 0.4, as Pyserini's BEIR runs; lowercased word tokens, English stop
  words dropped, no stemming).

    python benchmarks/bench_documents.py --data PATH/nfcorpus --queries 100 --docs 600
    python benchmarks/bench_documents.py --data PATH/nfcorpus --split test   # the whole corpus
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from bench_small_memories import command, environment  # sibling module (benchmarks/)

MEMORY = "docs"
LIMIT = 10
ROWS = {"fused": None, "keyword": "keyword", "vector": "vector"}
MAX_TITLE = 200
WORD = re.compile(r"\w+", re.UNICODE)
STOP = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then "
    "there these they this to was will with".split()
)


def load(data: Path, split: str) -> tuple[dict, dict, dict]:
    """(corpus: id -> (title, text), queries: id -> text, qrels: query id -> {doc id: grade})."""
    corpus = {}
    for line in (data / "corpus.jsonl").open(encoding="utf-8"):
        if line.strip():
            d = json.loads(line)
            corpus[str(d["_id"])] = ((d.get("title") or "").strip(), (d.get("text") or "").strip())
    queries = {}
    for line in (data / "queries.jsonl").open(encoding="utf-8"):
        if line.strip():
            q = json.loads(line)
            queries[str(q["_id"])] = q["text"]
    qrels: dict[str, dict[str, int]] = {}
    for n, line in enumerate((data / "qrels" / f"{split}.tsv").open(encoding="utf-8")):
        parts = line.rstrip("\n").split("\t")
        if n == 0 and not parts[-1].lstrip("-").isdigit():
            continue  # the header
        qid, did, grade = parts[0], parts[1], int(parts[-1])
        if grade > 0 and did in corpus and qid in queries:
            qrels.setdefault(qid, {})[did] = grade
    return corpus, queries, qrels


def subset(corpus: dict, qrels: dict, queries: int | None, docs: int | None, seed: int):
    """(query ids, document ids): Q seeded queries, their judged documents, then distractors."""
    rng = random.Random(seed)
    qids = sorted(qrels)
    if queries is not None and queries < len(qids):
        qids = sorted(rng.sample(qids, queries))
    if docs is None:
        return qids, sorted(corpus)
    chosen = {d for q in qids for d in qrels[q]}
    others = sorted(set(corpus) - chosen)
    rng.shuffle(others)
    chosen.update(others[: max(0, docs - len(chosen))])
    return qids, sorted(chosen)


def body_of(title: str, text: str, style: str) -> str:
    if not title:
        return text
    return f"# {title}\n\n{text}" if style == "markdown" else f"{title}\n\n{text}"


def write_episodes(path: Path, corpus: dict, ids: list[str], style: str) -> None:
    with path.open("w", encoding="utf-8") as out:
        for did in ids:
            title, text = corpus[did]
            episode = {
                "memory": MEMORY,
                "kind": "doc",
                "title": (title or did)[:MAX_TITLE],
                "occurred_at": "2020-01-01T00:00:00Z",
                "body": body_of(title, text, style) or did,
                "source": f"beir:{did}",
            }
            out.write(json.dumps(episode, ensure_ascii=False) + "\n")


def ndcg(ranked: list[str], judged: dict[str, int], k: int = LIMIT) -> float:
    dcg = sum(judged.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(judged.values(), reverse=True)[:k]
    best = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / best if best else 0.0


def tokens(text: str) -> list[str]:
    return [w for w in WORD.findall(text.lower()) if w not in STOP]


def bm25_rankings(corpus: dict, ids: list[str], texts: dict[str, str], k1=0.9, b=0.4) -> dict:
    """Each query's top documents by Okapi BM25 over the subset."""
    docs = {d: Counter(tokens(" ".join(corpus[d]))) for d in ids}
    lengths = {d: sum(c.values()) for d, c in docs.items()}
    avgdl = sum(lengths.values()) / max(1, len(docs))
    df = Counter(w for c in docs.values() for w in c)
    n = len(docs)
    postings: dict[str, list[str]] = {}
    for d, c in docs.items():
        for w in c:
            postings.setdefault(w, []).append(d)
    out = {}
    for qid, text in texts.items():
        scores: Counter = Counter()
        for w in set(tokens(text)):
            idf = math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5)) if w in df else 0.0
            for d in postings.get(w, ()):
                tf = docs[d][w]
                scores[d] += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * lengths[d] / avgdl))
        out[qid] = [d for d, _ in scores.most_common(LIMIT + 1)]
    return out


def bare_model_rankings(corpus: dict, ids: list[str], texts: dict[str, str], env: dict) -> dict:
    """Each query's top documents by the model alone (the one ``env`` configures, the bundled
    one by default, with its own prefixes): whole documents, exact cosine."""
    import numpy as np

    from memory_pipeline.config import EmbedSettings
    from memory_pipeline.embedders.factory import build_embedder

    model = build_embedder(EmbedSettings.from_env(env))
    docs = np.asarray(model.embed_documents([" ".join(p for p in corpus[d] if p) for d in ids]))
    qids = list(texts)
    qs = np.stack([np.asarray(model.embed_query(texts[q])) for q in qids])
    sims = qs @ docs.T
    return {q: [ids[j] for j in np.argsort(-sims[i])[: LIMIT + 1]] for i, q in enumerate(qids)}


def product_rankings(home: Path, corpus, ids, texts, args) -> tuple[dict, dict]:
    """Each row's (fused, keyword, vector) document rankings through the product's commands."""
    env = environment(home, args)
    episodes = home / "documents.jsonl"
    write_episodes(episodes, corpus, ids, args.body)
    started = time.perf_counter()
    command(env, "ingest", str(episodes))
    indexed = json.loads(command(env, "index", "--json"))
    figures = {"index_seconds": round(time.perf_counter() - started, 1), **_counts(indexed)}
    source = _sources(env)
    lines = [
        json.dumps({"memory": MEMORY, "query": texts[q], "limit": LIMIT}
                   | ({"channels": ch} if ch else {}), ensure_ascii=False)
        for q in texts for ch in ROWS.values()
    ]  # fmt: skip
    started = time.perf_counter()
    out = command(env, "search", "--batch", "-", stdin="\n".join(lines) + "\n")
    figures["search_seconds"] = round(time.perf_counter() - started, 1)
    answers = iter(json.loads(line) for line in out.splitlines() if line.strip())
    rankings: dict[str, dict[str, list[str]]] = {row: {} for row in ROWS}
    for q in texts:
        for row in ROWS:
            doc = next(answers)
            if "error" in doc:
                raise SystemExit(f"{q}: {doc['error']}")
            rankings[row][q] = [source[r["episodeId"]] for r in doc["results"]]
    return rankings, figures


def _counts(indexed: dict) -> dict:
    return {k: indexed.get(k) for k in ("episodes", "chunks", "windows") if k in indexed}


def _sources(env) -> dict[int, str]:
    """Episode id -> document id, read back page by page from ``memory-pipeline episodes``."""
    found: dict[int, str] = {}
    before: list[str] = []
    while True:
        page = json.loads(
            command(env, "episodes", "--memory", MEMORY, "--limit", "1000", "--json", *before)
        )["episodes"]
        for e in page:
            found[e["id"]] = e["source"].removeprefix("beir:")
        if len(page) < 1000:
            return found
        before = ["--before", str(page[-1]["id"])]


def score(rankings: dict, qrels: dict) -> dict:
    """Mean nDCG@10 of each row; a document that is the query itself is skipped (ArguAna)."""
    out = {}
    for row, ranked in rankings.items():
        per = [ndcg([d for d in ranked[q] if d != q], qrels[q]) for q in ranked]
        out[row] = round(sum(per) / len(per), 4) if per else 0.0
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, required=True, help="a BEIR dataset folder")
    p.add_argument("--split", default="test", help="qrels/SPLIT.tsv (default test)")
    p.add_argument("--queries", type=int, help="a seeded subset of this many queries")
    p.add_argument("--docs", type=int, help="their judged documents, then distractors, to N")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--body", choices=("markdown", "plain"), default="markdown")
    p.add_argument("--skip-bare", action="store_true", help="no bundled-model reference")
    p.add_argument("--json", type=Path, help="write every figure here")
    p.add_argument("--keep", type=Path, help="build the database here and keep it")
    p.add_argument("--embed-url", help="an OpenAI-compatible server on loopback instead")
    p.add_argument("--embed-model", default="loopback")
    p.add_argument("--embed-dim", type=int, default=384)
    args = p.parse_args(argv)
    corpus, queries, qrels = load(args.data, args.split)
    qids, ids = subset(corpus, qrels, args.queries, args.docs, args.seed)
    texts = {q: queries[q] for q in qids}
    print(f"{len(ids)} documents, {len(qids)} queries (seed {args.seed})", flush=True)
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        rankings, figures = product_rankings(args.keep, corpus, ids, texts, args)
    else:
        with tempfile.TemporaryDirectory(prefix="documents-") as home:
            rankings, figures = product_rankings(Path(home), corpus, ids, texts, args)
    rankings["bm25"] = bm25_rankings(corpus, ids, texts)
    if not args.skip_bare:
        env = environment(args.keep or Path(tempfile.gettempdir()), args)
        rankings["bare model"] = bare_model_rankings(corpus, ids, texts, env)
    figures.update(documents=len(ids), queries=len(qids), ndcg_at_10=score(rankings, qrels))
    print(json.dumps(figures, indent=2))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
