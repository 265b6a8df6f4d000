"""The guard on model changes: a new generation that scores worse on the labelled questions does
not serve (search answers as before), ``accept_worse`` switches knowingly; a generation as good
switches as before."""

from __future__ import annotations

import hashlib
import random

import pytest

from memory_pipeline import Memory
from memory_pipeline.storage.profiles_store import active_profile
from memory_pipeline_tests.helpers import QWEN
from memory_pipeline_tests.support.loopback import LoopbackEmbeddingServer

TOPICS = [
    ("Sourdough", "sourdough starter rye flour warm kitchen loaf crust"),
    ("Dentist", "dentist cavity molar filling anaesthetic appointment"),
    ("Running", "half marathon intervals tempo long run calf"),
    ("Ledger", "ledger postings double entry invoices reversal cents"),
    ("Flat", "flat rent landlord boiler keys deposit lease"),
    ("Zagreb", "zagreb trip tram museum grandmother cake"),
    ("Book club", "book club novel gender winter planet envoy"),
    ("Coffee", "coffee caffeine sleep waking early morning"),
]
RANDOM_MODEL = "random-embed"


def random_vectors(texts: list[str]) -> list[list[float]]:
    """A deliberately worse model: a fixed random unit vector per text, blind to meaning."""
    out = []
    for text in texts:
        rng = random.Random(hashlib.sha256(text.encode()).digest())
        v = [rng.gauss(0, 1) for _ in range(512)]
        norm = sum(x * x for x in v) ** 0.5
        out.append([x / norm for x in v])
    return out


@pytest.fixture
def good(db_url):
    with LoopbackEmbeddingServer(dim=512, models={QWEN}) as server:
        with Memory.open(
            url=db_url, embed_provider="ollama", embed_url=server.url, record_in_dagster=False
        ) as mem:
            mem.add(
                [
                    {
                        "memory": "mara",
                        "kind": "note",
                        "title": t,
                        "occurred_at": "2026-05-01",
                        "body": f"A note on {t.lower()}: {words}.",
                    }  # fmt: skip
                    for t, words in TOPICS
                ]
            )
            mem.index()
            # Paraphrases that share a word or two with their note: the vector channel finds them.
            report = mem.add_questions(
                [
                    {
                        "question": f"what about {words.split()[1]} {words.split()[2]}?",
                        "expect_title": t,
                    }  # fmt: skip
                    for t, words in TOPICS
                ],
                memory="mara",
            )
            assert not report.rejections
            [scored] = mem.score_questions()  # the serving generation's figures, recorded
            assert scored.channels["vector"].first_at_1 >= 0.75
            yield mem, server


def _worse(db_url, server_url: str) -> Memory:
    return Memory.open(
        url=db_url,
        embed_provider="ollama",
        embed_model=RANDOM_MODEL,
        embed_dim=512,
        embed_url=server_url,
        record_in_dagster=False,
    )


def test_a_worse_model_is_refused_and_accept_worse_switches(db_url, good):
    mem, _ = good
    before = [r.title for r in mem.search("mara", "rye flour starter").results]
    with LoopbackEmbeddingServer(
        dim=512, models={RANDOM_MODEL}, vector_fn=random_vectors
    ) as random_server:
        with _worse(db_url, random_server.url) as worse:
            refused = worse.index()
            with worse.db.connection() as conn:
                still = active_profile(conn)
            after = [r.title for r in mem.search("mara", "rye flour starter").results]

            accepted = worse.index(accept_worse=True)
            with worse.db.connection() as conn:
                now = active_profile(conn)

    verdict = refused.quality_guard
    assert refused.switched is None and verdict["blocked"] is True
    assert still.model == QWEN  # the serving generation stays the old one
    assert after == before  # and search answers as before
    [memory] = verdict["memories"]
    assert memory["servingFigures"].startswith("recorded ")
    assert memory["serving"]["vector"]["first_at_1"] >= 0.75
    assert memory["candidate"]["vector"]["first_at_1"] < memory["serving"]["vector"]["first_at_1"]
    assert any(f.startswith("vector first_at_1") for f in memory["fallen"])
    assert "refused" in verdict["message"] and "--accept-worse" in verdict["message"]
    assert accepted.switched and "random-embed" in accepted.switched
    assert accepted.quality_guard["acceptedWorse"] and not accepted.quality_guard["blocked"]
    assert now.model == RANDOM_MODEL


def test_a_reindex_as_good_switches_with_the_guard_scoring_both_now(good):
    mem, _ = good
    from memory_pipeline.indexing import generations

    generations.reindex(mem.db, mem.embedder)
    report = mem.index()
    assert report.switched and "generation 2" in report.switched
    verdict = report.quality_guard
    assert verdict["blocked"] is False and verdict["memories"][0]["servingFigures"] == "scored now"
    assert verdict["memories"][0]["fallen"] == []
