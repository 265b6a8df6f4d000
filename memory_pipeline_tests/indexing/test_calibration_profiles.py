"""Each embedding profile measured once against the probe set, through ``Memory`` on a real
database and a loopback model server: the cut-offs are stored with the generation, shown by
``status``, used to decide what is close, and a failed measurement keeps the defaults and says
why (one that could not reach the model is measured again by the next pass)."""

from __future__ import annotations

import numpy as np
import pytest

from memory_pipeline import Memory
from memory_pipeline.domain import calibration
from memory_pipeline.domain.calibration import DEFAULT_CLOSE, DEFAULT_DUPLICATE
from memory_pipeline_tests.support.loopback import LoopbackEmbeddingServer, hashing_vector

DIM = 64
NOTE = {
    "memory": "me",
    "kind": "note",
    "title": "First note",
    "occurred_at": "2026-01-05",
    "body": "A first note, so that the model is used and measured.",
}


def shifted(texts):
    """Bag-of-words vectors sharing one strong common direction: unrelated texts lie near
    cosine 0.9, like a model whose baseline sits above the old fixed cut-off of 0.85."""
    common = np.zeros(DIM, dtype=np.float32)
    common[0] = 1.0
    rows = np.array([hashing_vector(t, DIM) for t in texts], dtype=np.float32) + 3.0 * common
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def open_memory(db_url, server) -> Memory:
    return Memory.open(
        url=db_url,
        embed_provider="openai",
        embed_url=server.url,
        embed_model="loopback",
        embed_dim=DIM,
        record_in_dagster=False,
    )


def test_a_model_with_a_high_baseline_gets_its_own_cut_off(db_url):
    with (
        LoopbackEmbeddingServer(dim=DIM, vector_fn=shifted) as server,
        open_memory(db_url, server) as mem,
    ):
        assert mem.status().to_json()["calibration"] is None  # nothing embedded yet: no profile
        mem.add([NOTE])
        mem.index()
        measured = mem.status().to_json()["calibration"]
        # (A bag of words cannot tell paraphrases from other facts: a flagged compromise.)
        assert measured["measured"]
        assert measured["close"] > DEFAULT_CLOSE and measured["duplicate"] > measured["close"]
        first = mem.observe("me", "Priya drives a Skoda Fabia", decision="add")
        a, b = mem.embedder.embed_documents(
            ["Priya drives a Skoda Fabia", "Marek plays the cello in an orchestra"]
        )
        assert float(np.dot(a, b)) >= DEFAULT_CLOSE  # the old cut-off would hold it back
        other = mem.observe("me", "Marek plays the cello in an orchestra")
        assert other.action == "added" and other.saved
        same = mem.observe("me", "Priya drives a small Skoda Fabia")
        assert same.action in ("undecided", "refused") and not same.saved
        assert [c.observation.id for c in same.close] == [first.saved_id]
        assert same.to_json()["message"].startswith("not saved")
        # Measured once: a second pass keeps what is stored, even with another model's answers.
        server.vector_fn = lambda texts: np.ones((len(texts), DIM), dtype=np.float32)
        mem.add([{**NOTE, "title": "Second note", "body": "Another note."}])
        with pytest.raises(Exception):  # noqa: B017 - the canary refuses the changed model
            mem.index()
        assert mem.status().to_json()["calibration"] == measured


def test_a_model_that_gives_one_vector_keeps_the_defaults_and_says_why(db_url):
    def constant(texts):
        return np.ones((len(texts), DIM), dtype=np.float32)

    with (
        LoopbackEmbeddingServer(dim=DIM, vector_fn=constant) as server,
        open_memory(db_url, server) as mem,
    ):
        mem.add([NOTE])
        mem.index()
        kept = mem.status().to_json()["calibration"]
    assert not kept["measured"] and "same vector" in kept["reason"]
    assert (kept["close"], kept["duplicate"]) == (DEFAULT_CLOSE, DEFAULT_DUPLICATE)


def test_a_model_that_fails_during_the_measurement_is_measured_by_the_next_pass(db_url):
    probes = set(calibration.probe_texts()[0]) | set(calibration.probe_texts()[1])
    broken = [True]

    def vectors(texts):
        # While broken, the probes come back too short (the embedder refuses them); the
        # canary and the note's chunk are embedded as usual.
        if broken[0] and any(t in probes for t in texts):
            return [[1.0] * 8 for _ in texts]
        return [hashing_vector(t, DIM) for t in texts]

    with (
        LoopbackEmbeddingServer(dim=DIM, vector_fn=vectors) as server,
        open_memory(db_url, server) as mem,
    ):
        mem.add([NOTE])
        report = mem.index()  # the vectors are written whatever the measurement does
        assert report.vectors == 1 and report.pending_after == 0
        failed = mem.status().to_json()["calibration"]
        assert not failed["measured"] and failed["retry"]
        assert "could not be embedded" in failed["reason"]
        assert (failed["close"], failed["duplicate"]) == (DEFAULT_CLOSE, DEFAULT_DUPLICATE)
        broken[0] = False
        mem.add([{**NOTE, "title": "Second note", "body": "Another note."}])
        mem.index()
        assert mem.status().to_json()["calibration"]["measured"]


@pytest.mark.slow
def test_bench_calibration_quick_runs_on_a_loopback_server(tmp_path):
    from memory_pipeline_tests.helpers import run_benchmark

    out = tmp_path / "calibration.json"
    with LoopbackEmbeddingServer(dim=384) as server:
        done = run_benchmark(
            "bench_calibration.py", "--quick", "--embed-url", server.url, "--json", str(out)
        )
    # A bag-of-words model may miss the targets (exit 1); the run itself must work.
    assert done.returncode in (0, 1), done.stderr
    import json

    figures = json.loads(out.read_text())
    result = figures["profiles"]["loopback"]
    assert result["calibration"]["measured"] is not None
    assert result["paraphrase"]["pairs"] == result["same subject"]["pairs"] == 4
    assert 0 <= result["different facts"]["reported_close"] <= 1
    assert "targets" in done.stdout
