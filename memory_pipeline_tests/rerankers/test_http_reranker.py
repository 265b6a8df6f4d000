"""HttpReranker against a real loopback ``/v1/rerank`` server: scores, wire format, every failure."""

from __future__ import annotations

import socket
import threading
import time

import httpx
import pytest

from memory_pipeline.errors import ConfigurationError
from memory_pipeline.rerankers.http import (
    DEFAULT_RERANK_MODEL,
    DEFAULT_TIMEOUT_S,
    HttpReranker,
    RerankerFailed,
    rerank_url,
    reranker_from_env,
)
from memory_pipeline_tests.support.loopback import unused_port_url
from memory_pipeline_tests.support.rerank_server import LoopbackRerankServer, word_overlap

QUERY = "red fox jumps"
# Overlaps 1/3, 3/3, 0, 2/3: the server's best-first order (1, 3, 0, 2) is not the input order.
DOCS = [
    "A red kite circles.",
    "The red fox jumps over the dog.",
    "Nothing relevant here.",
    "A FOX jumps; no colour given.",
]
EXPECTED = [1 / 3, 1.0, 0.0, 2 / 3]


@pytest.fixture
def server():
    with LoopbackRerankServer() as running:
        yield running


@pytest.fixture
def reranker(server):
    with HttpReranker(server.url, timeout_s=2.0) as client:
        yield client


def assert_plain(reason: str) -> None:
    assert reason and "\n" not in reason and len(reason) <= 200
    assert "Traceback" not in reason and "httpx" not in reason


# -- the normal path ----------------------------------------------------------------------------


def test_scores_come_back_in_input_order_although_the_server_sorts_by_score(server, reranker):
    raw = httpx.post(f"{server.url}/v1/rerank", json={"query": QUERY, "documents": DOCS}).json()
    assert [r["index"] for r in raw["results"]] == [1, 3, 0, 2]  # the premise: not index order
    assert raw["results"][0]["document"] == {"text": DOCS[1]}

    scores = reranker.rerank(QUERY, DOCS)

    assert scores == pytest.approx(EXPECTED)
    assert scores == pytest.approx([word_overlap(QUERY, d) for d in DOCS])
    assert all(type(s) is float for s in scores)
    ranked = sorted(range(len(DOCS)), key=lambda i: -scores[i])
    assert ranked == [1, 3, 0, 2]


def test_request_body_carries_model_query_documents_and_full_top_n(server):
    with HttpReranker(server.url, model="bge-reranker-v2-m3") as custom:
        custom.rerank(QUERY, tuple(DOCS))
    with HttpReranker(server.url) as default:
        default.rerank("fox", ["fox"])

    first, second = server.requests
    assert first == {"model": "bge-reranker-v2-m3", "query": QUERY, "documents": DOCS, "top_n": 4}
    assert second == {
        "model": DEFAULT_RERANK_MODEL,
        "query": "fox",
        "documents": ["fox"],
        "top_n": 1,
    }


def test_empty_document_list_needs_no_call(server, reranker):
    assert reranker.rerank(QUERY, []) == []
    assert server.requests == []


@pytest.mark.parametrize("suffix", ["", "/", "/v1", "/v1/", "/v1/rerank"])
def test_base_url_with_or_without_v1(server, suffix):
    with HttpReranker(server.url + suffix) as client:
        assert client.url == f"{server.url}/v1/rerank"
        assert client.rerank(QUERY, DOCS) == pytest.approx(EXPECTED)


def test_rerank_url_does_not_double_v1():
    assert rerank_url("http://h:8080") == "http://h:8080/v1/rerank"
    assert rerank_url(" http://h:8080/v1/ ") == "http://h:8080/v1/rerank"
    assert rerank_url("http://h/proxy/v1") == "http://h/proxy/v1/rerank"


def test_results_under_data_are_accepted(server, reranker):
    server.answer_override = lambda answer, body: {"data": answer["results"]}
    assert reranker.rerank(QUERY, DOCS) == pytest.approx(EXPECTED)


def test_integer_scores_and_negative_logits_are_fine(server, reranker):
    server.answer_override = lambda answer, body: {
        "results": [{"index": 1, "relevance_score": 3}, {"index": 0, "relevance_score": -7.5}]
    }
    assert reranker.rerank("q", ["a", "b"]) == [-7.5, 3.0]


def test_client_keeps_working_after_a_failure(server, reranker):
    server.mode = "error500"
    with pytest.raises(RerankerFailed):
        reranker.rerank(QUERY, DOCS)
    server.mode = "ok"
    assert reranker.rerank(QUERY, DOCS) == pytest.approx(EXPECTED)


