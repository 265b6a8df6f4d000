"""Recovering from successive model changes with the commands a user has: after the model
behind the same name changed two and three times (once during an ``index``, then during the
``reindex`` that followed), ``reindex`` builds a fresh generation from the model served now and
search switches to it; ``reindex --rollback`` returns to the last good generation only while
the model that embedded it is served again. The real console script, the real database, a
loopback Ollama server whose weights the test swaps."""

from __future__ import annotations

import threading

import pytest

from memory_pipeline_tests.helpers import QWEN, episode, write_jsonl
from memory_pipeline_tests.support.loopback import LoopbackEmbeddingServer, hashing_vector


class Weights:
    """What the loopback server embeds with: the same model name, weights chosen by the test.
    ``swap_after``: the next weights take over after that many more requests (during a run)."""

    def __init__(self, server: LoopbackEmbeddingServer):
        self.server = server
        self.current = "A"
        self._next: tuple[int, str] | None = None
        self._lock = threading.Lock()
        server.answer_override = self.answer

    def serve(self, name: str, *, after: int | None = None) -> None:
        with self._lock:
            if after is None:
                self.current, self._next = name, None
            else:
                self._next = (self.server.served + after, name)

    def answer(self, flavour: str, texts: list[str]) -> dict:
        with self._lock:
            if self._next is not None and self.server.served >= self._next[0]:
                self.current, self._next = self._next[1], None
            salt = self.current
        return {"model": QWEN, "embeddings": [hashing_vector(t + salt, 1024) for t in texts]}


@pytest.fixture
def model():
    with LoopbackEmbeddingServer(dim=1024) as server:
        yield server, Weights(server)


@pytest.fixture
def run(cli, model):
    server, _ = model
    env = {
        "MEMORY_PIPELINE_EMBED_PROVIDER": "ollama",
        "OLLAMA_HOST": server.url,
        "MEMORY_PIPELINE_EMBED_BATCH": "2",
        "MEMORY_PIPELINE_EMBED_PARALLEL": "1",
    }

    def command(*args):
        result = cli(*args, env=env)
        assert "Traceback" not in result.err, result.err
        return result

    return command


def serving(run) -> tuple[int, str]:
    status = run("status", "--json").json()
    return status["activeProfile"]["generation"], status["canary"]["state"]


def vector_search_works(run) -> bool:
    found = run("search", "garden notes", "--memory", "alice", "--json")
    return found.code == 0 and found.json()["vector"]["status"] == "ok"


@pytest.fixture
def indexed(run, tmp_path):
    rows = [episode(i, paragraphs=4) for i in range(8)]
    assert run("ingest", str(write_jsonl(tmp_path / "e.jsonl", rows))).code == 0
    assert run("index", "--no-keyword-lists").code == 0
    assert serving(run) == (1, "ready")
    return tmp_path


def change_during_index(run, weights, folder, name) -> None:
    """The model changes while ``index`` writes a new episode: the serving generation is stale."""
    more = write_jsonl(folder / f"more-{name}.jsonl", [episode(40 + ord(name), paragraphs=4)])
    assert run("ingest", str(more)).code == 0
    weights.serve(name, after=1)
    refused = run("index", "--no-keyword-lists")
    assert refused.code == 6 and "changed under the same name" in refused.err
    assert serving(run)[1] == "stale" and not vector_search_works(run)


def change_during_reindex(run, weights, name) -> int:
    """The model changes in the middle of a ``reindex``: the generation it builds is stale."""
    weights.serve(name, after=6)
    refused = run("reindex")
    assert refused.code == 6, refused.out + refused.err
    started = int(refused.out.split("generation ", 1)[1].split()[0])
    return started


def test_reindex_recovers_after_two_successive_model_changes(run, model, indexed):
    _, weights = model
    change_during_index(run, weights, indexed, "B")  # generation 1 stale
    building = change_during_reindex(run, weights, "C")  # generation 2 stale, half built
    assert building == 2 and serving(run) == (1, "stale")
    # No way back to an earlier good generation: there is none, and the message says what to do.
    back = run("reindex", "--rollback")
    assert back.code == 2 and "`memory-pipeline reindex` builds a new generation" in back.err

    recovered = run("reindex")

    assert recovered.code == 0, recovered.out + recovered.err
    assert "generation 2 was begun by another model than the one served now" in recovered.err
    assert "started generation 3" in recovered.out
    assert "search now uses ollama/qwen3-embedding:0.6b@512 generation 3" in recovered.out
    assert serving(run) == (3, "ready") and vector_search_works(run)
    assert run("index", "--no-keyword-lists").code == 0  # the everyday path works again
    # Generations 1 and 2 are stale: never served again, so there is nothing to roll back to.
    nothing = run("reindex", "--rollback")
    assert nothing.code == 2 and "is stale" in nothing.err
    assert serving(run) == (3, "ready")


def test_reindex_recovers_after_three_changes_and_rolls_back_only_to_a_matching_model(
    run, model, indexed
):
    _, weights = model
    assert run("reindex").code == 0 and serving(run) == (2, "ready")  # generation 1 retired
    change_during_index(run, weights, indexed, "B")  # generation 2 stale
    assert change_during_reindex(run, weights, "C") == 3  # generation 3 stale
    weights.serve("D")
    # Back to generation 1 (weights A): refused while another model is served, at any step.
    refused = run("reindex", "--rollback")
    assert refused.code == 6 and "generation 1 of ollama/qwen3-embedding:0.6b@512" in refused.err
    assert "serve that model again" in refused.err and serving(run) == (2, "stale")
    building = change_during_reindex(run, weights, "E")  # a third change mid-reindex
    assert building == 4

    recovered = run("reindex")

    assert recovered.code == 0, recovered.out + recovered.err
    assert "started generation 5" in recovered.out
    assert serving(run) == (5, "ready") and vector_search_works(run)
    # The original weights are served again: rolling back returns to generation 1 and passes
    # over the stale ones, which stay stale.
    weights.serve("A")
    back = run("reindex", "--rollback")
    assert back.code == 0, back.err
    assert back.out.strip() == (
        "search now uses ollama/qwen3-embedding:0.6b@512 generation 1 (was generation 5)"
    )
    assert serving(run) == (1, "ready") and vector_search_works(run)
    again = run("reindex", "--rollback")
    assert again.code == 2 and "nothing to roll back" in again.err


def test_an_interrupted_reindex_resumes_only_under_the_model_that_began_it(run, model, indexed):
    server, weights = model
    server.fail_after = server.served + 6  # the model server goes away mid-reindex
    assert run("reindex").code == 5
    server.fail_after = None
    # The same weights come back: the half-built generation 2 is resumed, not restarted.
    resumed = run("reindex", "--no-wait")
    assert resumed.code == 0 and "resuming generation 2" in resumed.out
    # Other weights are served before it is finished: generation 2 cannot be completed by them.
    weights.serve("B")
    fresh = run("reindex")
    assert fresh.code == 0, fresh.out + fresh.err
    assert "generation 2 was begun by another model than the one served now" in fresh.err
    assert "started generation 3" in fresh.out and serving(run) == (3, "ready")
    assert vector_search_works(run)
