"""The embedders' HTTP transport: base64 vectors where the server speaks them, floats where it
does not, kept-alive connections, and the in-flight setting."""

from __future__ import annotations

import numpy as np
import pytest

from memory_pipeline.config import EmbedSettings
from memory_pipeline.embedders.base import EmbeddingProfile
from memory_pipeline.embedders.factory import build_embedder
from memory_pipeline.embedders.openai_compat import OpenAICompatibleEmbedder
from memory_pipeline.errors import ConfigurationError
from memory_pipeline_tests.support.loopback import LoopbackEmbeddingServer, hashing_vector

PROFILE = EmbeddingProfile("openai", "multilingual-e5-small", 256)


def expected(texts: list[str]) -> np.ndarray:
    rows = np.asarray([hashing_vector(t, 1024)[:256] for t in texts], dtype=np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_openai_vectors_travel_as_base64_when_the_server_speaks_it():
    texts = ["the garden in spring", "billing meeting notes", "x"]
    with LoopbackEmbeddingServer(dim=1024) as server:
        embedder = OpenAICompatibleEmbedder(PROFILE, base_url=server.url)
        got = embedder.embed_documents(texts)
        assert embedder._base64 and len(server.requests) == 1
    np.testing.assert_allclose(got, expected(texts), atol=1e-6)


def test_openai_falls_back_to_floats_when_base64_is_refused():
    texts = ["the garden in spring", "billing meeting notes"]
    with LoopbackEmbeddingServer(dim=1024, base64=False) as server:
        embedder = OpenAICompatibleEmbedder(PROFILE, base_url=server.url)
        first = embedder.embed_documents(texts)
        second = embedder.embed_documents(texts)
        # The first call is refused (HTTP 400) and sent again asking for floats; floats from then on.
        assert server.served == 2 and not embedder._base64
    np.testing.assert_allclose(first, expected(texts), atol=1e-6)
    np.testing.assert_array_equal(first, second)


def test_openai_calls_reuse_kept_alive_connections():
    with LoopbackEmbeddingServer(dim=1024) as server:
        embedder = OpenAICompatibleEmbedder(PROFILE, base_url=server.url)
        for i in range(5):
            embedder.embed_documents([f"text {i}"])
        pool = embedder._client._transport._pool
        assert len(pool.connections) == 1  # five calls, one connection


def test_parallel_setting_reaches_the_embedder_and_is_validated():
    env = {"MEMORY_PIPELINE_EMBED_PROVIDER": "openai", "MEMORY_PIPELINE_EMBED_URL": "http://127.0.0.1:9"}
    assert build_embedder(EmbedSettings.from_env(env)).in_flight == 8
    assert build_embedder(EmbedSettings.from_env({**env, "MEMORY_PIPELINE_EMBED_PARALLEL": "3"})).in_flight == 3
    for bad in ("0", "many", "65"):
        with pytest.raises(ConfigurationError, match="MEMORY_PIPELINE_EMBED_PARALLEL"):
            EmbedSettings.from_env({**env, "MEMORY_PIPELINE_EMBED_PARALLEL": bad})
