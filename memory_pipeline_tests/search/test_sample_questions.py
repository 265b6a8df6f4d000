"""The sample corpus's labelled questions (``sample_corpus/questions.json``): with the bundled model
and the default policy, every question's expected episode is the first result (one, ``SECOND``,
the second).

The README's search examples come from this set. The corpus is indexed once for the module (the
bundled model embeds ~30 episodes; the slowest part of this file).
"""

from __future__ import annotations

import json

import pytest

from memory_pipeline.cli.commands import SAMPLE_CORPUS, SAMPLE_EPISODES
from memory_pipeline.config import EmbedSettings
from memory_pipeline.domain.policies import default_policies_path, load_policies
from memory_pipeline.embedders.factory import build_embedder
from memory_pipeline.indexing.until_done import index_pending
from memory_pipeline.ingest import ingest_paths
from memory_pipeline.search.service import SearchService
from memory_pipeline.storage import entities_store, hnsw_store
from memory_pipeline.storage.database import Database
from memory_pipeline.storage.profiles_store import active_profile
from memory_pipeline_tests.conftest import create_database, drop_database
from memory_pipeline_tests.support import stores

# Indexing 30 episodes with the bundled model takes ~35 s on a quiet 2-core machine and over
# 7 minutes when it is shared by several test runs: more than the suite's 600 s default.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

QUESTIONS = json.loads((SAMPLE_CORPUS / "questions.json").read_text(encoding="utf-8"))


def test_the_labelled_set_is_large_and_points_at_real_episodes():
    titles = {
        row["title"]
        for line in (SAMPLE_CORPUS / "journal.jsonl").read_text(encoding="utf-8").splitlines()
        for row in [json.loads(line)]
    }
    titles |= {
        row["title"]
        for line in (SAMPLE_CORPUS / "chats.jsonl").read_text(encoding="utf-8").splitlines()
        for row in [json.loads(line)]
    }
    notes = "\n".join(p.read_text(encoding="utf-8") for p in (SAMPLE_CORPUS / "notes").glob("*.md"))
    assert len(QUESTIONS) >= 20
    assert len({q["query"] for q in QUESTIONS}) == len(QUESTIONS)
    for q in QUESTIONS:
        assert q["expect_title"] in titles or q["expect_title"] in notes, q
    # The demo's questions are part of the set.
    demo = json.loads((SAMPLE_CORPUS / "demo_queries.json").read_text(encoding="utf-8"))
    assert {d["query"] for d in demo} <= {q["query"] for q in QUESTIONS}


@pytest.fixture(scope="module")
def sample_service(pg_server, template_database):
    name = create_database(pg_server, template_database)
    db = Database.open(pg_server.uri(name))
    try:
        report = ingest_paths(db, SAMPLE_EPISODES)
        assert report.inserted == 30 and not report.rejections
        embedder = build_embedder(EmbedSettings.from_env({}))
        index_pending(db, embedder)
        with db.connection() as conn:
            stores.refresh_memories(conn, ["mara"], entities_store.EntityReport())
            hnsw_store.ensure_index(conn, active_profile(conn))
        yield SearchService(
            db,
            load_policies(default_policies_path()),
            embedder=embedder,
            reranker=None,
            record=False,
        )
    finally:
        db.close()
        drop_database(pg_server, name)


# The one labelled question whose episode is not first under CombSUM fusion (domain.fusion): no
# word of "trainers", "buy" or "hurting my leg" is in "Calf strain on the long run", so BM25 puts
# the training plan ("run" 13 times, "long run" 3) far ahead, and the journal's cosine lead
# (0.859 against 0.830) is not enough to pass it. Rank-only fusion (k 60) had put it first by
# 0.0002. The general changes tried (BM25's constants, depth normalization, the keyword weight
# scaled by the query's matchable idf, pseudo-relevance feedback, the keyword channel weighed by
# its best match's share of the query's attainable BM25; benchmarks/README.md) either never put
# it first or do so only at settings that cost LoCoMo recall. Left as measured, not rewritten to
# pass: it must still be in the first two.
SECOND = {"which trainers did I buy after hurting my leg on a long run?"}


def test_the_known_second_places_are_labelled_questions():
    assert SECOND <= {q["query"] for q in QUESTIONS} and len(SECOND) <= 1


@pytest.mark.parametrize("question", QUESTIONS, ids=[q["query"][:40] for q in QUESTIONS])
def test_expected_episode_ranks_first(sample_service, question):
    response = sample_service.search("mara", question["query"], limit=3)
    assert response.vector_status == "ok"
    titles = [r.title for r in response.results]
    if question["query"] in SECOND:
        assert question["expect_title"] in titles[:2], titles
    else:
        assert titles[0] == question["expect_title"], titles
