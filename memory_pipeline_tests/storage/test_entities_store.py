"""Entity refresh (entities_store) against the real database: paged reads and writes give what
the domain rule gives for the whole memory at once."""

from __future__ import annotations

import datetime as dt

import psycopg

from memory_pipeline.domain.entities import Entity, EntityMatcher
from memory_pipeline.domain.episodes import make_episode
from memory_pipeline.domain.proper_names import extract_proper_names, recurring_names
from memory_pipeline.storage import entities_store
from memory_pipeline.storage.episodes_store import store_episodes
from memory_pipeline_tests.support import stores

DAY = dt.date(2026, 3, 1)
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
BODIES = [
    "Yesterday we met Marta Quintela at the depot. Then McDonald called.",
    "The depot plan: ask Marta Quintela and Tomás Rocha about the crane.",
    "A note for Mcdonald about the crane; Zed Onlyonce sent nothing.",
    "Tomás Rocha and McDonald agreed. Marta was late again.",
    "Nothing here names anyone at all.",
    "Mcdonald and Tomás Rocha left the depot with the mcdonald crane.",
    "Marta and Marta Quintela both wrote.",
]


def test_refresh_in_small_pages_equals_the_rule_over_the_whole_memory(db, monkeypatch):
    monkeypatch.setattr(entities_store, "PAGE_EPISODES", 2)  # 7 episodes: 4 pages
    drafts = [
        make_episode(
            memory="alice",
            kind="note",
            title=f"note {i}",
            occurred_at=T0 + dt.timedelta(days=i),
            body=body,
        )
        for i, body in enumerate(BODIES)
    ]
    with db.connection() as conn:
        store_episodes(conn, drafts, DAY)
        episodes = conn.execute(
            "SELECT id, title, body FROM episodes WHERE memory = 'alice' ORDER BY id"
        ).fetchall()
        report = entities_store.EntityReport()
        stores.refresh_memories(conn, ["alice"], report)
        stored = conn.execute(
            "SELECT id, name FROM entities WHERE memory = 'alice' ORDER BY id"
        ).fetchall()
        mentions = set(conn.execute("SELECT entity_id, episode_id FROM entity_mentions").fetchall())
        again = entities_store.EntityReport()
        stores.refresh_memories(conn, ["alice"], again)

    # The rule, over every body at once: of two spellings of one name the first in name order wins.
    names: list[str] = []
    for name in recurring_names({i: extract_proper_names(body) for i, _, body in episodes}):
        if name.lower() not in {n.lower() for n in names}:
            names.append(name)
    assert [name for _, name in stored] == names
    assert "McDonald" in names and "Mcdonald" not in names and "Zed Onlyonce" not in names
    matcher = EntityMatcher([(entity_id, Entity(name)) for entity_id, name in stored])
    expected = {
        (entity_id, episode_id)
        for episode_id, title, body in episodes
        for entity_id in matcher.find(title + "\n" + body)
    }
    assert mentions == expected and len(expected) > 8
    assert (report.extracted_episodes, report.promoted, report.mentions_added) == (
        7,
        len(names),
        len(expected),
    )
    assert (again.extracted_episodes, again.promoted, again.mentions_added) == (0, 0, 0)


def test_a_page_of_names_is_stored_as_extracted_and_once(db):
    # Accents, apostrophes, hyphens, Greek, a tab and a no-break space between a name's words; an
    # episode with none gets an empty list. One statement stores the page.
    bodies = [
        *BODIES,
        "We met Marta\tQuintela and Seán O'Brien-Walsh; later Ana\u00a0Lúcia Rocha.",
        "Sunday. Zoë and Ζωή Παπαδοπούλου saw Jean-Luc, then Jean-Luc left.",
    ]
    drafts = [
        make_episode(
            memory="alice",
            kind="note",
            title=f"note {i}",
            occurred_at=T0 + dt.timedelta(days=i),
            body=body,
        )
        for i, body in enumerate(bodies)
    ]
    with db.connection() as conn:
        store_episodes(conn, drafts, DAY)
        rows = conn.execute(
            "SELECT id, body FROM episodes WHERE memory = 'alice' ORDER BY id"
        ).fetchall()
        report = entities_store.EntityReport()
        entities_store.extract_episode_names(conn, [episode_id for episode_id, _ in rows], report)
        stored = dict(conn.execute("SELECT episode_id, names FROM episode_names").fetchall())
        again = entities_store.EntityReport()
        with conn.transaction():  # an episode already named keeps its row
            entities_store._insert_names(
                conn, [(rows[0][0], "alice", "Completely Different Names")], again
            )
        kept = conn.execute(
            "SELECT names FROM episode_names WHERE episode_id = %s", (rows[0][0],)
        ).fetchone()[0]
    assert stored == {episode_id: sorted(extract_proper_names(body)) for episode_id, body in rows}
    by_body = {body: stored[episode_id] for episode_id, body in rows}
    assert by_body[bodies[-2]] == ["Ana Lúcia Rocha", "Marta Quintela", "Seán O'Brien-Walsh"]
    assert by_body[bodies[-1]] == ["Jean-Luc", "Ζωή Παπαδοπούλου"] and by_body[BODIES[4]] == []
    assert report.extracted_episodes == len(bodies) and kept == stored[rows[0][0]]


