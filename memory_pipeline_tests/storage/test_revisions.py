"""Revisions of one source (DESIGN.md): a changed body of the same JSONL id, file path or API
id is a new revision superseding the old one, which leaves the index but stays as history."""

from __future__ import annotations

import pytest

from memory_pipeline_tests.helpers import count
from memory_pipeline_tests.support import stores


def note(body: str, *, id: str | None = "n1", memory: str = "alice", title: str = "Cost") -> dict:
    item = {
        "memory": memory,
        "kind": "note",
        "title": title,
        "occurred_at": "2026-03-01T09:00:00Z",
        "body": body,
    }
    return item if id is None else {**item, "id": id}


def revisions(mem, memory: str = "alice") -> list[tuple]:
    with mem.db.connection() as conn:
        return conn.execute(
            "SELECT id, source_key, superseded_at IS NOT NULL, superseded_by FROM episodes"
            " WHERE memory = %s ORDER BY id",
            (memory,),
        ).fetchall()


def test_a_changed_body_of_an_id_supersedes_the_current_revision(mem):
    first = mem.add([note("Cost estimate: 180 EUR for the new fence.")])
    assert (first.inserted, first.revised) == (1, 0)
    again = mem.add([note("Cost estimate: 180 EUR for the new fence.")])
    assert (again.inserted, again.duplicates, again.revised) == (0, 1, 0)
    edited = mem.add([note("Cost estimate: 240 EUR for the new fence.")])
    assert (edited.inserted, edited.revised, edited.duplicates) == (1, 1, 0)
    old, new = first.inserted_ids[0], edited.inserted_ids[0]
    assert revisions(mem) == [(old, "id:n1", True, new), (new, "id:n1", False, None)]
    # The memory's own time: the old revision stopped being current when the new one came.
    assert (
        count(
            mem.db,
            "SELECT count(*) FROM episodes o JOIN episodes n ON n.id = o.superseded_by"
            " WHERE o.superseded_at = n.ingested_at",
        )
        == 1
    )
    # Another memory's same id, and an item without an id, are sources of their own.
    other = mem.add(
        [note("Cost estimate: 240 EUR for the new fence.", memory="bob"), note("x", id=None)]
    )
    assert (other.inserted, other.revised) == (2, 0)
    assert [m.episodes for m in mem.memories()] == [2, 1]


def test_the_body_of_an_earlier_revision_makes_it_current_again(mem):
    a = mem.add([note("Version A of the plan.")]).inserted_ids[0]
    b = mem.add([note("Version B of the plan.")]).inserted_ids[0]
    back = mem.add([note("Version A of the plan.")])
    assert (back.inserted, back.restored, back.duplicates) == (0, 1, 0)
    assert revisions(mem) == [(a, "id:n1", False, None), (b, "id:n1", True, a)]


def test_a_body_another_source_holds_changes_nothing(mem):
    mem.add([note("Shared text.", id="x"), note("Own text.", id="y")])
    report = mem.add([note("Shared text.", id="y")])
    assert (report.inserted, report.duplicates, report.revised) == (0, 1, 0)
    assert [row[2] for row in revisions(mem)] == [False, False]


