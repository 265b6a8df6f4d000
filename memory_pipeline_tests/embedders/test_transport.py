"""The embedders' HTTP transport: base64 vectors where the server speaks them, floats where it
does not, kept-alive connections (and what a server closing them does), which URLs keep httpx,
and the in-flight setting."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from memory_pipeline.config import EmbedSettings
from memory_pipeline.embedders import transport
from memory_pipeline.embedders.base import EmbeddingProfile
from memory_pipeline.embedders.factory import build_embedder
from memory_pipeline.embedders.ollama import OllamaEmbedder
from memory_pipeline.embedders.openai_compat import OpenAICompatibleEmbedder
from memory_pipeline.errors import ConfigurationError, EmbedderUnavailable
from memory_pipeline_tests.support.loopback import LoopbackEmbeddingServer, hashing_vector

PROFILE = EmbeddingProfile("openai", "multilingual-e5-small", 256)
OLLAMA_PROFILE = EmbeddingProfile("ollama", "qwen3-embedding:0.6b", 256)


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


@pytest.fixture(params=["openai", "ollama"])
def make(request):
    """An embedder of either HTTP provider for a server URL."""

    def build(url: str, **kwargs):
        if request.param == "openai":
            return OpenAICompatibleEmbedder(PROFILE, base_url=url, **kwargs)
        return OllamaEmbedder(OLLAMA_PROFILE, host=url, **kwargs)

    build.provider = request.param
    return build


def test_calls_reuse_kept_alive_connections(make):
    with LoopbackEmbeddingServer(dim=1024) as server:
        embedder = make(server.url)
        assert isinstance(embedder._poster, transport.LeanPoster)
        got = [embedder.embed_documents([f"text {i}"])[0] for i in range(5)]
        assert server.connections == 1 and server.served == 5  # five calls, one connection
    np.testing.assert_allclose(got, expected([f"text {i}" for i in range(5)]), atol=1e-6)


def test_calls_in_flight_take_a_connection_each_and_keep_them(make):
    texts = [[f"batch {i} text {j}" for j in range(4)] for i in range(48)]
    with LoopbackEmbeddingServer(dim=1024, delay_s=0.02) as server:
        embedder = make(server.url)
        with ThreadPoolExecutor(max_workers=6) as pool:
            got = list(pool.map(embedder.embed_documents, texts))
        assert server.max_in_flight == 6 and server.served == 48
        assert 6 <= server.connections <= 12  # kept and reused, not one per call
    for rows, batch in zip(got, texts):
        np.testing.assert_allclose(rows, expected(batch), atol=1e-6)


def test_a_connection_the_server_closed_while_idle_is_not_reused(make):
    with LoopbackEmbeddingServer(dim=1024, keepalive_s=0.1) as server:
        embedder = make(server.url)
        embedder.embed_documents(["before"])
        time.sleep(0.4)  # the server closes the idle connection meanwhile
        got = embedder.embed_documents(["after"])
        assert server.connections == 2 and server.served == 2
    np.testing.assert_allclose(got, expected(["after"]), atol=1e-6)


def test_a_request_the_server_closes_unanswered_on_a_kept_connection_is_sent_again(make):
    # The idle timeout fires as the request arrives: no answer, so it is sent on a new connection.
    with LoopbackEmbeddingServer(dim=1024, answers_per_connection=1) as server:
        embedder = make(server.url)
        got = [embedder.embed_documents([f"text {i}"])[0] for i in range(4)]
        assert server.served == 4 and server.dropped == 3 and server.connections == 4
    np.testing.assert_allclose(got, expected([f"text {i}" for i in range(4)]), atol=1e-6)


def test_a_request_closed_unanswered_on_a_new_connection_is_a_plain_failure(make):
    with LoopbackEmbeddingServer(dim=1024, answers_per_connection=0) as server:
        embedder = make(server.url)
        with pytest.raises(EmbedderUnavailable) as failed:
            embedder.embed_documents(["text"])
        assert server.dropped == 1  # sent once: a new connection that broke is not retried
    words = "cannot connect to" if make.provider == "openai" else "cannot talk to"
    assert words in str(failed.value) and "without response" in str(failed.value)


def test_ollama_requests_carry_the_clients_headers(monkeypatch):
    monkeypatch.setenv("OLLAMA_API_KEY", "sekrit")
    with LoopbackEmbeddingServer(dim=1024) as server:
        OllamaEmbedder(OLLAMA_PROFILE, host=server.url).embed_documents(["text"])
        assert server.authorizations == ["Bearer sekrit"]


class _Redirect(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    target = ""

    def log_message(self, format, *args):  # noqa: A002 - stdlib signature
        pass

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(307)
        self.send_header("Location", self.target + self.path)
        self.send_header("Content-Length", "0")
        self.end_headers()


def test_ollama_follows_a_redirect_like_its_client():
    with LoopbackEmbeddingServer(dim=1024) as server:
        handler = type("Redirect", (_Redirect,), {"target": server.url})
        front = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(
            target=front.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        ).start()
        try:
            got = OllamaEmbedder(
                OLLAMA_PROFILE, host=f"http://127.0.0.1:{front.server_address[1]}"
            ).embed_documents(["moved"])
        finally:
            front.shutdown()
            front.server_close()
        assert server.served == 1
    np.testing.assert_allclose(got, expected(["moved"]), atol=1e-6)


@pytest.mark.parametrize(
    "url, lean",
    [
        ("http://127.0.0.1:8080/v1/embeddings", True),
        ("http://localhost/api/embed", True),
        ("https://embeddings.example/v1/embeddings", False),  # certificates: httpx's settings
        ("http://user:pw@127.0.0.1:8080/v1/embeddings", False),  # credentials in the URL
    ],
)
def test_plain_http_urls_take_the_lean_transport(url, lean, monkeypatch):
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    assert transport.lean_applies(url) is lean


def test_a_proxy_in_the_environment_keeps_httpx_and_its_rules(make, monkeypatch):
    # httpx reads HTTP_PROXY and NO_PROXY: loopback is exempted here, so calls still arrive.
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    assert not transport.lean_applies("http://127.0.0.1:8080/")
    with LoopbackEmbeddingServer(dim=1024) as server:
        embedder = make(server.url)
        assert isinstance(embedder._poster, transport.HttpxPoster)
        got = embedder.embed_documents(["through httpx"])
        assert server.served == 1
    np.testing.assert_allclose(got, expected(["through httpx"]), atol=1e-6)


def test_parallel_setting_reaches_the_embedder_and_is_validated():
    env = {
        "MEMORY_PIPELINE_EMBED_PROVIDER": "openai",
        "MEMORY_PIPELINE_EMBED_URL": "http://127.0.0.1:9",
    }
    assert build_embedder(EmbedSettings.from_env(env)).in_flight == 8
    assert (
        build_embedder(
            EmbedSettings.from_env({**env, "MEMORY_PIPELINE_EMBED_PARALLEL": "3"})
        ).in_flight
        == 3
    )
    for bad in ("0", "many", "65"):
        with pytest.raises(ConfigurationError, match="MEMORY_PIPELINE_EMBED_PARALLEL"):
            EmbedSettings.from_env({**env, "MEMORY_PIPELINE_EMBED_PARALLEL": bad})
