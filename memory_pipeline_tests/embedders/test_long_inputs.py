"""Inputs longer than the model server's batch: a llama.cpp-style refusal gets a plain message."""

from __future__ import annotations

import pytest

from memory_pipeline.embedders.base import EmbeddingProfile
from memory_pipeline.embedders.openai_compat import OpenAICompatibleEmbedder
from memory_pipeline.errors import ModelRefused
from memory_pipeline.indexing.until_done import index_pending
from memory_pipeline.ingest import ingest_paths
from memory_pipeline_tests.helpers import count
from memory_pipeline_tests.support.loopback import LoopbackEmbeddingServer, token_count

SHORT = "A short note about the garden gate."
LONG = "# Manual\n\n## Setup\n\n" + " ".join(
    f"Step {i} tightens bolt {i} by hand." for i in range(60)
)


def embedder(url: str) -> OpenAICompatibleEmbedder:
    return OpenAICompatibleEmbedder(
        EmbeddingProfile("openai", "nomic-embed-text", 384), url, batch_size=1
    )


def test_the_loopback_server_refuses_like_llama_cpp():
    with LoopbackEmbeddingServer(max_input_tokens=100) as server:
        with pytest.raises(ModelRefused) as info:
            embedder(server.url).embed_documents([SHORT, LONG])
    message = str(info.value)
    assert (
        f"input ({token_count(LONG)} tokens) is too large to process. increase the physical batch size "
        "(current batch size: 100)" in message
    )
    assert "--ubatch-size 2048 --batch-size 2048" in message and "unavailable" not in message


def test_an_index_pass_stops_with_the_setting_to_raise_and_keeps_what_fit(db, tmp_path):
    # Indexed oldest first: the short note, then the long manual.
    (tmp_path / "short.md").write_text(f"---\ndate: 2026-01-01\n---\n{SHORT}", encoding="utf-8")
    (tmp_path / "long.md").write_text(f"---\ndate: 2026-02-01\n---\n{LONG}", encoding="utf-8")
    ingest_paths(db, [tmp_path], memory="m")
    with LoopbackEmbeddingServer(max_input_tokens=200) as server:
        with pytest.raises(ModelRefused, match="--ubatch-size"):
            index_pending(db, embedder(server.url))
        # The short note fitted and was stored; the long one stays pending, nothing half-written.
        assert (
            count(
                db,
                "SELECT count(DISTINCT c.episode_id) FROM chunks c JOIN embeddings v USING (chunk_id)",
            )
            == 1
        )
        server.max_input_tokens = None  # the server restarted with a larger batch
        report = index_pending(db, embedder(server.url))
    assert report.pending_after == 0 and report.episodes == 1


def test_a_refused_call_keeps_the_vectors_of_the_calls_running_beside_it(db, tmp_path):
    # Two calls in flight: the short note's is accepted and answered after 0.5 s, the manual's is
    # refused at once. The refusal arrives first; the short note's vectors are valid all the same.
    (tmp_path / "short.md").write_text(f"---\ndate: 2026-01-01\n---\n{SHORT}", encoding="utf-8")
    steps = LONG.split("\n\n")[-1]  # no heading chunk: the manual's first call is the refused one
    (tmp_path / "long.md").write_text(f"---\ndate: 2026-02-01\n---\n{steps}", encoding="utf-8")
    ingest_paths(db, [tmp_path], memory="m")
    with LoopbackEmbeddingServer(max_input_tokens=200, delay_s=0.5) as server:
        model = embedder(server.url)
        model.in_flight = 2
        with pytest.raises(ModelRefused, match="--ubatch-size"):
            index_pending(db, model)
    assert (
        count(
            db,
            "SELECT count(DISTINCT c.episode_id) FROM chunks c JOIN embeddings v USING (chunk_id)",
        )
        == 1
    )
