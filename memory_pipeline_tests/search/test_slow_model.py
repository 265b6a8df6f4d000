"""Search with a hung or failing embedding server: keyword and graph answer at once and say why."""

from __future__ import annotations

import time

from memory_pipeline.domain.policies import load_policies
from memory_pipeline.search.service import SearchService
from memory_pipeline_tests.helpers import ollama_embedder
from memory_pipeline_tests.search.conftest import NOW


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_hung_model_costs_one_short_wait_then_none(db, world, embed_server):
    embedder = ollama_embedder(embed_server.url)  # its own HTTP timeout stays 120 s
    embedder.query_timeout_s = 0.5
    breaker_clock = Clock()
    service = SearchService(
        db, load_policies(), embedder=embedder, clock=lambda: NOW, breaker_clock=breaker_clock
    )
    assert service.search("alice", "bicycle chain").vector_status == "ok"

    embed_server.delay_s = 3.0  # hung, as far as a search is concerned
    calls = len(embed_server.requests)
    started = time.perf_counter()
    first = service.search("alice", "bicycle chain")
    first_s = time.perf_counter() - started
    assert first.vector_status == (
        "unavailable: the query embedding took longer than 0.5s (MEMORY_PIPELINE_QUERY_EMBED_TIMEOUT); "
        "vector search is paused for 30s"
    )
    assert first_s < 2.5 and first.results and first.results[0].title == "Bike repair"

    started = time.perf_counter()
    second = service.search("alice", "bicycle chain")
    assert time.perf_counter() - started < 0.4  # the breaker is open: no wait at all
    assert second.vector_status.startswith("unavailable: the query embedding took longer than 0.5s")
    assert "paused for another 30s, then retried" in second.vector_status
    assert (
        second.results[0].title == "Bike repair"
        and second.to_json()["vector"]["status"] == "unavailable"
    )
    assert len(embed_server.requests) == calls + 1  # only the first search asked the model

    embed_server.delay_s = 0.0
    breaker_clock.now += 31  # after the cool-down the next search tries the model again
    assert service.search("alice", "bicycle chain").vector_status == "ok"
    assert service.search("alice", "bicycle chain").vector_status == "ok"


def test_an_unreachable_model_opens_the_breaker_too(db, world):
    from memory_pipeline_tests.support.loopback import unused_port_url

    service = SearchService(
        db, load_policies(), embedder=ollama_embedder(unused_port_url()), clock=lambda: NOW
    )
    first = service.search("alice", "garden")
    assert first.vector_status.startswith(
        "unavailable: the Ollama embedding service is unavailable"
    )
    assert first.vector_status.endswith("vector search is paused for 30s")
    again = service.search("alice", "garden")
    assert "paused for another" in again.vector_status and again.results
