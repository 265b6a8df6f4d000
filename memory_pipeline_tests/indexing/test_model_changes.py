"""Safe model changes: the canary, reindexing into a new generation, switching and rolling back."""

from __future__ import annotations

import pytest

from memory_pipeline.domain.policies import load_policies
from memory_pipeline.errors import EmbedderUnavailable, ModelRefused
from memory_pipeline.indexing.pending import pending_count
from memory_pipeline.indexing.until_done import index_pending
from memory_pipeline.ingest import ingest_paths
from memory_pipeline.search.service import SearchService
from memory_pipeline.storage import profiles_store
from memory_pipeline.storage.profiles_store import active_profile, get_generation
from memory_pipeline_tests.helpers import count, episode, ollama_embedder, write_jsonl
from memory_pipeline_tests.support.loopback import LoopbackEmbeddingServer, hashing_vector


def swapped_model(flavour: str, texts: list[str]) -> dict:
    """Same name, different weights: vectors of other texts."""
    return {
        "model": "qwen3-embedding:0.6b",
        "embeddings": [hashing_vector(t[::-1] + " v2", 1024) for t in texts],
    }


@pytest.fixture
def indexed(db, tmp_path):
    ingest_paths(db, [write_jsonl(tmp_path / "e.jsonl", [episode(i) for i in range(6)])])
    with LoopbackEmbeddingServer(dim=1024) as server:
        embedder = ollama_embedder(server.url)
        report = index_pending(db, embedder)
        yield server, embedder, report


def serving(db):
    with db.connection() as conn:
        profile = active_profile(conn)
        return profile, get_generation(conn, profile.id, profile.generation)


def test_first_pass_records_the_canary_and_later_passes_check_it(db, indexed, tmp_path):
    server, embedder, first = indexed
    assert first.canary_cosine is None  # recorded now
    profile, generation = serving(db)
    assert generation.state == "ready" and generation.canary_vector is not None
    ingest_paths(db, [write_jsonl(tmp_path / "more.jsonl", [episode(40)])])
    second = index_pending(db, embedder)
    assert second.canary_cosine == pytest.approx(1.0, abs=1e-3) and second.episodes == 1


def test_a_silently_swapped_model_is_refused_and_search_degrades(db, indexed, tmp_path):
    server, embedder, _ = indexed
    ingest_paths(db, [write_jsonl(tmp_path / "more.jsonl", [episode(41)])])
    vectors_before = count(db, "SELECT count(*) FROM embeddings")
    server.answer_override = swapped_model
    with pytest.raises(ModelRefused) as info:
        index_pending(db, embedder)
    message = str(info.value)
    assert "changed under the same name" in message and "memory-pipeline reindex" in message
    assert count(db, "SELECT count(*) FROM embeddings") == vectors_before
    _, generation = serving(db)
    assert generation.state == "stale"
    response = SearchService(db, load_policies(), embedder=embedder).search("alice", "garden")
    assert response.vector_status.startswith("unavailable: the model behind")
    assert response.results  # keyword still answers
    # Serving the original model again heals the generation.
    server.answer_override = None
    assert index_pending(db, embedder).episodes == 1
    assert serving(db)[1].state == "ready"


def test_reindex_builds_a_new_generation_while_search_serves_the_old_one(db, indexed):
    server, embedder, _ = indexed
    old_vectors = count(db, "SELECT count(*) FROM embeddings")
    with db.connection() as conn:
        stored, resumed = profiles_store.start_reindex(conn, embedder.profile)
    assert (stored.generation, stored.building_generation, resumed) == (1, 2, False)
    assert pending_count(db, embedder) == 6
    # Interrupted half-way: the model server dies after a few requests (the canary, then batches
    # of two inputs: chunk texts and their paragraph windows).
    server.fail_after = server.served + 5
    with pytest.raises(EmbedderUnavailable):
        index_pending(db, ollama_embedder(server.url, batch_size=2))
    assert 0 < pending_count(db, embedder) < 6
    assert serving(db)[0].generation == 1  # search still on generation 1
    server.fail_after = None
    hits = SearchService(db, load_policies(), embedder=embedder).search("alice", "garden")
    assert hits.vector_status == "ok" and hits.results
    with db.connection() as conn:
        stored, resumed = profiles_store.start_reindex(conn, embedder.profile)
    assert resumed and stored.building_generation == 2
    report = index_pending(db, embedder)
    assert (
        report.switched
        == "search now uses ollama/qwen3-embedding:0.6b@512 generation 2 (was generation 1)"
    )
    profile, generation = serving(db)
    assert (profile.generation, profile.building_generation, generation.state) == (2, None, "ready")
    assert count(db, "SELECT count(*) FROM embeddings") == 2 * old_vectors  # the old ones stay
    with db.connection() as conn:
        assert (
            profiles_store.rollback(conn)
            == "search now uses ollama/qwen3-embedding:0.6b@512 generation 1 (was generation 2)"
        )
        with pytest.raises(LookupError):
            profiles_store.rollback(conn)
    assert serving(db)[0].generation == 1


def test_a_new_profile_takes_over_only_when_complete(db, indexed):
    server, _, _ = indexed
    other = ollama_embedder(server.url, dim=256, model="nomic-embed-text", batch_size=2)
    server.fail_after = server.served + 2
    with pytest.raises(EmbedderUnavailable):
        index_pending(db, other)
    assert serving(db)[0].name == "ollama/qwen3-embedding:0.6b@512"
    server.fail_after = None
    report = index_pending(db, other)
    assert report.switched.startswith("search now uses ollama/nomic-embed-text@256 generation 1")
    assert serving(db)[0].name == "ollama/nomic-embed-text@256"


def test_reindex_and_rollback_jobs_from_the_launchpad(db, db_url, indexed):
    from memory_pipeline.defs.model_changes import rollback_generation_job, start_reindex_job
    from memory_pipeline.orchestration.resources import MemoryResource

    server, embedder, _ = indexed
    resources = {
        "memory_api": MemoryResource(url=db_url, embed_provider="ollama", embed_url=server.url)
    }
    started = start_reindex_job.execute_in_process(resources=resources)
    assert started.output_for_node("start_reindex_op") == {
        "profile": "ollama/qwen3-embedding:0.6b@512",
        "generation": 2,
        "resumed": False,
    }
    assert index_pending(db, embedder).switched.endswith("generation 2 (was generation 1)")
    rolled = rollback_generation_job.execute_in_process(resources=resources)
    assert rolled.output_for_node("rollback_generation_op").endswith(
        "generation 1 (was generation 2)"
    )
    nothing = rollback_generation_job.execute_in_process(resources=resources, raise_on_error=False)
    assert not nothing.success


def test_rollback_says_when_the_earlier_generation_is_stale(db, indexed):
    _, embedder, _ = indexed
    with db.connection() as conn:
        stored, _ = profiles_store.start_reindex(conn, embedder.profile)
    index_pending(db, embedder)  # generation 2 serves
    with db.connection() as conn:
        profiles_store.mark_stale(conn, stored.id, 1, "the canary moved")
        with pytest.raises(LookupError) as refused:
            profiles_store.rollback(conn)
    assert str(refused.value) == (
        "nothing to roll back: generation 1 of ollama/qwen3-embedding:0.6b@512 is stale (the canary moved); "
        "its vectors are not served again"
    )
    assert serving(db)[0].generation == 2
