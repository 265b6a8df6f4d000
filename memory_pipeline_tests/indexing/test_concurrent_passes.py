"""Index passes and ingests running at the same time: claims, the canary that proves a pass's vectors,
calls in flight, and ingests that cannot deadlock (issue #11 items 2 and 7, issue #12)."""

from __future__ import annotations

import threading
from collections import Counter

import numpy as np
import pytest

from memory_pipeline.errors import EmbedderUnavailable, ModelRefused
from memory_pipeline.indexing import claims, index_pass, proof
from memory_pipeline.indexing.canary import CANARY_TEXT
from memory_pipeline.indexing.pending import pending_count
from memory_pipeline.indexing.until_done import index_pending
from memory_pipeline.ingest import ingest_paths
from memory_pipeline.storage import index_store, profiles_store
from memory_pipeline_tests.helpers import (
    count,
    episode,
    ollama_embedder,
    split_calibration,
    write_jsonl,
)
from memory_pipeline_tests.support.loopback import LoopbackEmbeddingServer, hashing_vector


def run_in_threads(*calls):
    """Run the calls at once; their results (or the exception each raised), in order."""
    results: list[object] = [None] * len(calls)
    start = threading.Barrier(len(calls))

    def run(i, call):
        start.wait()
        try:
            results[i] = call()
        except Exception as exc:  # handed back to the test
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(calls)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return results


def embedded_texts(server) -> Counter:
    """The texts sent to the model, without the canary and the calibration's probe set (which
    ``index_pending`` embeds once a generation, after its passes)."""
    _, inputs, _ = split_calibration(server)
    return Counter(t for texts in inputs for t in texts if t != CANARY_TEXT)


def test_two_passes_on_one_backlog_embed_each_text_once_and_report_only_their_own(db, tmp_path):
    ingest_paths(db, [write_jsonl(tmp_path / "e.jsonl", [episode(i) for i in range(40)])])
    with LoopbackEmbeddingServer(dim=1024, delay_s=0.01) as server:
        first, second = (
            ollama_embedder(server.url, batch_size=4),
            ollama_embedder(server.url, batch_size=4),
        )
        reports = run_in_threads(
            lambda: index_pending(db, first),
            lambda: index_pending(db, second),
        )
        texts = embedded_texts(server)
    assert not [r for r in reports if isinstance(r, Exception)], reports
    assert max(texts.values()) == 1  # no text was sent to the model twice
    vectors = count(db, "SELECT count(*) FROM embeddings")
    windows = count(db, "SELECT coalesce(sum(cardinality(windows)), 0) FROM embeddings")
    assert sum(texts.values()) == vectors + windows
    assert sum(r.episodes for r in reports) == 40  # each episode reported by the pass that did it
    assert sum(r.vectors for r in reports) == vectors
    assert pending_count(db, first) == 0


def test_a_pass_skips_episodes_another_pass_has_claimed(db, tmp_path):
    ingest_paths(db, [write_jsonl(tmp_path / "e.jsonl", [episode(i) for i in range(6)])])
    with LoopbackEmbeddingServer(dim=1024) as server, db.connection() as holder:
        embedder = ollama_embedder(server.url)
        held, finished = index_store.claim_episodes(
            holder, None, index_store.pending_ids(holder, None, limit=2)
        )
        assert len(held) == 2 and not finished
        report = index_pending(db, embedder)
        assert report.episodes == 4 and report.pending_after == 2
        assert not {e.body for e in held} & {t for texts in server.inputs for t in texts}
        index_store.release_claims(holder, [e.id for e in held])
        assert index_pending(db, embedder).episodes == 2


def original_then_swapped(after_calls: int):
    """An Ollama answer: the loopback model for ``after_calls`` calls, then other weights under
    the same name (the swap lands between two calls of one pass)."""
    calls = []
    lock = threading.Lock()

    def answer(flavour: str, texts: list[str]) -> dict:
        with lock:
            calls.append(len(texts))
            swapped = len(calls) > after_calls
        vectors = [hashing_vector(t[::-1] + " v2" if swapped else t, 1024) for t in texts]
        return {"model": "qwen3-embedding:0.6b", "embeddings": vectors}

    return answer


def unit(vector) -> np.ndarray:
    v = np.asarray(vector, dtype=np.float32)[:512]
    return v / np.linalg.norm(v)


# canary_every 3: the swapped calls without a canary of their own wait for one sent after them.
@pytest.mark.parametrize("in_flight, canary_every", [(1, 1), (3, 1), (3, 3)])
def test_a_model_swapped_in_the_middle_of_a_pass_leaves_none_of_its_vectors(
    db, tmp_path, in_flight, canary_every
):
    ingest_paths(db, [write_jsonl(tmp_path / "e.jsonl", [episode(i) for i in range(30)])])
    with LoopbackEmbeddingServer(dim=1024) as server:
        embedder = ollama_embedder(server.url, batch_size=4)
        embedder.in_flight, embedder.canary_every = in_flight, canary_every
        server.answer_override = original_then_swapped(after_calls=12)
        with pytest.raises(ModelRefused) as info:
            index_pending(db, embedder)
        message = str(info.value)
        assert "No vector of the changed model was written" in message
        with db.connection() as conn:
            stored = conn.execute(
                "SELECT DISTINCT ON (v.chunk_id) v.embedding, c.text FROM embeddings v "
                "JOIN chunks c USING (memory, chunk_id)"
            ).fetchall()
            profile = profiles_store.get_profile(conn, embedder.profile)
            state = profiles_store.get_generation(conn, profile.id, profile.generation).state
        assert stored, "the calls before the swap were committed"
        for vector, text in stored:  # every stored vector is the original model's
            assert float(np.dot(unit(vector.to_numpy()), unit(hashing_vector(text, 1024)))) > 0.99
        assert state == "stale"
        assert (
            f"The {count(db, 'SELECT count(*) FROM embeddings')} vectors committed before"
            in message
        )
        # The suggested recovery: serve the original model again and re-run.
        server.answer_override = None
        report = index_pending(db, embedder)
    assert report.pending_after == 0
    with db.connection() as conn:
        assert profiles_store.get_generation(conn, profile.id, profile.generation).state == "ready"


