"""The documents benchmark still runs: a tiny corpus in BEIR's layout through the product's
commands against a loopback model server, and its scoring functions on exact examples."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

from memory_pipeline_tests.helpers import run_benchmark
from memory_pipeline_tests.support.loopback import LoopbackEmbeddingServer

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import bench_documents  # noqa: E402  (a benchmark script, importable for its functions)

DOCS = {
    "d1": ("Statins and breast cancer", "Cholesterol drugs showed no link to breast tumours."),
    "d2": ("Coffee and sleep", "Caffeine late in the day delays sleep by an hour."),
    "d3": ("Walking after meals", "A short walk lowers blood sugar after dinner."),
    "d4": ("Garlic", "Garlic supplements did not lower blood pressure."),
    "d5": ("Sleep and memory", "Deep sleep consolidates what was learned in the day."),
    "d6": ("", "An untitled note about tea, caffeine and sleep."),
}
QUERIES = {"q1": "do statins cause breast cancer", "q2": "caffeine sleep", "q3": "blood sugar walk"}
QRELS = [("q1", "d1", 2), ("q2", "d2", 2), ("q2", "d5", 1), ("q2", "d6", 1), ("q3", "d3", 1)]


def beir_folder(root: Path) -> Path:
    (root / "qrels").mkdir(parents=True)
    with (root / "corpus.jsonl").open("w") as f:
        for did, (title, text) in DOCS.items():
            f.write(json.dumps({"_id": did, "title": title, "text": text}) + "\n")
    with (root / "queries.jsonl").open("w") as f:
        for qid, text in QUERIES.items():
            f.write(json.dumps({"_id": qid, "text": text}) + "\n")
    lines = ["query-id\tcorpus-id\tscore"] + [f"{q}\t{d}\t{g}" for q, d, g in QRELS]
    (root / "qrels" / "test.tsv").write_text("\n".join(lines) + "\n")
    return root


def test_ndcg_counts_graded_gains_against_the_ideal_order():
    judged = {"a": 2, "b": 1}
    assert bench_documents.ndcg(["a", "b", "x"], judged) == pytest.approx(1.0)
    ideal = 2 + 1 / math.log2(3)
    assert bench_documents.ndcg(["x", "a"], judged) == pytest.approx((2 / math.log2(3)) / ideal)
    assert bench_documents.ndcg(["x"], judged) == 0.0


def test_a_seeded_subset_keeps_every_judged_document_and_fills_up_with_others(tmp_path):
    corpus, queries, qrels = bench_documents.load(beir_folder(tmp_path), "test")
    assert set(qrels) == {"q1", "q2", "q3"} and qrels["q2"] == {"d2": 2, "d5": 1, "d6": 1}
    qids, ids = bench_documents.subset(corpus, qrels, queries=1, docs=4, seed=7)
    assert len(qids) == 1 and len(ids) == 4 and set(qrels[qids[0]]) <= set(ids)
    assert bench_documents.subset(corpus, qrels, 1, 4, 7) == (qids, ids)  # seeded
    assert bench_documents.body_of("T", "x", "markdown") == "# T\n\nx"
    assert bench_documents.body_of("", "x", "markdown") == "x"


def test_bm25_puts_the_document_holding_the_rare_words_first(tmp_path):
    corpus, _, _ = bench_documents.load(beir_folder(tmp_path), "test")
    ranked = bench_documents.bm25_rankings(corpus, sorted(corpus), {"q": "breast statins"})
    assert ranked["q"][0] == "d1" and len(ranked["q"]) == 1


@pytest.mark.slow
def test_bench_documents_scores_every_row_through_the_product(tmp_path):
    out = tmp_path / "documents.json"
    data = beir_folder(tmp_path / "beir")
    with LoopbackEmbeddingServer(dim=384) as server:
        done = run_benchmark(
            "bench_documents.py", "--data", str(data), "--embed-url", server.url, "--json", str(out)
        )
    assert done.returncode == 0, done.stderr
    figures = json.loads(out.read_text())
    assert figures["documents"] == 6 and figures["queries"] == 3 and figures["episodes"] == 6
    scores = figures["ndcg_at_10"]
    assert set(scores) == {"fused", "keyword", "vector", "bm25", "bare model"}
    assert all(0.0 <= v <= 1.0 for v in scores.values())
    assert scores["keyword"] > 0.5 and scores["bm25"] > 0.5
