"""Small builders shared by tests: episode files, embedders on loopback servers, row counts."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import dagster as dg

from memory_pipeline.domain import calibration
from memory_pipeline.embedders.base import EmbeddingProfile
from memory_pipeline.embedders.ollama import OllamaEmbedder
from memory_pipeline.orchestration.dagster_storage import as_psycopg2_url
from memory_pipeline.storage.database import Database

QWEN = "qwen3-embedding:0.6b"


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
    )
    return path


def episode(
    i: int, memory: str = "alice", paragraphs: int = 3, words: str = "notes about the garden"
) -> dict:
    body = "\n\n".join(
        f"Entry {i} paragraph {p}: {words} " + ("and more detail " * (10 + (i * 7 + p) % 90))
        for p in range(paragraphs)
    )
    return {
        "memory": memory,
        "kind": "journal" if i % 2 else "note",
        "title": f"Entry {i}",
        "occurred_at": f"2026-0{1 + i % 9}-1{i % 10}T08:00:00Z",
        "body": body,
    }


def ollama_embedder(
    url: str, dim: int = 512, model: str = QWEN, batch_size: int = 16
) -> OllamaEmbedder:
    return OllamaEmbedder(EmbeddingProfile("ollama", model, dim), host=url, batch_size=batch_size)


def is_probe(text: str) -> bool:
    """A text of the calibration's probe set (a question with its query instruction, if any)."""
    documents, questions = calibration.probe_texts()
    return any(text.endswith(probe) for probe in (*documents, *questions))


def split_calibration(server) -> tuple[list, list[list[str]], list[str]]:
    """A loopback server's requests as (the index passes' requests, their inputs, the probe texts
    sent): ``index_pending`` also measures a new generation's model once, after its passes,
    in requests that hold only probe texts (``indexing.calibration``)."""
    kept, inputs, probes = [], [], []
    for request, texts in zip(server.requests, server.inputs, strict=True):
        if texts and all(is_probe(t) for t in texts):
            probes.extend(texts)
        else:
            kept.append(request)
            inputs.append(texts)
    return kept, inputs, probes


def count(db: Database, sql: str, *params) -> int:
    with db.connection() as conn:
        return conn.execute(sql, params).fetchone()[0]


@contextlib.contextmanager
def dagster_instance(db_url: str, home: Path) -> Iterator[dg.DagsterInstance]:
    """A Dagster instance reading the run/event storage that the CLI writes in ``db_url`` (as
    the web UI would), configured in ``home`` (created), disposed on exit."""
    home.mkdir()
    (home / "dagster.yaml").write_text(
        f"storage:\n  postgres:\n    postgres_url: {json.dumps(as_psycopg2_url(db_url))}\n",
        encoding="utf-8",
    )
    instance = dg.DagsterInstance.from_config(str(home))
    try:
        yield instance
    finally:
        instance.dispose()


ROOT = Path(__file__).resolve().parents[1]


def run_benchmark(script: str, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """``benchmarks/<script>`` run with this interpreter from the repository root, as a user runs
    it; its output captured."""
    return subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
