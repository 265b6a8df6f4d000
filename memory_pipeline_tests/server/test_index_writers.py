"""One index path for every writer (issue 38): the CLI's ``index``, ``Memory.index`` and
``POST /v1/index`` store the same chunks, vectors and entity links for the same episodes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from memory_pipeline.domain.entities import Entity
from memory_pipeline.storage import entities_store

SCRIPT = Path(sys.executable).with_name("memory-pipeline")
BODIES = [
    "Yesterday we met Marta Quintela at the depot. Then McDonald called.",
    "The depot plan: ask Marta and Tomás Rocha about the crane.\n\nTomás Rocha agreed.",
    "Nothing here names anyone at all.",
]


def _episodes(memory: str) -> list[dict]:
    return [
        {
            "memory": memory,
            "kind": "note",
            "title": f"note {i}",
            "occurred_at": "2026-02-01T08:00:00Z",
            "body": body,
        }
        for i, body in enumerate(BODIES)
    ]


def _rows(mem, memory: str) -> dict[str, set]:
    """What indexing stored for a memory's episodes, by episode title (ids differ per memory)."""
    with mem.db.connection() as conn:

        def rows(sql: str) -> set:
            return set(conn.execute(sql, {"memory": memory}).fetchall())

        return {
            "chunks": rows(
                "SELECT e.title, c.ordinal, c.text FROM chunks c JOIN episodes e "
                "ON e.id = c.episode_id WHERE c.memory = %(memory)s"
            ),
            "vectors": rows(
                "SELECT e.title, c.ordinal, v.embedding::text FROM chunks c "
                "JOIN episodes e ON e.id = c.episode_id JOIN embeddings v "
                "ON v.memory = c.memory AND v.chunk_id = c.chunk_id WHERE c.memory = %(memory)s"
            ),
            "names": rows(
                "SELECT e.title, n.names::text FROM episode_names n JOIN episodes e "
                "ON e.id = n.episode_id WHERE n.memory = %(memory)s"
            ),
            "links": rows(
                "SELECT t.name, e.title FROM entity_mentions m JOIN entities t ON t.id = m.entity_id "
                "JOIN episodes e ON e.id = m.episode_id WHERE m.memory = %(memory)s"
            ),
        }


def test_the_cli_the_python_api_and_the_http_api_index_alike(local, api, env):
    writers = ("cli", "python", "http")
    with local.db.connection() as conn:
        entities_store.import_entities(
            conn,
            [
                (memory, entity)
                for memory in writers
                for entity in (Entity("Marta Quintela", ("Marta",)), Entity("Tomás Rocha"))
            ],
            entities_store.EntityReport(),
        )
    assert local.add(_episodes("cli")).inserted == len(BODIES)
    done = subprocess.run([str(SCRIPT), "index"], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert local.add(_episodes("python")).inserted == len(BODIES)
    assert local.index().episodes == len(BODIES)
    assert local.add(_episodes("http")).inserted == len(BODIES)
    assert api.post("/v1/index").status_code == 200

    by_writer = {memory: _rows(local, memory) for memory in writers}
    cli = by_writer["cli"]
    assert len(cli["chunks"]) >= len(BODIES) and len(cli["vectors"]) == len(cli["chunks"])
    assert len(cli["names"]) == len(BODIES)
    assert {name for name, _ in cli["links"]} == {"Marta Quintela", "Tomás Rocha"}
    assert by_writer["python"] == cli and by_writer["http"] == cli