# -- failures: always RerankerFailed with a plain reason ------------------------------------------


@pytest.mark.parametrize(
    "mode, reason",
    [
        ("error500", "HTTP 500: loopback rerank server: injected failure"),
        ("nonsense", "malformed answer: index 99 out of range for 4 documents"),
        ("partial", "answer covers 1 of 4 documents"),
        ("garbage", "malformed answer: not JSON"),
    ],
)
def test_server_failure_modes(server, reranker, mode, reason):
    server.mode = mode
    with pytest.raises(RerankerFailed) as caught:
        reranker.rerank(QUERY, DOCS)
    assert caught.value.reason == reason
    assert_plain(caught.value.reason)
    assert caught.value.url == f"{server.url}/v1/rerank"
    assert str(caught.value) == f"the reranker at {server.url}/v1/rerank failed: {reason}"


def test_wrong_path_is_an_http_error(server):
    with HttpReranker(server.url + "/api") as client, pytest.raises(RerankerFailed) as caught:
        client.rerank(QUERY, DOCS)
    assert caught.value.reason.startswith("HTTP 404")
    assert_plain(caught.value.reason)


def _results(*items):
    return lambda answer, body: {"results": list(items)}


@pytest.mark.parametrize(
    "override, reason",
    [
        (lambda a, b: {"answers": a["results"]}, "malformed answer: missing 'results'"),
        (lambda a, b: [a["results"]], "malformed answer: a JSON list, not an object"),
        (lambda a, b: {"results": {"0": 1.0}}, "malformed answer: 'results' is not a list"),
        (_results(0.5, 0.2), "malformed answer: result 0 is not an object"),
        (
            _results({"index": 0, "relevance_score": 0.1}, {"index": 0, "relevance_score": 0.2}),
            "malformed answer: index 0 appears twice",
        ),
        (
            _results({"index": 1, "relevance_score": 0.1}, {"index": 2, "relevance_score": 0.2}),
            "malformed answer: index 2 out of range for 2 documents",
        ),
        (
            _results({"index": -1, "relevance_score": 0.1}),
            "malformed answer: index -1 out of range for 2 documents",
        ),
        (
            _results({"index": True, "relevance_score": 0.1}),
            "malformed answer: result 0 has index True",
        ),
        (
            _results({"index": 0.0, "relevance_score": 0.1}),
            "malformed answer: result 0 has index 0.0",
        ),
        (
            _results({"index": "0", "relevance_score": 0.1}),
            "malformed answer: result 0 has index '0'",
        ),
        (_results({"relevance_score": 0.1}), "malformed answer: result 0 has index None"),
        (
            _results({"index": 0, "relevance_score": True}),
            "malformed answer: score True for index 0 is not a number",
        ),
        (
            _results({"index": 0, "relevance_score": "0.9"}),
            "malformed answer: score '0.9' for index 0 is not a number",
        ),
        (
            _results({"index": 0, "score": 0.9}),
            "malformed answer: score None for index 0 is not a number",
        ),
        (_results({"index": 0, "relevance_score": float("nan")}), "non-finite score"),
        (_results({"index": 0, "relevance_score": float("-inf")}), "non-finite score"),
        (_results({"index": 0, "relevance_score": 10**400}), "non-finite score"),
        (lambda a, b: {"results": []}, "answer covers 0 of 2 documents"),
    ],
)
def test_malformed_answers(server, reranker, override, reason):
    server.answer_override = override
    with pytest.raises(RerankerFailed) as caught:
        reranker.rerank("q", ["a", "b"])
    assert caught.value.reason == reason
    assert_plain(caught.value.reason)


def test_slow_server_times_out_within_the_bound():
    with LoopbackRerankServer(delay_s=2.0) as slow, HttpReranker(slow.url, timeout_s=0.5) as client:
        started = time.monotonic()
        with pytest.raises(RerankerFailed) as caught:
            client.rerank(QUERY, DOCS)
        elapsed = time.monotonic() - started
        assert len(slow.requests) == 1  # the request did arrive; the answer was too late
    assert elapsed < 1.5
    assert caught.value.reason == "timed out after 0.5s"


