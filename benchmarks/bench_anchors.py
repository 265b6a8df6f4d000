#!/usr/bin/env python
"""Heading anchors on and off: recall of the answering passage over long documents, at the same
returned results.

Data (``benchmarks/data/anchors/``, written for this benchmark, not generated): four long
Markdown documents with parallel chapters (two router models, four crops, three cities, a club's
rules), in which the paragraphs rarely repeat the name of the chapter they are in, and
``questions.jsonl``: questions written by hand, each with ``answer``, a phrase that occurs exactly
once in the corpus, inside the paragraph that answers it. The script refuses to run if an answer
phrase is missing or occurs twice.

Both conditions index the same four files with the same model, each into its own memory on one
fresh database: ``anchors`` with heading anchors (``MEMORY_PIPELINE_HEADING_ANCHORS=on``, the
default: the model reads ``Title > Section > Subsection`` before each chunk and each paragraph
window; the keyword index holds them), ``plain`` without (``off``). The chunks themselves are
identical (same texts, offsets and ids). Model: the bundled local model (multilingual-e5-small,
384 dimensions), or ``--embed-url`` for an OpenAI-compatible server (loopback only).

Scoring: each question is searched in each memory through ``SearchService`` (no reranker,
``record=False``, ``limit`` 5, ``sew=False``: chunks, not sewn passages, since the documents are
short enough that a sewn passage of 5 results is often a whole document), once per row: vector
alone, keyword alone, the fused default. A result answers when the answer phrase is in its text;
recall@k = the share of questions answered by one of the first k results, k = 1, 3, 5. Both
conditions return the same chunks' texts, so k results are about the same characters; the mean
characters returned per query at 5 results (chunk text plus the anchor shown with it) is printed
beside. Nothing is tuned on these questions: there are no weights to choose, so every question
is scored.

    python benchmarks/bench_anchors.py                 # ~3-5 min on 2 cores (indexing twice)
    python benchmarks/bench_anchors.py --quick         # 12 questions, a smoke test
    python benchmarks/bench_anchors.py --json anchors.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from memory_pipeline.domain.policies import load_policies
from memory_pipeline.indexing.until_done import index_pending
from memory_pipeline.ingest import ingest_paths
from memory_pipeline.search.service import SearchService
from memory_pipeline.storage.embedded import exit_cleanly_on_sigterm

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_databases import Databases, fresh_database  # sibling modules (benchmarks/)
from bench_embedders import add_arguments, embedder_for

DATA = Path(__file__).resolve().parent / "data" / "anchors"
KS = (1, 3, 5)
ROWS = {"vector": ("vector",), "keyword": ("keyword",), "fused default": None}
CONDITIONS = {"anchors": True, "plain": False}


def load(data: Path) -> tuple[list[Path], list[dict]]:
    documents = sorted(data.glob("*.md"))
    corpus = {path: path.read_text(encoding="utf-8") for path in documents}
    questions = [
        json.loads(line)
        for line in (data / "questions.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    for q in questions:
        found = sum(text.count(q["answer"]) for text in corpus.values())
        if found != 1:
            raise SystemExit(
                f"answer phrase {q['answer']!r} occurs {found} times in the corpus (must be once)"
            )
    return documents, questions


def index_condition(db, documents, memory: str, anchors: bool, args) -> dict:
    report = ingest_paths(db, documents, memory=memory)
    if report.rejections:
        raise SystemExit("\n".join(map(str, report.rejections)))
    embedder = embedder_for(args, heading_anchors=anchors)
    started = time.perf_counter()
    indexed = index_pending(db, embedder)  # only this memory's episodes are pending
    seconds = time.perf_counter() - started
    with db.connection() as conn:
        chunks, anchored = conn.execute(
            "SELECT count(*), count(*) FILTER (WHERE anchor <> '') FROM chunks WHERE memory = %s",
            (memory,),
        ).fetchone()
    print(
        f"{memory}: {indexed.episodes} documents, {chunks} chunks ({anchored} with an anchor), "
        f"{indexed.vectors} chunk vectors + {indexed.windows} window vectors in {seconds:.0f}s",
        flush=True,
    )
    return {
        "chunks": chunks,
        "anchored_chunks": anchored,
        "index_seconds": round(seconds, 1),
        "embedder": embedder,
    }


def score(service: SearchService, memory: str, questions: list[dict], channels) -> dict:
    hits = {k: 0 for k in KS}
    chars, latencies = [], []
    for q in questions:
        started = time.perf_counter()
        response = service.search(memory, q["q"], limit=max(KS), channels=channels, sew=False)
        latencies.append((time.perf_counter() - started) * 1000)
        texts = [r.text for r in response.results]
        chars.append(sum(len(r.text) + len(r.anchor) for r in response.results))
        first = next((i for i, text in enumerate(texts) if q["answer"] in text), None)
        for k in KS:
            hits[k] += first is not None and first < k
    n = len(questions)
    return {
        **{f"recall@{k}": round(hits[k] / n, 3) for k in KS},
        "chars_per_query": round(statistics.mean(chars)),
        "p50_ms": round(statistics.median(latencies), 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="the first 12 questions only")
    parser.add_argument("--json", type=Path, help="write every figure here")
    add_arguments(parser)
    args = parser.parse_args()
    exit_cleanly_on_sigterm()
    documents, questions = load(DATA)
    if args.quick:
        questions = questions[:12]
    print(
        f"{len(documents)} documents, {sum(len(p.read_text()) for p in documents):,} characters, "
        f"{len(questions)} questions",
        flush=True,
    )
    figures: dict = {"questions": len(questions), "conditions": {}}
    dbs = Databases()
    try:
        with fresh_database(dbs) as db:
            for memory, anchors in CONDITIONS.items():
                info = index_condition(db, documents, memory, anchors, args)
                service = SearchService(
                    db, load_policies(), embedder=info.pop("embedder"), record=False
                )
                info["rows"] = {
                    name: score(service, memory, questions, channels)
                    for name, channels in ROWS.items()
                }
                figures["conditions"][memory] = info
    finally:
        dbs.close()

    print(
        f"\n{'row':15} {'condition':9} "
        + " ".join(f"{'@' + str(k):>6}" for k in KS)
        + f" {'chars/q':>8} {'p50 ms':>7}"
    )
    for row in ROWS:
        for memory in CONDITIONS:
            r = figures["conditions"][memory]["rows"][row]
            print(
                f"{row:15} {memory:9} "
                + " ".join(f"{r[f'recall@{k}']:6.3f}" for k in KS)
                + f" {r['chars_per_query']:8,} {r['p50_ms']:7.1f}"
            )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
