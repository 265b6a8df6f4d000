"""A small indexed world for search tests: two memories that share words and entity names."""

from __future__ import annotations

import datetime as dt

import pytest

from memory_pipeline.domain.entities import Entity
from memory_pipeline.domain.policies import load_policies
from memory_pipeline.indexing.until_done import index_pending
from memory_pipeline.ingest import ingest_paths
from memory_pipeline.search.service import SearchService
from memory_pipeline.storage import entities_store, hnsw_store
from memory_pipeline.storage.profiles_store import active_profile
from memory_pipeline_tests.helpers import ollama_embedder, write_jsonl
from memory_pipeline_tests.support import stores
from memory_pipeline_tests.support.loopback import LoopbackEmbeddingServer

NOW = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC)

ALICE = [
    (
        "note",
        "Garden plan",
        "2026-11-20",
        "Planted tulips and garlic in the back garden with Tomás. The soil was wet.",
    ),
    (
        "journal",
        "Bike repair",
        "2026-11-25",
        "Fixed the bicycle chain; the derailleur needed oil. Error code LDG-4102 on the bike computer.",
    ),
    (
        "journal",
        "Recipe night",
        "2026-10-01",
        "Baked sourdough bread and a cherry pie for the book club.",
    ),
    (
        "chat",
        "Поездка",
        "2026-09-15",
        "Дмитрий: Как прошла пробежка в парке?\n\nAlice: Отлично, десять километров.",
    ),
    (
        "note",
        "Odd identifiers",
        "2025-01-05",
        "Config key x_y%z and path C:\\temp\\new must be kept; quote 'it''s' here.",
    ),
    (
        "doc",
        "Old garden memory",
        "2020-05-01",
        "Grandmother's garden had roses and a pear tree; Tomás visited every summer.",
    ),
]
BOB = [
    (
        "note",
        "Bob garden",
        "2026-11-28",
        "My garden with Tomás: tulips, garlic, soil, wet. Garden garden garden.",
    ),
    ("journal", "Bob bicycle", "2026-11-29", "Bicycle chain and derailleur oil, LDG-4102 again."),
]


def rows_for(memory: str, items) -> list[dict]:
    return [
        {
            "memory": memory,
            "kind": k,
            "title": t,
            "occurred_at": d + "T09:00:00Z",
            "body": b,
            "salience": 0.5,
        }
        for k, t, d, b in items
    ]


@pytest.fixture
def embed_server():
    # instruction_aware: the qwen3 query instruction would otherwise dominate the hash vectors.
    with LoopbackEmbeddingServer(dim=1024, instruction_aware=True) as server:
        yield server


@pytest.fixture
def world(db, tmp_path, embed_server):
    path = write_jsonl(tmp_path / "world.jsonl", rows_for("alice", ALICE) + rows_for("bob", BOB))
    ingest_paths(db, [path])
    embedder = ollama_embedder(embed_server.url)
    index_pending(db, embedder)
    report = entities_store.EntityReport()
    with db.connection() as conn:
        entities_store.import_entities(
            conn,
            [("alice", Entity("Tomás Rocha", ("Tomás", "Tom"))), ("bob", Entity("Tomás", ()))],
            report,
        )
        stores.refresh_memories(conn, ["alice", "bob"], report)
        hnsw_store.ensure_index(conn, active_profile(conn))
    return embedder


@pytest.fixture
def service(db, world):
    return SearchService(db, load_policies(), embedder=world, clock=lambda: NOW)


def memory_of(db, chunk_id: str) -> set[str]:
    with db.connection() as conn:
        return {
            r[0] for r in conn.execute("SELECT memory FROM chunks WHERE chunk_id = %s", (chunk_id,))
        }