def test_folder_files_are_sources_by_their_path_within_the_folder(mem, tmp_path, monkeypatch):
    notes = tmp_path / "notes"
    (notes / "sub").mkdir(parents=True)
    (notes / "sub" / "a.md").write_text("# Fence\n\nCost estimate: 180 EUR.\n", encoding="utf-8")
    (notes / "b.md").write_text("# Other\n\nUnrelated.\n", encoding="utf-8")
    assert mem.ingest([notes], memory="alice").inserted == 2
    (notes / "sub" / "a.md").write_text("# Fence\n\nCost estimate: 240 EUR.\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)  # the same folder named another way
    report = mem.ingest(["./notes"], memory="alice")
    assert (report.inserted, report.revised, report.duplicates) == (1, 1, 1)
    keys = [(key, superseded) for _, key, superseded, _ in revisions(mem)]
    assert keys == [
        ("file:notes/b.md", False),
        ("file:notes/sub/a.md", True),
        ("file:notes/sub/a.md", False),
    ]
    assert "1 new revision(s) of stored sources" in report.summary()
    # A file given alone is its name.
    single = mem.ingest([notes / "b.md"], memory="alice")
    assert single.duplicates == 1


def test_a_superseded_revision_leaves_every_index_and_is_never_pending_again(mem):
    mem.add([note("Cost estimate: 180 EUR for the fence. Anneliese Brandt will build it.")])
    mem.add([note("Garden: tomatoes and basil by Anneliese Brandt.", id="n2", title="Garden")])
    mem.index()
    old = revisions(mem)[0][0]
    with mem.db.connection() as conn:
        conn.execute(
            "INSERT INTO entities (memory, name, source) VALUES ('alice', 'Anneliese Brandt', 'import')"
        )
        from memory_pipeline.storage import entities_store

        stores.refresh_memories(conn, ["alice"], entities_store.EntityReport())
    assert count(mem.db, "SELECT count(*) FROM entity_mentions WHERE episode_id = %s", old) == 1
    vectors_before = count(mem.db, "SELECT count(*) FROM embeddings")
    mem.add([note("Cost estimate: 240 EUR for the fence. Anneliese Brandt will build it.")])
    for table in ("chunks", "entity_mentions", "episode_names"):
        assert count(mem.db, f"SELECT count(*) FROM {table} WHERE episode_id = %s", old) == 0
    assert count(mem.db, "SELECT count(*) FROM embeddings") < vectors_before
    with mem.db.connection() as conn:
        assert stores.stored_stats(conn, "alice") == stores.counted_stats(conn, "alice")
    report = mem.index()
    assert report.episodes == 1 and report.pending_after == 0
    assert count(mem.db, "SELECT count(*) FROM chunks WHERE episode_id = %s", old) == 0
    assert mem.status().to_json()["pendingEpisodes"] == 0


def test_forgetting_any_revision_forgets_the_whole_source(mem):
    mem.add([note("One."), note("Other source.", id="n2")])
    mem.add([note("Two.")])
    newest = mem.add([note("Three.")]).inserted_ids[0]
    counts = mem.forget("alice", episode_id=newest)
    assert counts.episodes == 3
    assert [key for _, key, _, _ in revisions(mem)] == ["id:n2"]


@pytest.mark.parametrize(
    "bodies", [("First body.", "Second body."), ("Second body.", "First body.")]
)
def test_revisions_of_one_source_in_one_call_are_stored_in_input_order(mem, bodies):
    report = mem.add([note(bodies[0]), note(bodies[1])])
    assert (report.inserted, report.revised) == (2, 1)
    current = [row[0] for row in revisions(mem) if not row[2]]
    assert current == [report.inserted_ids[1]]


def test_a_database_with_repeated_ids_migrates_to_revisions(pg_server, tmp_path):
    import shutil

    import psycopg

    from memory_pipeline.storage.migrations import apply_migrations, migration_files
    from memory_pipeline_tests.conftest import create_database, drop_database

    older = tmp_path / "migrations"
    older.mkdir()
    for version, _, path in migration_files():
        if version <= 30:
            shutil.copy(path, older / path.name)
    name = create_database(pg_server, template=None)
    try:
        with psycopg.connect(pg_server.uri(name), autocommit=True) as conn:
            apply_migrations(conn, older)
            # As before revisions: one id ingested with three bodies is three episodes, each
            # indexed (a chunk each, counted in the keyword statistics); another id once; a file.
            for i, (external_id, body) in enumerate(
                [
                    ("a", "cost 180 EUR"),
                    ("b", "garden beds"),
                    ("a", "cost 240 EUR"),
                    (None, "file note"),
                    ("a", "cost 300 EUR"),
                ]
            ):
                conn.execute(
                    "INSERT INTO episodes (memory, kind, title, occurred_at, ingest_day, body,"
                    " content_hash, external_id, ingested_at) VALUES ('m', 'note', 't', now(),"
                    " current_date, %s, %s, %s, now() + make_interval(secs => %s))",
                    (body, f"h{i}", external_id, i),
                )
            conn.execute(
                "INSERT INTO chunks (episode_id, ordinal, memory, chunk_id, start_char, end_char,"
                " token_estimate, text) SELECT id, 0, memory, 'c' || id, 0, length(body), 3, body"
                " FROM episodes"
            )
            conn.execute(
                "INSERT INTO keyword_memory_stats (memory, chunks, total_lexemes, episodes)"
                " SELECT memory, count(*), sum(length(tsv)), count(*) FROM chunks GROUP BY memory"
            )
            conn.execute(
                "INSERT INTO keyword_stats (memory, lexeme, df) SELECT c.memory, u.lexeme, count(*)"
                " FROM chunks c, unnest(tsvector_to_array(c.tsv)) AS u(lexeme) GROUP BY 1, 2"
            )
            # A belief revised before statements had superseded_at (migration 0034).
            conn.execute(
                "INSERT INTO observations (memory, kind, status, text) VALUES"
                " ('m', 'belief', 'retired', 'tea')"
            )
            conn.execute(
                "INSERT INTO observations (memory, kind, text, revises, created_at) SELECT"
                " 'm', 'belief', 'coffee', id, now() + interval '1 day' FROM observations"
            )
            # 0031 and every later migration, whatever they are.
            assert apply_migrations(conn) == [
                name for number, name, _ in migration_files() if number >= 31
            ]
            rows = conn.execute(
                "SELECT id, source_key, superseded_by, superseded_at IS NOT NULL,"
                " (SELECT count(*) FROM chunks c WHERE c.episode_id = e.id)"
                " FROM episodes e ORDER BY id"
            ).fetchall()
            ids = [row[0] for row in rows]
            assert [row[1:] for row in rows] == [
                ("id:a", ids[2], True, 0),
                ("id:b", None, False, 1),
                ("id:a", ids[4], True, 0),
                (None, None, False, 1),
                ("id:a", None, False, 1),
            ]
            assert stores.stored_stats(conn, "m") == stores.counted_stats(conn, "m")
            assert "cost" in stores.stored_stats(conn, "m")[1]
            assert "180" not in stores.stored_stats(conn, "m")[1]
            # As of a date (0034): each later revision took its place when the one before was
            # superseded; a superseded statement when its successor was recorded.
            assert conn.execute(
                "SELECT e.id FROM episodes e JOIN episodes p ON p.superseded_by = e.id"
                " WHERE e.current_from = p.superseded_at ORDER BY e.id"
            ).fetchall() == [(ids[2],), (ids[4],)]
            assert conn.execute(
                "SELECT count(*) FROM episodes WHERE current_from IS NOT NULL"
            ).fetchone() == (2,)
            assert conn.execute(
                "SELECT o.superseded_at = s.created_at FROM observations o"
                " JOIN observations s ON s.revises = o.id"
            ).fetchall() == [(True,)]
    finally:
        drop_database(pg_server, name)


def test_keyword_statistics_follow_revisions_in_several_memories_at_once(mem):
    mem.add([note("Only note of solo: apples.", memory="solo"), note("Alice one: pears.")])
    mem.add([note("Alice two: pears and plums.", id="n2")])
    mem.index()
    # One call revises a source in each memory: solo loses its only chunks.
    mem.add([note("Solo again: cherries.", memory="solo"), note("Alice one: figs.")])
    with mem.db.connection() as conn:
        for memory in ("alice", "solo"):
            stored = stores.stored_stats(conn, memory)
            assert stored == stores.counted_stats(conn, memory), memory
        assert stores.stored_stats(conn, "solo") == (None, {})
    mem.index()
    with mem.db.connection() as conn:
        for memory in ("alice", "solo"):
            stored = stores.stored_stats(conn, memory)
            assert stored == stores.counted_stats(conn, memory), memory
        assert "cherri" in stores.stored_stats(conn, "solo")[1]


def test_superseded_revisions_are_not_work_left_for_the_day_checks_or_the_chunks_stage(mem):
    from memory_pipeline.indexing.days import chunk_pending
    from memory_pipeline.storage import entities_store, index_store, partition_store

    day = mem.add([note("Cost: 180 EUR."), note("Other.", id="n2")]).ingest_day
    mem.index()
    with mem.db.connection() as conn:
        stores.refresh_memories(conn, ["alice"], entities_store.EntityReport())
    mem.add([note("Cost: 240 EUR.")])
    with mem.db.connection() as conn:
        # Only the new revision is work: the superseded one has no chunks on purpose.
        assert [e.id for e in index_store.unchunked_episodes(conn, limit=10)] == [
            r[0] for r in revisions(mem) if r[1] == "id:n1" and not r[2]
        ]
    assert chunk_pending(mem.db, anchors=True, limit=1).episodes == 1
    mem.index()
    with mem.db.connection() as conn:
        stores.refresh_memories(conn, ["alice"], entities_store.EntityReport())
        assert partition_store.chunk_stats(conn, day)["episodes_without_chunks"] == 0
        assert partition_store.entity_stats(conn, day)["episodes_without_names"] == 0
        assert index_store.unchunked_episodes(conn, limit=10) == []
