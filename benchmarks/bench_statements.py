#!/usr/bin/env python
"""Statements that cite no passage, in fused search: does the statement that answers a question
come first, and do statements take the first place from the episodes of questions they do not
answer?

Data: the sample corpus (memory ``mara``, the 30 episodes ``memory-pipeline demo`` ingests, with
its 28 labelled questions), and ``benchmarks/data/statements/statements.jsonl``: statements written
by hand for it, each with the questions, asked in other words, that it answers (two answer none).
None cites a passage, so each is a result of its own. Model: the bundled local model, or
``--embed-url`` for an OpenAI-compatible server on loopback.

For each question the statement's rank among the fused keys is replayed from the channels'
candidates (``SearchService.candidates``) two ways, over the same lists:
``joined`` (as search ranks today: the vector and keyword channels score the statement as they
score chunks and place it among them, ``domain.observations.join_chunk_channel``) and
``own channel`` (the statement found only by its own channel, as before: the same lists with the
statements taken out of vector and keyword); the chunks' scores are the same in both. Then the
real search (default policy, 8 results) is run and the statement's place among its results
counted. The labelled questions are asked before and after the statements are saved: how many
expected episodes are first, and which first places went to a statement. Nothing is tuned here.

    python benchmarks/bench_statements.py                 # ~2 min on 2 cores (indexing the sample corpus)
    python benchmarks/bench_statements.py --json statements.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from memory_pipeline.cli.commands import SAMPLE_CORPUS, SAMPLE_EPISODES
from memory_pipeline.domain import fusion
from memory_pipeline.domain.observations import make_observation
from memory_pipeline.domain.policies import load_policies
from memory_pipeline.indexing.until_done import index_pending
from memory_pipeline.ingest import ingest_paths
from memory_pipeline.search.service import SearchService
from memory_pipeline.statements import save as save_statement
from memory_pipeline.storage import entities_store, observations_store, search_store
from memory_pipeline.storage.embedded import exit_cleanly_on_sigterm

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests' store oracles
from bench_databases import Databases, fresh_database  # sibling modules (benchmarks/)
from bench_embedders import add_arguments, embedder_for

from memory_pipeline_tests.support import stores

DATA = Path(__file__).resolve().parent / "data" / "statements" / "statements.jsonl"
MEMORY = "mara"
LIMIT = 8
CHUNK_CHANNELS = ("vector", "keyword")


def is_statement(key: str) -> bool:
    return key.startswith(("observation:", "belief:"))


def load(path: Path) -> list[dict]:
    return [
        json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]


def replayed_ranks(db, service: SearchService, question: str, key: str) -> dict:
    """``key``'s 1-based place among the fused keys of ``question``'s candidates (None: not a
    candidate), and how many chunks (not statements) come before it: ``joined``, with the
    statements left in the chunk channels; ``own_channel``, with them taken out. One read of the
    candidates and their facts serves both."""
    ranked = service.candidates(MEMORY, question)
    keys = {k for hits in ranked.values() for k, _ in hits}
    with db.connection() as conn:
        rows = search_store.chunk_rows(
            conn, MEMORY, sorted(k for k in keys if not is_statement(k)), texts=False
        )
        stored = observations_store.rows(
            conn, MEMORY, sorted(int(k.split(":")[1]) for k in keys if is_statement(k))
        )
    facts = {k: fusion.ChunkFacts(r.salience, r.occurred_at) for k, r in rows.items()}
    facts.update(
        {
            f"{o.kind}:{o.id}": fusion.ChunkFacts(o.confidence, o.observed_at)
            for o in stored.values()
        }
    )
    now = service.clock()
    own_channel = {
        ch: [hit for hit in hits if not (ch in CHUNK_CHANNELS and is_statement(hit[0]))]
        for ch, hits in ranked.items()
    }
    out = {}
    for name, lists in (("joined", ranked), ("own_channel", own_channel)):
        fused = fusion.fuse(
            {ch: [k for k, _ in hits] for ch, hits in lists.items()},
            facts,
            now=now,
            scores={ch: [s for _, s in hits] for ch, hits in lists.items()},
        )
        order = [f.key for f in fused]
        place = order.index(key) if key in order else len(order)
        out[name] = (
            place + 1 if key in order else None,
            sum(not is_statement(k) for k in order[:place]),
        )
    return out


def labelled(service: SearchService) -> dict:
    questions = json.loads((SAMPLE_CORPUS / "questions.json").read_text(encoding="utf-8"))
    firsts, taken = 0, []
    for q in questions:
        first = service.search(MEMORY, q["query"], limit=1).results[0]
        firsts += first.title == q["expect_title"]
        if first.kind in ("observation", "belief"):
            taken.append({"query": q["query"], "statement": first.text})
    return {"questions": len(questions), "expected_first": firsts, "first_is_a_statement": taken}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="write every figure here")
    add_arguments(parser)
    args = parser.parse_args()
    exit_cleanly_on_sigterm()
    statements = load(DATA)
    figures: dict = {"statements": len(statements), "questions": []}
    dbs = Databases()
    try:
        with fresh_database(dbs) as db:
            started = time.perf_counter()
            report = ingest_paths(db, SAMPLE_EPISODES)
            if report.rejections:
                raise SystemExit("\n".join(map(str, report.rejections)))
            embedder = embedder_for(args)
            index_pending(db, embedder)
            with db.connection() as conn:
                stores.refresh_memories(conn, [MEMORY], entities_store.EntityReport())
            print(
                f"sample corpus: {report.inserted} episodes indexed in {time.perf_counter() - started:.0f}s",
                flush=True,
            )
            service = SearchService(
                db, load_policies(), embedder=embedder, reranker=None, record=False
            )
            figures["labelled_without_statements"] = labelled(service)

            keys = {}
            for s in statements:
                outcome = save_statement(
                    db,
                    make_observation(memory=MEMORY, text=s["text"]),
                    embedder=embedder,
                    decision="add",
                )
                keys[s["text"]] = f"observation:{outcome.saved_id}"
            index_pending(db, embedder)  # a statement saved without its vector gets it here

            for s in statements:
                key = keys[s["text"]]
                for question in s["questions"]:
                    results = service.search(MEMORY, question, limit=LIMIT).results
                    place = next((i + 1 for i, r in enumerate(results) if r.chunk_id == key), None)
                    replayed = replayed_ranks(db, service, question, key)
                    (joined_rank, joined_chunks), (own_rank, own_chunks) = (
                        replayed["joined"],
                        replayed["own_channel"],
                    )
                    figures["questions"].append(
                        {
                            "question": question,
                            "statement": s["text"],
                            "search_place": place,
                            "joined_rank": joined_rank,
                            "own_channel_rank": own_rank,
                            "chunks_ahead_joined": joined_chunks,
                            "chunks_ahead_own_channel": own_chunks,
                        }
                    )
            figures["labelled_with_statements"] = labelled(service)
    finally:
        dbs.close()

    rows = figures["questions"]
    print(f"\n{'question':58} {'search':>6} {'joined':>6} {'own':>5}")
    for r in rows:
        show = lambda v: "-" if v is None else str(v)  # noqa: E731
        print(
            f"{r['question'][:58]:58} {show(r['search_place']):>6} {show(r['joined_rank']):>6} "
            f"{show(r['own_channel_rank']):>5}"
        )
    n = len(rows)
    summary = {
        "questions": n,
        "search_first": sum(r["search_place"] == 1 for r in rows),
        "search_in_results": sum(r["search_place"] is not None for r in rows),
        "joined_first": sum(r["joined_rank"] == 1 for r in rows),
        "joined_in_8": sum(
            r["joined_rank"] is not None and r["joined_rank"] <= LIMIT for r in rows
        ),
        "own_channel_first": sum(r["own_channel_rank"] == 1 for r in rows),
        "own_channel_in_8": sum(
            r["own_channel_rank"] is not None and r["own_channel_rank"] <= LIMIT for r in rows
        ),
    }
    figures["summary"] = summary
    print(
        f"\nthe answering statement first: search {summary['search_first']}/{n}, joined {summary['joined_first']}/{n}, "
        f"own channel only {summary['own_channel_first']}/{n}; within {LIMIT}: search {summary['search_in_results']}/{n}, "
        f"joined {summary['joined_in_8']}/{n}, own channel only {summary['own_channel_in_8']}/{n}"
    )
    for label in ("labelled_without_statements", "labelled_with_statements"):
        lab = figures[label]
        print(
            f"{label.replace('_', ' ')}: expected episode first {lab['expected_first']}/{lab['questions']}"
            + "".join(
                f"\n  first is a statement: {t['query']!r} -> {t['statement']!r}"
                for t in lab["first_is_a_statement"]
            )
        )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
