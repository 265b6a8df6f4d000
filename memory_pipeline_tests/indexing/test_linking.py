"""Entity linking beside the index pass (``memory_pipeline.indexing.linking``): the rows it stores are the
``entity_mentions`` stage's, what an earlier run left unlinked is linked by the next, failures are
raised plainly and no worker process outlives the call. Real database, real worker process."""

from __future__ import annotations

import datetime as dt
import multiprocessing

import pytest

from memory_pipeline import Memory
from memory_pipeline.domain.entities import Entity
from memory_pipeline.errors import DatabaseUnavailable, EmbedderUnavailable
from memory_pipeline.indexing import linking
from memory_pipeline.indexing.linking import EntityLinker, LinkingFailed
from memory_pipeline.indexing.until_done import index_pending
from memory_pipeline.storage import entities_store
from memory_pipeline_tests.helpers import count
from memory_pipeline_tests.support.loopback import unused_port_url

DAY = dt.date(2026, 3, 1)
BODIES = [
    "Yesterday we met Marta Quintela at the depot. Then McDonald called.",
    "The depot plan: ask Marta and Tomás Rocha about the crane.",
    "Tomás Rocha and McDonald agreed. Marta was late again.",
    "Nothing here names anyone at all.",
    "Mcdonald and Tomás Rocha left the depot with the mcdonald crane.",
]


def _episodes(memory: str, first: int, bodies: list[str]) -> list[dict]:
    return [
        {
            "memory": memory,
            "kind": "note",
            "title": f"note {first + i}",
            "occurred_at": "2026-02-01",
            "body": body,
        }
        for i, body in enumerate(bodies)
    ]


def _linked(mem: Memory) -> tuple[set, set]:
    with mem.db.connection() as conn:
        names = set(
            conn.execute("SELECT episode_id, memory, names::text FROM episode_names").fetchall()
        )
        mentions = set(
            conn.execute("SELECT entity_id, episode_id, memory FROM entity_mentions").fetchall()
        )
    return names, mentions


# A worker process beside the pass (every run linking in a worker), and this process after it.
@pytest.mark.parametrize("in_process_below", [0, 1000], ids=["worker", "in-process"])
def test_index_links_what_the_entity_mentions_stage_links_and_what_an_earlier_run_left(
    mem, monkeypatch, in_process_below
):
    monkeypatch.setattr(linking, "LINK_IN_PROCESS_BELOW", in_process_below)
    with mem.db.connection() as conn:
        entities_store.import_entities(
            conn,
            [
                ("alice", Entity("Marta Quintela", ("Marta",))),
                ("alice", Entity("McDonald")),
                ("bob", Entity("Tomás Rocha")),
            ],
            entities_store.EntityReport(),
        )
    mem.add(_episodes("alice", 0, BODIES), ingest_day=DAY)
    # Committed, never linked: a run stopped before its linking reached them (the core's passes
    # alone, without Memory.index's linking).
    index_pending(mem.db, mem.embedder)
    assert count(mem.db, "SELECT count(*) FROM episode_names") == 0
    # bob's title names an entity its body does not: titles are matched too.
    mem.add(
        _episodes("alice", 10, [body + " Later." for body in BODIES[:2]])
        + _episodes("bob", 20, BODIES[1:])
        + [
            {
                **_episodes("bob", 30, ["A call about the crane."])[0],
                "title": "Call with Tomás Rocha",
            }
        ],
        ingest_day=DAY,
    )
    report = mem.index()
    assert report.episodes == 7 and report.pending_after == 0
    names, mentions = _linked(mem)
    assert len(names) == 12 and len(mentions) >= 12

    # The stage's own work from scratch over the same episodes stores the same rows.
    with mem.db.connection() as conn:
        conn.execute("DELETE FROM entity_mentions")
        conn.execute("DELETE FROM episode_names")
        entities_store.refresh_day(conn, DAY, entities_store.EntityReport())
    assert _linked(mem) == (names, mentions)
    assert multiprocessing.active_children() == []


def test_a_model_down_is_raised_and_stops_the_worker(mem, db_url):
    mem.add(_episodes("alice", 0, BODIES), ingest_day=DAY)
    with Memory.open(
        url=db_url, embed_provider="ollama", embed_url=unused_port_url(), record_in_dagster=False
    ) as down:
        with pytest.raises(
            EmbedderUnavailable, match="the Ollama embedding service is unavailable"
        ):
            down.index()
    assert multiprocessing.active_children() == []


def test_the_workers_database_failure_is_a_plain_database_error():
    url = f"postgresql://u:secret@127.0.0.1:{unused_port_url().rsplit(':', 1)[1]}/x"
    with EntityLinker(url) as linker:
        with pytest.raises(DatabaseUnavailable) as info:
            linker.finish()
    assert str(info.value).startswith("the database is unavailable: entity linking, ")
    assert "secret" not in str(info.value)
    assert multiprocessing.active_children() == []


def test_the_workers_failure_during_the_pass_is_raised_as_itself(mem, monkeypatch):
    from memory_pipeline.indexing import committer

    monkeypatch.setattr(
        committer, "WRITE_EVERY_CHUNKS", 1
    )  # a commit per episode: several after the failure
    mem.add(_episodes("alice", 0, BODIES), ingest_day=DAY)
    with EntityLinker(
        f"postgresql://u@127.0.0.1:{unused_port_url().rsplit(':', 1)[1]}/x"
    ) as linker:
        linker._process.join(30)  # it has failed and said so
        with pytest.raises(DatabaseUnavailable, match="entity linking"):
            mem.index(on_committed=linker.link)
        with pytest.raises(DatabaseUnavailable, match="entity linking"):
            linker.finish()
    assert (
        count(mem.db, "SELECT count(DISTINCT episode_id) FROM chunks") >= 1
    )  # committed work kept


def test_a_worker_killed_from_outside_fails_the_next_batch(db_url):
    with EntityLinker(db_url) as linker:
        linker._process.kill()
        linker._process.join()
        with pytest.raises(LinkingFailed, match="ended unexpectedly"):
            linker.link([1])
