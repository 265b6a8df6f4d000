"""The index pass against the real database and a loopback Ollama/OpenAI server."""

from __future__ import annotations

import math

import pytest

from memory_pipeline.domain import calibration
from memory_pipeline.domain.chunking import chunk_body, content_hash
from memory_pipeline.domain.windows import paragraph_windows
from memory_pipeline.embedders.base import EmbeddingProfile
from memory_pipeline.embedders.openai_compat import OpenAICompatibleEmbedder
from memory_pipeline.errors import EmbedderUnavailable, ModelRefused
from memory_pipeline.indexing import committer
from memory_pipeline.indexing.canary import CANARY_TEXT
from memory_pipeline.indexing.pending import pending_count
from memory_pipeline.indexing.until_done import index_pending
from memory_pipeline.ingest import ingest_paths
from memory_pipeline.storage.database import Database
from memory_pipeline.storage.profiles_store import active_profile
from memory_pipeline.storage.vector_store import nearest_chunks
from memory_pipeline_tests.helpers import (
    count,
    episode,
    ollama_embedder,
    split_calibration,
    write_jsonl,
)
from memory_pipeline_tests.support.loopback import LoopbackEmbeddingServer, unused_port_url


@pytest.fixture
def corpus(tmp_path):
    rows = [episode(i) for i in range(12)]
    rows.append(episode(99, paragraphs=1, words="x" * 5000))  # one long paragraph: hard cuts
    rows.append(episode(98, words="repeat"))
    rows[-1]["body"] = "same paragraph\n\nsame paragraph\n\nsame paragraph"  # repeated chunk text
    return rows, write_jsonl(tmp_path / "corpus.jsonl", rows)


def expected_chunks(rows):
    return sum(len(chunk_body(r["body"])) for r in rows)


def expected_vectors(rows):
    return sum(len({c.chunk_id for c in chunk_body(r["body"])}) for r in rows)


def expected_windows(rows):
    unique = {c.chunk_id: c.text for r in rows for c in chunk_body(r["body"])}
    return sum(len(paragraph_windows(text)) for text in unique.values())


def test_index_pass_writes_exact_chunks_and_normalised_vectors(db, corpus):
    rows, path = corpus
    ingest_paths(db, [path])
    with LoopbackEmbeddingServer(dim=1024) as server:
        report = index_pending(db, ollama_embedder(server.url))
        requests, inputs, probes = split_calibration(server)
        batch_sizes = [r.n_inputs for r in requests]
    # The run measured the new generation's model after its passes, each probe once.
    documents, questions = calibration.probe_texts()
    assert len(probes) == len(set(probes)) == len(documents) + len(questions)
    assert len(server.requests) > len(requests) and server.inputs[-1][-1] == probes[-1]
    assert report.episodes == len(rows)
    assert report.chunks == expected_chunks(rows)
    assert report.vectors == expected_vectors(rows)
    assert report.windows == expected_windows(rows) > 0
    assert report.pending_after == 0
    # Probe first (the canary alone), then full batches of 16 across chunks and episodes (a chunk's
    # text, then its paragraph windows), one short batch at the end; every call starts with the
    # canary, which proves the vectors of that call come from the generation's model.
    assert inputs[0] == [CANARY_TEXT]
    assert all(n == 16 for n in batch_sizes[1:-1]) and 2 <= batch_sizes[-1] <= 16
    assert all(texts[0] == CANARY_TEXT for texts in inputs)
    assert sum(batch_sizes[1:]) - (len(batch_sizes) - 1) == expected_vectors(
        rows
    ) + expected_windows(rows)
    with db.connection() as conn:
        for body, chash, texts, starts, ends in conn.execute(
            """SELECT e.body, e.content_hash, array_agg(c.text ORDER BY c.ordinal),
                      array_agg(c.start_char ORDER BY c.ordinal), array_agg(c.end_char ORDER BY c.ordinal)
               FROM episodes e JOIN chunks c ON c.episode_id = e.id GROUP BY e.id"""
        ):
            assert "".join(texts) == body and chash == content_hash(body)
            assert all(body[s:e] == t for s, e, t in zip(starts, ends, texts))
            assert all(len(t) <= 1600 for t in texts)
        stored = conn.execute(
            "SELECT DISTINCT ON (v.chunk_id) v.embedding, v.windows, c.text "
            "FROM embeddings v JOIN chunks c USING (memory, chunk_id)"
        ).fetchall()
        assert len(stored) == expected_vectors(rows)
        for _, windows, text in stored:
            assert len(windows or []) == len(paragraph_windows(text))
        every = [v for vector, windows, _ in stored for v in [vector, *(windows or [])]]
        dims, norms = zip(
            *[(len(v.to_list()), math.sqrt(sum(x * x for x in v.to_list()))) for v in every]
        )
        profile = active_profile(conn)
    assert set(dims) == {512}
    assert all(abs(n - 1) < 2e-3 for n in norms)  # halfvec keeps ~3 significant digits
    assert profile.name == "ollama/qwen3-embedding:0.6b@512" and profile.generation == 1


