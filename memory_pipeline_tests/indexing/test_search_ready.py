"""Every writer of vectors leaves search fast (``memory_pipeline.indexing.serving``): the serving
generation's HNSW index is built once when missing, concurrently (search answers meanwhile,
``status`` says how far the build is), never by two builders at once, and kept current by
pgvector afterwards. Real database, real loopback model server."""

from __future__ import annotations

import threading
import time

import psycopg

from memory_pipeline.storage import hnsw_store, profiles_store
from memory_pipeline_tests.helpers import count


def _notes(n: int, memory: str = "alice", start: int = 0) -> list[dict]:
    return [
        {
            "memory": memory,
            "kind": "note",
            "title": f"note {i}",
            "occurred_at": "2026-03-01",
            "body": f"Note {i} about the harbour ferry and sourdough bread number {i}.",
        }
        for i in range(start, start + n)
    ]


def _index_state(conn: psycopg.Connection, name: str) -> tuple[bool, bool] | None:
    row = conn.execute(
        "SELECT i.indisvalid, i.indisready FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid "
        "WHERE c.relname = %s",
        (name,),
    ).fetchone()
    return None if row is None else (bool(row[0]), bool(row[1]))


def test_index_builds_the_serving_hnsw_index_once_and_pgvector_keeps_it(mem):
    mem.add(_notes(30))
    first = mem.index()
    ready = first.search_ready
    assert ready.index.outcome == "built" and ready.index.valid and ready.index.rows == 30
    assert ready.analyzed and ready.index.build_seconds is not None
    with mem.db.connection() as conn:
        profile = profiles_store.active_profile(conn)
        name = hnsw_store.index_name(profile)
        assert _index_state(conn, name) == (True, True)
    # Later runs find it valid and leave it be; the rows they write are in it.
    mem.add(_notes(5, start=30))
    second = mem.index()
    assert second.search_ready.index.outcome == "present"
    # Not counted again: a count of the generation's rows is for a build only.
    assert second.search_ready.index.rows is None and not second.search_ready.analyzed
    assert mem.status().to_json()["index"]["valid"] is True
    hits = mem.search("alice", "harbour ferry sourdough bread number 33").results
    assert hits and any("Note 33 " in h.snippet for h in hits[:3])


def test_a_second_builder_leaves_the_build_to_the_first(mem, db_url):
    mem.add(_notes(10))
    with mem.db.connection() as conn:
        before = mem.index()  # builds it
        profile = profiles_store.active_profile(conn)
        name = hnsw_store.index_name(profile)
        assert before.search_ready.index.outcome == "built"
        conn.execute(psycopg.sql.SQL("DROP INDEX {}").format(psycopg.sql.Identifier(name)))
    with psycopg.connect(db_url, autocommit=True) as other:
        # Another session holds the build's lock: this one must not build beside it, nor drop
        # what it may have left unfinished.
        other.execute(
            "SELECT pg_advisory_lock(%s, hashtext(%s))", (hnsw_store.BUILD_LOCK_CLASS, name)
        )
        mem.add(_notes(2, start=10))
        busy = mem.index().search_ready.index
        assert busy.outcome == "busy" and not busy.exists
        other.execute(
            "SELECT pg_advisory_unlock(%s, hashtext(%s))", (hnsw_store.BUILD_LOCK_CLASS, name)
        )
    after = mem.index().search_ready.index  # nothing pending: it still builds what is missing
    assert after.outcome == "built" and after.valid and after.rows == 12


def test_status_reports_a_running_build_and_search_answers_during_it(mem, db_url):
    mem.add(_notes(40))
    mem.index()
    with mem.db.connection() as conn:
        profile = profiles_store.active_profile(conn)
        name = hnsw_store.index_name(profile)
        conn.execute(psycopg.sql.SQL("DROP INDEX {}").format(psycopg.sql.Identifier(name)))
    outcome: dict = {}
    with psycopg.connect(db_url) as writer:
        # A writer's open transaction: CREATE INDEX CONCURRENTLY waits for it before building,
        # which holds the build in its first phase for as long as the test needs.
        writer.execute("LOCK TABLE embeddings IN ROW EXCLUSIVE MODE")

        def build() -> None:
            with mem.db.connection() as conn:
                outcome["state"] = hnsw_store.ensure_index(conn, profile)

        builder = threading.Thread(target=build)
        builder.start()
        deadline = time.monotonic() + 30
        building = None
        while building is None and time.monotonic() < deadline:
            building = mem.status().to_json()["index"]["building"]
            time.sleep(0.05)
        assert building is not None, "status never showed the running build"
        assert building["phase"].startswith("waiting for writers")
        assert building["vectorsTotal"] == 40 and building["seconds"] >= 0
        found = mem.search("alice", "harbour ferry sourdough bread number 17")
        assert found.vector_status == "ok" and any("Note 17 " in h.snippet for h in found.results)
        writer.rollback()
    builder.join(timeout=60)
    assert outcome["state"].outcome == "built" and outcome["state"].valid
    status = mem.status().to_json()["index"]
    assert status["building"] is None and status["valid"] is True
    assert count(mem.db, "SELECT count(*) FROM embeddings") == 40


def test_the_build_takes_a_worker_per_further_core_up_to_three():
    # After the pass the cores are free: one worker on 2 cores (1.7x faster there), none on 1.
    assert [hnsw_store.build_workers(cores) for cores in (1, 2, 3, 4, 16)] == [0, 1, 2, 3, 3]


def test_a_parallel_build_needs_room_in_this_machines_shared_memory(db):
    # The test server is reached through a unix socket: it shares this machine's /dev/shm,
    # whose free space decides whether a parallel build's graph fits there.
    with db.connection() as conn:
        assert str(conn.info.host).startswith("/")
        assert hnsw_store.shared_memory_allows(conn, 64)
        assert not hnsw_store.shared_memory_allows(conn, 2**40)  # a terabyte-sized graph