def test_every_write_of_a_memorys_entities_gives_it_a_new_version_and_nothing_else_does(db):
    from memory_pipeline.storage import forget_store
    from memory_pipeline.storage.search_store import entities_version

    drafts = [
        make_episode(
            memory=m,
            kind="note",
            title=f"note {i}",
            occurred_at=T0 + dt.timedelta(days=i),
            body=body,
        )
        for m in ("alice", "bob")
        for i, body in enumerate(BODIES)
    ]
    seen = []
    with db.connection() as conn:
        store_episodes(conn, drafts, DAY)

        def changed() -> bool:
            version = entities_version(conn, "alice")
            new = version not in seen
            seen.append(version)
            return new

        assert changed() and seen == [None]
        entities_store.import_entities(
            conn, [("alice", Entity("Zed Onlyonce", ()))], entities_store.EntityReport()
        )
        assert changed()
        entities_store.import_entities(
            conn, [("alice", Entity("Zed Onlyonce", ("Zed",)))], entities_store.EntityReport()
        )
        assert changed()  # an UPDATE (aliases) of the row
        stores.refresh_memories(conn, ["alice"], entities_store.EntityReport())  # promotes names
        assert changed()
        stores.refresh_memories(conn, ["alice"], entities_store.EntityReport())  # nothing new
        stores.refresh_memories(conn, ["bob"], entities_store.EntityReport())  # another memory
        assert not changed()
        conn.execute("DELETE FROM entities WHERE memory = 'alice' AND name = 'Zed Onlyonce'")
        assert changed()
        _rolled_back(conn, "DELETE FROM entities WHERE memory = 'alice'")
        assert not changed()
        forget_store.forget(conn, "alice")
        assert changed()
        store_episodes(conn, drafts[: len(BODIES)], DAY)
        stores.refresh_memories(conn, ["alice"], entities_store.EntityReport())
        assert changed()  # a forgotten memory filled again never shows an old version


def _rolled_back(conn, statement: str) -> None:
    """Run ``statement`` in a transaction that is then rolled back."""
    try:
        with conn.transaction():
            conn.execute(statement)
            raise RuntimeError("rolled back")
    except RuntimeError:
        pass


def test_kept_mention_counts_equal_the_mentions_after_every_writer(db):
    from memory_pipeline.storage import forget_store
    from memory_pipeline.storage.search_store import graph_rule_counts

    drafts = [
        make_episode(
            memory=m,
            kind="note",
            title=f"note {i}",
            occurred_at=T0 + dt.timedelta(days=i),
            body=body,
        )
        for m in ("alice", "bob")
        for i, body in enumerate(BODIES)
    ]
    with db.connection() as conn:
        store_episodes(conn, drafts, DAY)

        def check(memory: str = "alice") -> dict[int, int]:
            ids = [
                i for (i,) in conn.execute("SELECT id FROM entities WHERE memory = %s", (memory,))
            ]
            counted = dict(
                conn.execute(
                    "SELECT entity_id, count(*) FROM entity_mentions WHERE entity_id = ANY(%s) "
                    "GROUP BY entity_id",
                    (ids,),
                ).fetchall()
            )
            kept = graph_rule_counts(conn, memory, ids)[0]
            assert kept == {i: counted.get(i, 0) for i in ids}
            return kept

        stores.refresh_memories(conn, ["alice", "bob"], entities_store.EntityReport())
        assert sum(check().values()) > 8 and sum(check("bob").values()) > 8
        stores.refresh_memories(
            conn, ["alice"], entities_store.EntityReport()
        )  # links kept, none new
        entities_store.import_entities(
            conn, [("alice", Entity("Marta", ()))], entities_store.EntityReport()
        )
        stores.refresh_memories(conn, ["alice"], entities_store.EntityReport())
        assert (
            check()[
                conn.execute(
                    "SELECT id FROM entities WHERE name = 'Marta' AND memory = 'alice'"
                ).fetchone()[0]
            ]
            == 2
        )  # bodies 3 and 6
        _rolled_back(conn, "DELETE FROM entity_mentions WHERE memory = 'alice'")
        check()
        first = conn.execute("SELECT min(id) FROM episodes WHERE memory = 'alice'").fetchone()[0]
        forget_store.forget(conn, "alice", [first])  # its links go with it (cascade)
        check()
        conn.execute(
            "DELETE FROM entities WHERE memory = 'alice' AND name = 'Marta'"
        )  # links and counts go too
        check()
        forget_store.forget(conn, "alice")
        assert (
            check() == {}
            and conn.execute(
                "SELECT count(*) FROM entity_mention_deltas d JOIN entities e ON e.id = d.entity_id WHERE e.memory = 'alice'"
            ).fetchone()[0]
            == 0
        )
        check("bob")