def test_reingest_and_reindex_are_idempotent(db, corpus):
    rows, path = corpus
    first = ingest_paths(db, [path])
    again = ingest_paths(db, [path])
    assert first.inserted == len(rows) and again.inserted == 0 and again.duplicates == len(rows)
    with LoopbackEmbeddingServer(dim=1024) as server:
        embedder = ollama_embedder(server.url)
        index_pending(db, embedder)
        before = count(db, "SELECT count(*) FROM embeddings")
        second = index_pending(db, embedder)
    assert second.episodes == 0 and second.vectors == 0
    assert count(db, "SELECT count(*) FROM embeddings") == before


def test_wrong_dimension_is_refused_before_any_write(db, corpus):
    _, path = corpus
    ingest_paths(db, [path])
    with LoopbackEmbeddingServer(dim=256) as server:
        with pytest.raises(ModelRefused) as info:
            index_pending(db, ollama_embedder(server.url, dim=512))
        assert len(server.requests) == 1  # only the probe
    assert "256" in str(info.value) and "512" in str(info.value)
    assert count(db, "SELECT count(*) FROM embeddings") == 0
    assert count(db, "SELECT count(*) FROM chunks") == 0


def test_server_down_stops_before_writing_and_names_the_service(db, corpus):
    rows, path = corpus
    ingest_paths(db, [path])
    with pytest.raises(EmbedderUnavailable) as info:
        index_pending(db, ollama_embedder(unused_port_url()))
    assert str(info.value).startswith("the Ollama embedding service is unavailable")
    assert count(db, "SELECT count(*) FROM chunks") == 0
    assert pending_count(db, ollama_embedder(unused_port_url())) == len(rows)


def test_server_failing_mid_run_leaves_each_episode_whole_or_pending(db, corpus):
    rows, path = corpus
    ingest_paths(db, [path])
    with LoopbackEmbeddingServer(dim=1024, fail_after=2) as server:  # the probe and one batch
        with pytest.raises(EmbedderUnavailable):
            index_pending(db, ollama_embedder(server.url))
    with db.connection() as conn:
        states = conn.execute(
            """SELECT e.body, count(DISTINCT c.ordinal), count(DISTINCT v.chunk_id)
               FROM episodes e LEFT JOIN chunks c ON c.episode_id = e.id
               LEFT JOIN embeddings v ON v.memory = c.memory AND v.chunk_id = c.chunk_id
               GROUP BY e.id"""
        ).fetchall()
    indexed = [s for s in states if s[1] > 0]
    assert 0 < len(indexed) < len(rows)
    for body, n_chunks, n_vectors in states:
        chunks = chunk_body(body)
        assert (n_chunks, n_vectors) in {(0, 0), (len(chunks), len({c.chunk_id for c in chunks}))}
    with LoopbackEmbeddingServer(dim=1024) as server:
        report = index_pending(db, ollama_embedder(server.url))
    assert report.episodes == len(rows) - len(indexed) and report.pending_after == 0
    assert count(db, "SELECT count(*) FROM embeddings") == expected_vectors(rows)


