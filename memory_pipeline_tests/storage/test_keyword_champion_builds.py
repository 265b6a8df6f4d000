"""Rebuilding the keyword champion lists beside writers and deleters (champions_store.refresh_champions,
migrations 0026, 0027) against the real database: each phase held open by the test, never timed."""

from __future__ import annotations

import threading
import time

import psycopg

from memory_pipeline.storage import (
    champions_store,
    forget_store,
    index_store,
    keyword_stats_store,
)
from memory_pipeline_tests.storage.test_keyword_store import (
    DAY1,
    DAY2,
    add,
    assert_lists_hold_the_rows_above_their_floor,
    common_body,
    index,
)

FILLER = [
    "apple",
    "bread",
    "candle",
    "desk",
    "engine",
    "fabric",
    "garnet",
    "harp",
    "iris",
    "jacket",
    "kettle",
    "lemon",
    "marble",
    "napkin",
    "orchid",
    "pepper",
    "quilt",
    "ribbon",
    "saddle",
    "tulip",
]


def body(i: int) -> str:
    """common_body with i // 6 other words: the chunks holding a word (every sixth) differ in
    length, so their weights for it differ."""
    return " ".join([common_body(i), *FILLER[: (i // 6) % len(FILLER)]])


SHORT = ["River river.", "Meadow meadow, forest forest."]  # short, a word twice: above the floors


def lists(conn, memory: str) -> tuple:
    """(state's avgdl, k1, b, min_floor; {lexeme: floor} of its generation)."""
    state = conn.execute(
        "SELECT avgdl, k1, b, min_floor FROM keyword_champion_state WHERE memory = %s", (memory,)
    ).fetchone()
    floors = dict(
        conn.execute(
            "SELECT l.lexeme, l.floor FROM keyword_champion_lists l JOIN keyword_champion_state s"
            " ON s.memory = l.memory AND s.generation = l.generation WHERE l.memory = %s",
            (memory,),
        ).fetchall()
    )
    return state, floors


def rows(conn, memory: str) -> set:
    """The rows of the memory's current generation."""
    return set(
        conn.execute(
            "SELECT k.lexeme, k.episode_id, k.ordinal, k.weight FROM keyword_champions k JOIN keyword_champion_state s"
            " ON s.memory = k.memory AND s.generation = k.generation WHERE k.memory = %s",
            (memory,),
        ).fetchall()
    )


def generations(conn, memory: str) -> tuple:
    """(the current generation, the generations rows and lists exist of)."""
    current = conn.execute(
        "SELECT generation FROM keyword_champion_state WHERE memory = %s", (memory,)
    ).fetchone()
    held = conn.execute(
        "SELECT array(SELECT DISTINCT generation FROM keyword_champions WHERE memory = %(m)s ORDER BY 1),"
        " array(SELECT DISTINCT generation FROM keyword_champion_lists WHERE memory = %(m)s ORDER BY 1)",
        {"m": memory},
    ).fetchone()
    return (current[0] if current else None), tuple(held)


def episodes_of_day(conn, memory: str, day) -> list[int]:
    return [
        r[0]
        for r in conn.execute(
            "SELECT id FROM episodes WHERE memory = %s AND ingest_day = %s ORDER BY id",
            (memory, day),
        )
    ]


def leftovers(conn) -> tuple:
    return conn.execute(
        "SELECT (SELECT count(*) FROM keyword_champion_builds), (SELECT count(*) FROM keyword_champion_backlog),"
        " (SELECT count(*) FROM keyword_champion_staged), (SELECT count(*) FROM keyword_champion_staged_lists)"
    ).fetchone()


def in_thread(target, *args) -> tuple[threading.Thread, list]:
    """Run ``target`` in a thread; the list gets its result or its exception."""
    out: list = []

    def run():
        try:
            out.append(target(*args))
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            out.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


def wait_until(condition, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def waiting_on_a_lock(db, application: str = "memory_pipeline") -> int:
    with db.connection() as conn:
        return conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
            " AND application_name = %s",
            (application,),
        ).fetchone()[0]


def test_a_writer_commits_during_the_read_and_its_rows_join_the_new_lists(db):
    add(db, "big", [body(i) for i in range(60)])
    index(db)
    with db.connection() as conn:
        # The lists a from-scratch rebuild gives these chunks, with nobody writing.
        assert champions_store.refresh_champions(conn, "big", min_df=5, size=4).outcome == "built"
        reference_lists, reference_rows = lists(conn, "big"), rows(conn, "big")
        assert len(reference_rows) > 10 and min(reference_lists[1].values()) > 0
    add(db, "big", SHORT, day=DAY2)
    with db.connection() as conn:
        assert champions_store.start_build(conn, "big")
        with conn.transaction():  # the long read, held open until the writer is done
            champions_store.stage_build(conn, "big", min_df=5, size=4)
            writer, out = in_thread(index, db)
            writer.join(120)
            assert not writer.is_alive() and out == [
                None
            ]  # it committed while the read was still open
        assert champions_store.load_build(conn, "big")
        build = champions_store.swap_build(conn, "big")
        champions_store.end_build(conn, "big")
        assert build.outcome == "built" and build.backlog == 2 and build.attempts == 1
        assert generations(conn, "big") == (2, ([2], [2]))  # the first build's generation is gone
        # The lists of the snapshot the read took (the writer's chunks came after it) ...
        assert lists(conn, "big") == reference_lists
        # ... plus the writer's rows through their floors, as if it had waited for a blocking rebuild.
        new = {r for r in rows(conn, "big") if r[1] in episodes_of_day(conn, "big", DAY2)}
        assert new and rows(conn, "big") == reference_rows | new
        assert build.rows == assert_lists_hold_the_rows_above_their_floor(conn, "big")
        assert leftovers(conn) == (0, 0, 0, 0)
        # Writers after the swap no longer log anything.
    add(db, "big", ["Forest forest forest."], day=DAY2)
    index(db)
    with db.connection() as conn:
        assert leftovers(conn) == (0, 0, 0, 0)
        assert_lists_hold_the_rows_above_their_floor(conn, "big")


def test_the_swap_holds_back_only_the_memorys_writers_and_only_while_it_runs(db):
    add(db, "big", [body(i) for i in range(60)])
    add(db, "other", [body(i) for i in range(8)])
    index(db)
    add(db, "other", SHORT, day=DAY2)
    with db.connection() as conn:
        assert champions_store.start_build(conn, "big")
        champions_store.stage_build(conn, "big", min_df=5, size=4)
        assert champions_store.load_build(conn, "big")
        with conn.transaction():  # the swap, held open
            assert champions_store.swap_build(conn, "big").outcome == "built"
            index(db)  # another memory's writer: not held back
            add(db, "big", SHORT, day=DAY2)
            writer, out = in_thread(index, db)
            wait_until(
                lambda: waiting_on_a_lock(db) >= 1, "the big memory's writer waits for the swap"
            )
            assert writer.is_alive()
        writer.join(120)
        assert out == [None]
        champions_store.end_build(conn, "big")
        # It wrote after the swap: its chunks went through the new floors.
        new = [r for r in rows(conn, "big") if r[1] in episodes_of_day(conn, "big", DAY2)]
        assert new and assert_lists_hold_the_rows_above_their_floor(conn, "big") > len(new)
        assert leftovers(conn) == (0, 0, 0, 0)


def test_deleters_during_the_build(db):
    add(db, "big", [body(i) for i in range(60)], day=DAY1)
    add(db, "big", [body(i) for i in range(60, 80)] + SHORT, day=DAY2)
    index(db)
    with db.connection() as conn:
        champions_store.refresh_champions(conn, "big", min_df=5, size=4)
        listed = conn.execute(
            "SELECT DISTINCT k.episode_id FROM keyword_champions k JOIN episodes e ON e.id = k.episode_id"
            " WHERE e.ingest_day = %s ORDER BY 1",
            (DAY1,),
        ).fetchall()
        assert champions_store.start_build(conn, "big")
        champions_store.stage_build(conn, "big", min_df=5, size=4)
        # After the snapshot: an episode of listed chunks forgotten, the second day rechunked
        # (`backfill --rechunk`: its chunks deleted, then written again with the same keys).
        forget_store.forget(conn, "big", [listed[0][0]])
        index_store.delete_chunks_of_days(conn, DAY2, DAY2)
        assert champions_store.load_build(conn, "big")
    index(db)
    with db.connection() as conn:
        build = champions_store.swap_build(conn, "big")
        champions_store.end_build(conn, "big")
        assert build.outcome == "built" and build.backlog == len(episodes_of_day(conn, "big", DAY2))
        assert not [r for r in rows(conn, "big") if r[1] == listed[0][0]]
        assert assert_lists_hold_the_rows_above_their_floor(conn, "big") == build.rows
        # The memory forgotten whole while its lists are being rebuilt: nothing is installed.
        assert champions_store.start_build(conn, "big")
        champions_store.stage_build(conn, "big", min_df=5, size=4)
        assert champions_store.load_build(conn, "big")
        forget_store.forget(conn, "big")
        assert champions_store.swap_build(conn, "big").outcome == "gone"
        champions_store.end_build(conn, "big")
        assert lists(conn, "big") == (None, {}) and leftovers(conn) == (0, 0, 0, 0)
        assert generations(conn, "big") == (None, ([], []))


def test_the_load_and_the_swap_give_way_to_a_deleter_instead_of_deadlocking(db):
    """A deleter that has deleted chunks but not yet recounted the statistics (forget, rechunk)
    holds those rows and will wait for the memory's statistics row. The load, whose foreign-key
    checks lock the chunks it points to, must not wait for them (the deleter may next wait for a
    chunk it locked: PostgreSQL would abort one of the two); nor must the swap, which holds that
    statistics row, wait for the chunks of a logged episode."""
    add(db, "big", [body(i) for i in range(60)])
    index(db)
    with db.connection() as conn:
        champions_store.refresh_champions(conn, "big", min_df=5, size=4)
        victim = conn.execute(
            "SELECT episode_id FROM keyword_champions WHERE memory = 'big' LIMIT 1"
        ).fetchone()[0]
        assert champions_store.start_build(conn, "big")
        champions_store.stage_build(conn, "big", min_df=5, size=4)
        report = champions_store.ChampionBuild("big")
        with db.connection() as deleter, deleter.transaction():
            deleter.execute("DELETE FROM episodes WHERE id = %s", (victim,))  # forget's first step
            load, out = in_thread(champions_store.load_build, conn, "big", report)
            wait_until(lambda: report.gave_way >= 1, "the load finds the deleted rows locked")
            keyword_stats_store.recompute(
                deleter, ["big"]
            )  # the deleter's last step: needs the stats row
        load.join(120)
        assert out == [True] and report.gave_way >= 1
    add(db, "big", SHORT, day=DAY2)
    index(db)  # logged: the swap weighs these episodes
    with db.connection() as conn:
        logged = episodes_of_day(conn, "big", DAY2)
        gave_way = report.gave_way
        with db.connection() as deleter, deleter.transaction():
            deleter.execute("DELETE FROM episodes WHERE id = %s", (logged[0],))
            swap, out = in_thread(champions_store.swap_build, conn, "big", report)
            wait_until(
                lambda: report.gave_way > gave_way,
                "the swap finds the logged episode's rows locked",
            )
            keyword_stats_store.recompute(deleter, ["big"])
        swap.join(120)
        assert out == [report] and report.outcome == "built" and report.attempts >= 2
        champions_store.end_build(conn, "big")
        assert not [r for r in rows(conn, "big") if r[1] in (victim, logged[0])]
        assert [
            r for r in rows(conn, "big") if r[1] == logged[1]
        ]  # the other logged episode: weighed
        assert assert_lists_hold_the_rows_above_their_floor(conn, "big") == report.rows
        assert leftovers(conn) == (0, 0, 0, 0) and generations(conn, "big") == (2, ([2], [2]))


def test_one_rebuild_of_a_memory_at_a_time_and_crashed_ones_are_cleared(db, db_url):
    add(db, "big", [body(i) for i in range(60)])
    index(db)
    with db.connection() as conn, psycopg.connect(db_url, autocommit=True) as other:
        other.execute(
            "SELECT pg_advisory_lock(%s, hashtext('big'))", (champions_store.BUILD_LOCK_CLASS,)
        )
        assert champions_store.refresh_champions(conn, "big", min_df=5, size=4).outcome == "busy"
        assert champions_store.start_build(
            other, "big"
        )  # then its process dies mid-build, after its load
        champions_store.stage_build(other, "big", min_df=5, size=4)
        assert champions_store.load_build(other, "big")
        assert generations(conn, "big") == (
            0,
            ([1], [1]),
        )  # its first build: a state row, no current lists
    add(db, "big", SHORT, day=DAY2)
    index(db)  # writers log while the build looks registered
    with db.connection() as conn:
        assert leftovers(conn)[:2] == (1, 2)
        build = champions_store.refresh_champions(conn, "big", min_df=5, size=4)
        assert build.outcome == "built" and build.backlog == 0 and build.generation == 2
        assert leftovers(conn) == (0, 0, 0, 0) and generations(conn, "big") == (2, ([2], [2]))
        assert_lists_hold_the_rows_above_their_floor(conn, "big")


def test_missing_and_stale_lists(db):
    add(db, "big", [body(i) for i in range(40)])
    add(db, "small", [body(i) for i in range(3)])
    index(db)
    with db.connection() as conn:

        def stale() -> list[str]:
            return [
                b.memory
                for b in champions_store.refresh_all_champions(
                    conn, min_df=20, size=4, stale_only=True
                )
            ]

        assert stale() == ["big"]  # more than min_df chunks and no lists
        assert stale() == []
        chunks = conn.execute(
            "SELECT chunks FROM keyword_champion_state WHERE memory = 'big'"
        ).fetchone()[0]
        add(
            db,
            "big",
            [body(i) for i in range(40, 40 + int(chunks * champions_store.STALE_CHANGE))],
            day=DAY2,
        )
        index(db)
        assert stale() == []  # grew by a quarter: still within the rule
        add(db, "big", [body(100)], day=DAY2)
        index(db)
        assert stale() == ["big"]