def test_a_swap_after_the_last_canary_of_a_pass_is_caught_by_its_closing_canary(
    db, tmp_path, monkeypatch
):
    # No canary rides in the pass's calls (the probe aside): only the one sent after the last
    # call has ended can prove their vectors, and it sees the swapped model.
    monkeypatch.setattr(proof, "CANARY_EVERY_SECONDS", 10_000.0)
    ingest_paths(db, [write_jsonl(tmp_path / "e.jsonl", [episode(i) for i in range(12)])])
    with LoopbackEmbeddingServer(dim=1024) as server:
        embedder = ollama_embedder(server.url, batch_size=4)
        embedder.in_flight, embedder.canary_every = 2, 10_000
        server.answer_override = original_then_swapped(after_calls=3)
        with pytest.raises(ModelRefused):
            index_pending(db, embedder)
        canaries = [i for i, texts in enumerate(server.inputs) if CANARY_TEXT in texts]
        calls = len(server.inputs)
    assert canaries == [0, calls - 1]  # the probe, then one after the last call
    assert count(db, "SELECT count(*) FROM embeddings") == 0
    assert pending_count(db, embedder) == 12


def test_a_pass_writes_episodes_whose_names_are_being_linked_meanwhile(db, tmp_path):
    # Linking (``index``'s entity thread, a Dagster run) inserts rows that reference the episodes
    # and hold FOR KEY SHARE on them until they commit: the pass must not skip those episodes.
    ingest_paths(db, [write_jsonl(tmp_path / "e.jsonl", [episode(i) for i in range(3)])])
    with LoopbackEmbeddingServer(dim=1024) as server, db.connection() as linker:
        with linker.transaction():
            linker.execute(
                "INSERT INTO episode_names (episode_id, memory, names) "
                "SELECT id, memory, '{}' FROM episodes"
            )
            report = index_pending(db, ollama_embedder(server.url))
    assert report.episodes == 3 and report.skipped_locked == 0 and report.pending_after == 0


def test_index_keeps_the_configured_number_of_model_calls_in_flight(db, tmp_path):
    ingest_paths(db, [write_jsonl(tmp_path / "e.jsonl", [episode(i) for i in range(12)])])
    with LoopbackEmbeddingServer(dim=1024, delay_s=0.05) as server:
        embedder = ollama_embedder(server.url, batch_size=2)
        embedder.in_flight = 3
        report = index_pending(db, embedder)
        assert server.max_in_flight == 3
    assert report.pending_after == 0 and report.episodes == 12


def test_two_ingests_of_the_same_rows_in_opposite_order_do_not_deadlock(db, tmp_path):
    rows = [episode(i, paragraphs=1) for i in range(1500)]
    forward = write_jsonl(tmp_path / "forward.jsonl", rows)
    backward = write_jsonl(tmp_path / "backward.jsonl", rows[::-1])
    reports = run_in_threads(
        lambda: ingest_paths(db, [forward]), lambda: ingest_paths(db, [backward])
    )
    assert not [r for r in reports if isinstance(r, Exception)], reports
    assert sum(r.inserted for r in reports) == 1500
    assert count(db, "SELECT count(*) FROM episodes") == 1500


def advisory_locks(db) -> int:
    return count(
        db,
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND database = "
        "(SELECT oid FROM pg_database WHERE datname = current_database())",
    )


def test_one_pass_claims_in_rounds_embeds_each_text_once_and_releases_every_claim(
    db, tmp_path, monkeypatch
):
    monkeypatch.setattr(claims, "CLAIM_ROUND", 5)
    ingest_paths(db, [write_jsonl(tmp_path / "e.jsonl", [episode(i) for i in range(23)])])
    with LoopbackEmbeddingServer(dim=1024, delay_s=0.005) as server:
        embedder = ollama_embedder(server.url, batch_size=3)
        embedder.in_flight = 2
        report = index_pass.index_pass(db, embedder)
        texts = embedded_texts(server)
    assert report.episodes == 23 and report.passes == 1
    assert max(texts.values()) == 1
    assert advisory_locks(db) == 0
    assert pending_count(db, embedder) == 0


def test_a_failed_pass_releases_its_claims(db, tmp_path):
    ingest_paths(db, [write_jsonl(tmp_path / "e.jsonl", [episode(i) for i in range(8)])])
    with LoopbackEmbeddingServer(dim=1024, fail_after=3) as server:
        embedder = ollama_embedder(server.url, batch_size=3)
        with pytest.raises(EmbedderUnavailable):
            index_pending(db, embedder)
    assert advisory_locks(db) == 0
    assert 0 < pending_count(db, embedder) < 8