def test_switching_profile_adds_vectors_and_keeps_the_old_ones(db, corpus):
    rows, path = corpus
    ingest_paths(db, [path])
    with LoopbackEmbeddingServer(dim=1024) as server:
        index_pending(db, ollama_embedder(server.url, dim=512))
        other = ollama_embedder(server.url, dim=256, model="nomic-embed-text")
        assert pending_count(db, other) == len(rows)
        report = index_pending(db, other)
    assert report.vectors == expected_vectors(rows) and report.chunks == 0  # chunks reused
    with db.connection() as conn:
        per_profile = dict(
            conn.execute(
                """SELECT p.name, count(*) FROM embeddings v JOIN embedding_profiles p ON p.id = v.profile_id
               GROUP BY p.name"""
            ).fetchall()
        )
        assert active_profile(conn).name == "ollama/nomic-embed-text@256"
    assert per_profile == {
        "ollama/qwen3-embedding:0.6b@512": expected_vectors(rows),
        "ollama/nomic-embed-text@256": expected_vectors(rows),
    }


def test_openai_compatible_provider_indexes_and_searches(db, tmp_path):
    rows = [
        {
            "memory": "m",
            "kind": "note",
            "title": "Bikes",
            "occurred_at": "2026-01-01",
            "body": "my bicycle needs a new chain",
        },
        {
            "memory": "m",
            "kind": "note",
            "title": "Cake",
            "occurred_at": "2026-01-02",
            "body": "chocolate cake recipe with cherries",
        },
        {
            "memory": "other",
            "kind": "note",
            "title": "Bikes too",
            "occurred_at": "2026-01-02",
            "body": "bicycle chain bicycle chain",
        },
    ]
    ingest_paths(db, [write_jsonl(tmp_path / "x.jsonl", rows)])
    with LoopbackEmbeddingServer(dim=384) as server:
        embedder = OpenAICompatibleEmbedder(
            EmbeddingProfile("openai", "e5", 384), base_url=server.url + "/v1"
        )
        report = index_pending(db, embedder)
        # The passes embed passages; the calibration after them embeds its probe questions as
        # queries (``indexing.calibration``).
        requests, _, probes = split_calibration(server)
        assert {r.input_type for r in requests} == {"passage"} and probes
        query = embedder.embed_query("bicycle chain")
    assert report.vectors == 3
    with db.connection() as conn:
        profile = active_profile(conn)
        hits = nearest_chunks(conn, profile, "m", query, limit=5)
    assert [h.memory for h in hits] == ["m", "m"]  # never another memory's chunk
    assert hits[0].distance < hits[1].distance
    title = count(
        db,
        "SELECT e.title FROM chunks c JOIN episodes e ON e.id = c.episode_id WHERE c.chunk_id = %s",
        hits[0].chunk_id,
    )
    assert title == "Bikes"


def test_paragraph_windows_switched_off_embed_chunks_only(db, corpus):
    rows, path = corpus
    ingest_paths(db, [path])
    with LoopbackEmbeddingServer(dim=1024) as server:
        embedder = ollama_embedder(server.url)
        embedder.paragraph_windows = False  # what MEMORY_PIPELINE_PARAGRAPH_WINDOWS=off sets
        report = index_pending(db, embedder)
        requests, _, _ = split_calibration(server)
        inputs = sum(r.n_inputs for r in requests)
        calls = len(requests)
    assert report.vectors == expected_vectors(rows) and report.windows == 0
    assert inputs == calls + expected_vectors(rows)  # a canary per call, then one input per chunk
    assert count(db, "SELECT count(*) FROM embeddings WHERE windows IS NOT NULL") == 0


def test_a_run_that_fits_one_pass_makes_one_and_then_counts_what_is_pending(db, corpus):
    # No second pass listing nothing: the pending count the report needs says nothing is left.
    rows, path = corpus
    ingest_paths(db, [path])
    with LoopbackEmbeddingServer(dim=1024) as server:
        report = index_pending(db, ollama_embedder(server.url))
        assert report.passes == 1 and report.episodes == len(rows)
        assert report.pending_after == 0 and report.pending_days == {}
        again = index_pending(db, ollama_embedder(server.url))
    assert again.passes == 1 and again.episodes == 0 and again.pending_after == 0


def test_progress_counts_everything_done_so_far_across_passes(db, tmp_path):
    write_jsonl(tmp_path / "e.jsonl", [episode(i, paragraphs=1) for i in range(5)])
    ingest_paths(db, [tmp_path / "e.jsonl"])
    seen = []
    with LoopbackEmbeddingServer(dim=1024) as server:
        report = index_pending(
            db,
            ollama_embedder(server.url),
            pass_limit=2,
            on_progress=lambda p: seen.append(p.also[0].done) if p.stage == "index" else None,
        )
    assert report.episodes == 5 and report.passes >= 3
    # A later pass continues the count; it never starts again from 0.
    assert seen == sorted(seen) and seen[-1] >= 4, seen