def test_compaction_folds_each_entitys_count_rows_and_keeps_every_count_beside_writers(db):
    import threading

    from memory_pipeline.storage.paths import query
    from memory_pipeline.storage.search_store import graph_rule_counts

    drafts = [
        make_episode(
            memory="alice",
            kind="note",
            title=f"note {i}",
            occurred_at=T0 + dt.timedelta(days=i),
            body=body,
        )
        for i, body in enumerate(BODIES)
    ]
    with db.connection() as conn, db.connection() as writer, db.connection() as other:
        for c in (conn, writer, other):
            c.execute("SET lock_timeout = '10s'")  # a wait that should not happen fails, not hangs
        store_episodes(conn, drafts, DAY)
        stores.refresh_memories(conn, ["alice"], entities_store.EntityReport())
        episodes = [i for (i,) in conn.execute("SELECT id FROM episodes ORDER BY id")]
        for episode_id in episodes[:3]:  # unlink and relink: several rows per entity
            conn.execute("DELETE FROM entity_mentions WHERE episode_id = %s", (episode_id,))
            entities_store.link_episodes(
                conn, [episode_id], entities_store.Matchers(), entities_store.EntityReport()
            )

        def rows() -> dict[int, int]:
            return dict(
                conn.execute(
                    "SELECT entity_id, count(*) FROM entity_mention_deltas GROUP BY 1"
                ).fetchall()
            )

        def check() -> None:
            ids = [i for (i,) in conn.execute("SELECT id FROM entities WHERE memory = 'alice'")]
            counted = dict(
                conn.execute(
                    "SELECT entity_id, count(*) FROM entity_mentions GROUP BY 1"
                ).fetchall()
            )
            assert graph_rule_counts(conn, "alice", ids)[0] == {i: counted.get(i, 0) for i in ids}

        assert max(rows().values()) > 1
        check()
        # A writer's uncommitted unlink (its -n rows) beside a compaction: neither waits, and
        # the writer's rows still count once it commits.
        with writer.transaction():
            writer.execute("DELETE FROM entity_mentions WHERE episode_id = %s", (episodes[1],))
            entities_store.compact_mention_counts(conn)
            assert max(rows().values()) == 1
            check()
        check()
        # Two compactions at once: the second waits for the first's rows and sums only its own.
        with other.transaction():
            other.execute(query("entity_mention_deltas_compact"))
            second = threading.Thread(target=entities_store.compact_mention_counts, args=(writer,))
            second.start()
            second.join(0.5)
            assert second.is_alive()  # waiting on the rows the first is folding
        second.join(10)
        check()
        entities_store.compact_mention_counts(conn)
        counted = dict(
            conn.execute("SELECT entity_id, count(*) FROM entity_mentions GROUP BY 1").fetchall()
        )
        assert rows() == {
            entity_id: 1 for entity_id in counted
        }  # one row per entity still mentioned
        check()
        # An entity being deleted right now (uncommitted) is left out, not waited for: a forget
        # waiting for the compaction's lock while the compaction waited for it would deadlock.
        conn.execute("SET lock_timeout = '2s'")
        for episode_id in episodes[:2]:  # several rows per entity again
            conn.execute("DELETE FROM entity_mentions WHERE episode_id = %s", (episode_id,))
            entities_store.link_episodes(
                conn, [episode_id], entities_store.Matchers(), entities_store.EntityReport()
            )
        before = rows()
        deleting = max(before, key=before.__getitem__)
        assert before[deleting] > 1
        with writer.transaction():
            writer.execute("DELETE FROM entities WHERE id = %s", (deleting,))
            entities_store.compact_mention_counts(conn)
            after = rows()
            assert after[deleting] == before[deleting]
            assert all(n == 1 for entity_id, n in after.items() if entity_id != deleting)
            check()
            raise psycopg.Rollback()
        check()