def test_trickling_answer_is_bounded_by_the_whole_request_timeout():
    """Each byte arrives well within the read timeout, but the answer as a whole is too late."""
    listener = socket.create_server(("127.0.0.1", 0))
    body = b'{"results": [{"index": 0, "relevance_score": 1.0}]}' + b" " * 40

    def trickle():
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body))
            for byte in body:
                try:
                    conn.sendall(bytes([byte]))
                except OSError:
                    return
                time.sleep(0.05)

    thread = threading.Thread(target=trickle, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    try:
        with HttpReranker(url, timeout_s=0.5) as client:
            started = time.monotonic()
            with pytest.raises(RerankerFailed) as caught:
                client.rerank("q", ["a"])
            elapsed = time.monotonic() - started
    finally:
        thread.join(timeout=5)
        listener.close()
    assert elapsed < 1.5
    assert caught.value.reason == "timed out after 0.5s"


def test_down_server_fails_quickly():
    url = unused_port_url()
    with HttpReranker(url, timeout_s=DEFAULT_TIMEOUT_S) as client:
        started = time.monotonic()
        with pytest.raises(RerankerFailed) as caught:
            client.rerank(QUERY, DOCS)
    assert time.monotonic() - started < 1.5
    assert caught.value.reason == "unreachable (connection refused)"
    assert caught.value.url == f"{url}/v1/rerank"


# -- construction --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url", ["", "   ", "localhost:8080", "ftp://host/", "http://", "http://[::1"]
)
def test_invalid_url_is_a_plain_value_error(url):
    with pytest.raises(ValueError, match="reranker URL"):
        HttpReranker(url)


@pytest.mark.parametrize("timeout_s", [0, -1.0, float("nan"), float("inf"), True, "5"])
def test_invalid_timeout_is_a_value_error(timeout_s):
    with pytest.raises(ValueError, match="timeout"):
        HttpReranker("http://127.0.0.1:1", timeout_s=timeout_s)


def test_empty_model_is_a_value_error():
    with pytest.raises(ValueError, match="model"):
        HttpReranker("http://127.0.0.1:1", model=" ")


# -- configuration from the environment -----------------------------------------------------------


@pytest.mark.parametrize(
    "environ", [{}, {"MEMORY_PIPELINE_RERANK_URL": ""}, {"MEMORY_PIPELINE_RERANK_URL": "  "}]
)
def test_no_url_means_no_reranker(environ):
    environ = {
        **environ,
        "MEMORY_PIPELINE_RERANK_MODEL": "x",
        "MEMORY_PIPELINE_RERANK_TIMEOUT": "junk",
    }
    assert reranker_from_env(environ) is None


def test_url_alone_gives_the_defaults():
    reranker = reranker_from_env({"MEMORY_PIPELINE_RERANK_URL": " http://127.0.0.1:8012/v1 "})
    try:
        assert isinstance(reranker, HttpReranker)
        assert reranker.url == "http://127.0.0.1:8012/v1/rerank"
        assert reranker.model == DEFAULT_RERANK_MODEL == "qwen3-reranker:0.6b"
        assert reranker.timeout_s == DEFAULT_TIMEOUT_S == 5.0
    finally:
        reranker.close()


def test_model_and_timeout_from_the_environment():
    reranker = reranker_from_env(
        {
            "MEMORY_PIPELINE_RERANK_URL": "http://rerank.internal:8080",
            "MEMORY_PIPELINE_RERANK_MODEL": " bge-reranker-v2-m3 ",
            "MEMORY_PIPELINE_RERANK_TIMEOUT": "1.5",
        }
    )
    try:
        assert (reranker.model, reranker.timeout_s) == ("bge-reranker-v2-m3", 1.5)
    finally:
        reranker.close()


def test_reads_os_environ_by_default(monkeypatch, server):
    monkeypatch.delenv("MEMORY_PIPELINE_RERANK_URL", raising=False)
    assert reranker_from_env() is None
    monkeypatch.setenv("MEMORY_PIPELINE_RERANK_URL", server.url)
    reranker = reranker_from_env()
    try:
        assert reranker.rerank(QUERY, DOCS) == pytest.approx(EXPECTED)
    finally:
        reranker.close()


@pytest.mark.parametrize("raw", ["soon", "0", "-2", "nan", "inf"])
def test_invalid_timeout_names_the_variable(raw):
    environ = {
        "MEMORY_PIPELINE_RERANK_URL": "http://127.0.0.1:8012",
        "MEMORY_PIPELINE_RERANK_TIMEOUT": raw,
    }
    with pytest.raises(ConfigurationError, match="MEMORY_PIPELINE_RERANK_TIMEOUT"):
        reranker_from_env(environ)


def test_invalid_url_names_the_variable():
    with pytest.raises(ConfigurationError, match="MEMORY_PIPELINE_RERANK_URL") as caught:
        reranker_from_env({"MEMORY_PIPELINE_RERANK_URL": "localhost:8012"})
    assert "localhost:8012" in str(caught.value)