@pytest.mark.parametrize("analyze_after, pool_size", [(1, 5), (1, 2), (10**9, 5)])
def test_a_pass_that_wrote_many_vectors_refreshes_the_planner_statistics(
    db_url, corpus, analyze_after, pool_size
):
    # A table never analyzed (nor vacuumed) has reltuples -1 (PostgreSQL 14+); ANALYZE sets the
    # row count. Autovacuum leaves tables this small alone, so only the pass can have done it:
    # beside itself, on a spare connection, once half of what it listed is committed; after
    # itself when the pool has none to spare (the pass's connection and one storing connection
    # fill a pool of 2).
    rows, path = corpus
    with Database.open(db_url, max_size=pool_size) as db:
        ingest_paths(db, [path])
        with LoopbackEmbeddingServer(dim=1024) as server:
            report = index_pending(db, ollama_embedder(server.url), analyze_after=analyze_after)
        with db.connection() as conn:
            stored = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
            reltuples = conn.execute(
                "SELECT reltuples FROM pg_class WHERE oid = 'chunks'::regclass"
            ).fetchone()[0]
    assert stored == expected_chunks(rows)
    assert report.analyzed == (analyze_after == 1 and pool_size > 2)
    if analyze_after == 1:
        assert stored / 2 <= reltuples <= stored, reltuples
    else:
        # No pass analyzed; the run still ends by building the serving HNSW index and analyzing
        # every table search reads (indexing.serving), so nothing is left planned on none.
        assert report.search_ready.analyzed and reltuples == stored


@pytest.mark.parametrize("pool_size", [5, 2])
def test_commits_run_on_two_storing_connections_when_the_pool_can_spare_one(
    db_url, corpus, monkeypatch, pool_size
):
    # Two storing threads, each on its own connection (committer.STORE_THREADS): commits handed
    # over one after the other alternate between them. A pool that cannot spare the second (the
    # pass's own connection and one storing connection fill a pool of 2) leaves one, and the pass
    # still writes everything.
    rows, path = corpus
    used = []
    write_episodes = committer.index_store.write_episodes

    def recording(conn, profile, works):
        used.append(conn.info.backend_pid)
        return write_episodes(conn, profile, works)

    monkeypatch.setattr(committer.index_store, "write_episodes", recording)
    monkeypatch.setattr(committer, "WRITE_EVERY_CHUNKS", 1)  # a commit per episode
    with Database.open(db_url, max_size=pool_size) as small:
        ingest_paths(small, [path])
        with LoopbackEmbeddingServer(dim=1024) as server:
            report = index_pending(small, ollama_embedder(server.url))
        assert report.chunks == expected_chunks(rows) and report.vectors == expected_vectors(rows)
        assert count(small, "SELECT count(*) FROM chunks") == expected_chunks(rows)
    assert len(used) >= 4
    assert len(set(used)) == (2 if pool_size > 2 else 1), used


def test_a_body_opening_with_its_title_gets_no_window_of_the_title_alone(db, tmp_path):
    # "title, blank line, text": the title alone would be a window; a one-abstract document is
    # then scored by its chunk vector, and a longer one's first window is title and paragraph.
    rows = [
        {
            "memory": "m",
            "kind": "doc",
            "title": title,
            "occurred_at": "2026-11-01T09:00:00Z",
            "body": f"{title}\n\n" + "\n\n".join(paragraphs),
        }
        for title, paragraphs in (
            ("Statins and cancer", ["We followed 9,000 women for ten years."]),
            ("Coffee and sleep", ["Caffeine delays sleep.", "Tea does less."]),
        )
    ]
    ingest_paths(db, [write_jsonl(tmp_path / "docs.jsonl", rows)])
    with LoopbackEmbeddingServer(dim=1024) as server:
        report = index_pending(db, ollama_embedder(server.url))
        embedded = {text for texts in server.inputs for text in texts}
    assert report.windows == 2
    assert "Coffee and sleep\n\nCaffeine delays sleep." in embedded
    assert not {"Statins and cancer", "Coffee and sleep"} & embedded
    assert count(db, "SELECT count(*) FROM embeddings WHERE windows IS NOT NULL") == 1
