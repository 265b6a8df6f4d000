"""Generations of the keyword champion lists (migration 0027) against the real database: a rebuild
loads its lists beside the searches, which keep reading the current generation whole until the
swap flips it; the old generation goes after; a database with lists migrates in place."""

from __future__ import annotations

import random
import shutil

import psycopg

from memory_pipeline.domain.episodes import make_episode
from memory_pipeline.storage import champions_store, keyword_store
from memory_pipeline.storage.migrations import apply_migrations, migration_files
from memory_pipeline.storage.paths import query
from memory_pipeline.storage.search_store import Filters
from memory_pipeline_tests.conftest import create_database, drop_database
from memory_pipeline_tests.storage.test_keyword_champion_builds import (
    FILLER as FILL,
)
from memory_pipeline_tests.storage.test_keyword_champion_builds import (
    SHORT,
    body,
    generations,
    lists,
    rows,
)
from memory_pipeline_tests.storage.test_keyword_store import (
    DAY1,
    DAY2,
    T0,
    add,
    assert_lists_hold_the_rows_above_their_floor,
    index,
)
from memory_pipeline_tests.support import stores


def test_searches_read_the_current_generation_whole_until_the_swap_commits(db, db_url):
    add(db, "big", [body(i) for i in range(60)])
    index(db)
    with db.connection() as conn, psycopg.connect(db_url, autocommit=True) as search:
        assert champions_store.refresh_champions(conn, "big", min_df=5, size=4).generation == 1
        old_lists, old_rows = lists(conn, "big"), rows(conn, "big")
        assert keyword_store.plan(search, "big", "river", cap=5).champion == "river"
        # A rebuild with deeper lists (size 6): loaded, not yet swapped in.
        assert champions_store.start_build(conn, "big")
        champions_store.stage_build(conn, "big", min_df=5, size=6)
        assert champions_store.load_build(conn, "big")
        assert generations(search, "big") == (1, ([1, 2], [1, 2]))
        assert lists(search, "big") == old_lists and rows(search, "big") == old_rows
        # A writer now grows the current generation only (and logs its episodes for the swap).
        add(db, "big", SHORT, day=DAY2)
        index(db)
        assert rows(search, "big") > old_rows
        assert_lists_hold_the_rows_above_their_floor(search, "big")
        grown = rows(search, "big")
        # A search that took its snapshot before the swap reads the old generation whole, even
        # after the swap committed and deleted it.
        with search.transaction():
            search.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            assert rows(search, "big") == grown
            with conn.transaction():  # the swap, held open: the flip is not visible yet
                build = champions_store.swap_build(conn, "big")
                assert build.outcome == "built" and build.generation == 2 and build.backlog == 2
            assert lists(search, "big") == old_lists and rows(search, "big") == grown
            assert keyword_store.plan(search, "big", "river", cap=5).champion == "river"
        champions_store.end_build(conn, "big")
        # After: the new generation only, its lists deeper, the logged episodes weighed into it.
        assert generations(search, "big") == (2, ([2], [2]))
        new_lists, new_rows = lists(search, "big"), rows(search, "big")
        assert new_lists[1].keys() == old_lists[1].keys() and new_lists[1] != old_lists[1]
        assert len(new_rows) > len(grown) and build.rows == len(new_rows)
        assert {r[1] for r in new_rows} >= {
            r[1] for r in grown if r[1] not in {o[1] for o in old_rows}
        }
        assert build.rows == assert_lists_hold_the_rows_above_their_floor(search, "big")


def test_a_rebuild_that_does_not_swap_leaves_the_lists_as_they_were_and_nothing_of_its_own(
    db, db_url
):
    add(db, "big", [body(i) for i in range(60)])
    index(db)
    with db.connection() as conn:
        champions_store.refresh_champions(conn, "big", min_df=5, size=4)
        before = lists(conn, "big"), rows(conn, "big")
        assert champions_store.start_build(conn, "big")
        champions_store.stage_build(conn, "big", min_df=5, size=6)
        assert champions_store.load_build(conn, "big")
        assert generations(conn, "big") == (1, ([1, 2], [1, 2]))
        champions_store.end_build(
            conn, "big"
        )  # cut short before the swap (refresh_champions' finally)
        assert (
            generations(conn, "big") == (1, ([1], [1]))
            and (lists(conn, "big"), rows(conn, "big")) == before
        )
        assert_lists_hold_the_rows_above_their_floor(conn, "big")


# The champion lists as migration 0026's code installed them (its keyword_champions_install.sql,
# without the backlog: nobody writes here), from the staging tables.
INSTALL_0026 = """
WITH state AS (
    INSERT INTO keyword_champion_state (memory, avgdl, k1, b, min_floor, chunks)
    SELECT memory, avgdl, k1, b, min_floor, chunks FROM keyword_champion_builds WHERE memory = %(memory)s
    RETURNING memory
),
lists AS (
    INSERT INTO keyword_champion_lists (memory, lexeme, floor)
    SELECT l.memory, l.lexeme, l.floor FROM keyword_champion_staged_lists l JOIN state USING (memory)
)
INSERT INTO keyword_champions (memory, lexeme, weight, episode_id, ordinal)
SELECT s.memory, s.lexeme, s.weight, s.episode_id, s.ordinal
FROM state JOIN keyword_champion_staged s USING (memory)
"""


def test_a_database_with_lists_migrates_in_place(pg_server, tmp_path):
    older = tmp_path / "migrations"
    older.mkdir()
    for version, _, path in migration_files():
        if version <= 26:
            shutil.copy(path, older / path.name)
    name = create_database(pg_server, template=None)
    try:
        with psycopg.connect(pg_server.uri(name), autocommit=True) as conn:
            apply_migrations(conn, older)
            drafts = [
                make_episode(memory="big", kind="note", title=f"e{i}", occurred_at=T0, body=body(i))
                for i in range(60)
            ]
            # As 0026's code stored them (today's insert_episode.sql also writes 0031's column).
            for d in drafts:
                conn.execute(
                    "INSERT INTO episodes (memory, kind, title, occurred_at, ingest_day, body,"
                    " content_hash) VALUES (%s, %s, %s, %s, %s, %s, %s)",
                    (d.memory, d.kind, d.title, d.occurred_at, DAY1, d.body, d.content_hash),
                )
            conn.execute("""INSERT INTO chunks (episode_id, ordinal, memory, chunk_id, start_char, end_char,
                                                token_estimate, text)
                            SELECT id, 0, memory, 'c' || id, 0, length(body), 10, body FROM episodes""")
            # The statistics as 0004's backfill counts them (today's keyword_stats_record.sql also
            # writes 0028's column).
            conn.execute(
                "INSERT INTO keyword_memory_stats (memory, chunks, total_lexemes)"
                " SELECT memory, count(*), sum(length(tsv)) FROM chunks GROUP BY memory"
            )
            conn.execute(
                "INSERT INTO keyword_stats (memory, lexeme, df) SELECT c.memory, u.lexeme, count(*)"
                " FROM chunks c, unnest(tsvector_to_array(c.tsv)) AS u(lexeme) GROUP BY 1, 2"
            )
            conn.execute(
                "INSERT INTO keyword_champion_builds (memory, pid) VALUES ('big', pg_backend_pid())"
            )
            params = {
                "memory": "big",
                "min_df": 5,
                "size": 4,
                "sample_every": 1,
                "sample_rank": 10**6,
                **keyword_store.BM25.params(),
            }  # no threshold: every posting ranked, as 0026 did
            conn.execute(query("keyword_champions_stage"), params)
            conn.execute(INSTALL_0026, params)
            for table in (
                "keyword_champion_builds",
                "keyword_champion_staged_lists",
                "keyword_champion_staged",
            ):
                conn.execute(f"DELETE FROM {table}")
            before = (
                dict(conn.execute("SELECT lexeme, floor FROM keyword_champion_lists").fetchall()),
                conn.execute(
                    "SELECT lexeme, weight, episode_id, ordinal FROM keyword_champions ORDER BY 1, 2, 3"
                ).fetchall(),
            )
            assert len(before[1]) > 10

            # Every migration from 0027 on, in order (later ones included, whatever they are).
            assert apply_migrations(conn) == [
                name for number, name, _ in migration_files() if number >= 27
            ]
            # 0028 counted the memory's episodes that have chunks: the statistics are as if recorded now.
            assert stores.stored_stats(conn, "big") == stores.counted_stats(conn, "big")
            assert stores.stored_stats(conn, "big")[0].episodes == 60
            # The lists are the memory's generation 1, as they were, read by searches and grown by writers.
            assert generations(conn, "big") == (1, ([1], [1]))
            assert (
                lists(conn, "big")[1],
                sorted((r[0], r[3], r[1], r[2]) for r in rows(conn, "big")),
            ) == before
            assert keyword_store.plan(conn, "big", "river", cap=5).champion == "river"
            assert keyword_store.ranked(conn, "big", "river", Filters(), limit=3, cap=5)[0]
            assert_lists_hold_the_rows_above_their_floor(conn, "big")
            # A rebuild from the same chunks: generation 2, the same lists, generation 1 gone.
            build = champions_store.refresh_champions(conn, "big", min_df=5, size=4)
            assert build.outcome == "built" and build.generation == 2
            assert generations(conn, "big") == (2, ([2], [2]))
            assert (
                lists(conn, "big")[1],
                sorted((r[0], r[3], r[1], r[2]) for r in rows(conn, "big")),
            ) == before
    finally:
        drop_database(pg_server, name)


def brute_force_lists(conn, memory: str, min_df: int, size: int) -> tuple[dict, set]:
    """The champion lists of ``memory`` selected here from every posting (each weighed by
    bm25_weight, the one definition): per lexeme of df > min_df, the floor is the (size + 1)-th
    best weight (0 when it has no more than size postings) and the list every row above it."""
    postings: dict[str, list] = {}
    for lexeme, weight, episode_id, ordinal in conn.execute(
        """SELECT u.lexeme, bm25_weight(1, 0, coalesce(array_length(u.positions, 1), 1), length(c.tsv),
                                            greatest(m.total_lexemes::float8 / m.chunks, 1.0), %(k1)s, %(b)s),
                      c.episode_id, c.ordinal
               FROM chunks c JOIN keyword_memory_stats m USING (memory) CROSS JOIN LATERAL unnest(c.tsv) u
               WHERE c.memory = %(memory)s""",
        {"memory": memory, **keyword_store.BM25.params()},
    ):
        postings.setdefault(lexeme, []).append((weight, episode_id, ordinal))
    floors, rows = {}, set()
    for lexeme, held in postings.items():
        if len(held) <= min_df:
            continue
        weights = sorted((w for w, _, _ in held), reverse=True)
        floors[lexeme] = weights[size] if len(weights) > size else 0.0
        rows |= {(lexeme, w, e, o) for w, e, o in held if w > floors[lexeme]}
    return floors, rows


def staged(conn, memory: str) -> tuple[dict, set]:
    return (
        dict(
            conn.execute(
                "SELECT lexeme, floor FROM keyword_champion_staged_lists WHERE memory = %s",
                (memory,),
            ).fetchall()
        ),
        set(
            conn.execute(
                "SELECT lexeme, weight, episode_id, ordinal FROM keyword_champion_staged WHERE memory = %s",
                (memory,),
            ).fetchall()
        ),
    )


def test_the_staged_lists_are_exactly_the_best_rows_whatever_the_sample(db):
    """The stage's sample only spares ranking postings below a threshold; a threshold set too high
    sends the lexeme back to all its postings. Ties (chunks of equal length holding a word as
    often) and lexemes held by just over min_df chunk rows included."""
    rng = random.Random(12)
    words = ["amber", "birch", "cedar", "dune", "ember", "fjord", "grove", "heath"]
    bodies = []
    for i in range(160):
        held = rng.sample(words, rng.randint(1, 4))
        text = " ".join(w for w in held for _ in range(rng.choice((1, 1, 1, 2, 3))))
        bodies.append(f"{text} {' '.join(FILL[: rng.randint(0, 3)])} note{i}")
    add(db, "big", bodies)
    index(db)
    size = 6
    with db.connection() as conn:
        df = dict(
            conn.execute("SELECT lexeme, df FROM keyword_stats WHERE memory = 'big'").fetchall()
        )
        min_df = (
            min(d for d in df.values() if d > 3 * size) - 1
        )  # one lexeme of df just over it at least
        expected = brute_force_lists(conn, "big", min_df, size)
        assert [lexeme for lexeme in expected[0] if df[lexeme] == min_df + 1] and len(
            expected[0]
        ) >= len(words)
        # Ties at a floor: a list shorter than the size though its lexeme has more postings.
        assert any(0 < sum(r[0] == lexeme for r in expected[1]) < size for lexeme in expected[0])
        # The threshold path only (the (size + 1)-th best of all postings), the fallback for every
        # lexeme (the best posting: too few reach it), no threshold (rank past the sample), and
        # the default sample.
        for sample_every, sample_rank in (
            (1, size + 1),
            (1, 1),
            (1, 10**6),
            (champions_store.SAMPLE_EVERY, None),
            (2, 3),
        ):
            assert champions_store.start_build(conn, "big")
            champions_store.stage_build(
                conn,
                "big",
                min_df=min_df,
                size=size,
                sample_every=sample_every,
                sample_rank=sample_rank,
            )
            assert staged(conn, "big") == expected, (sample_every, sample_rank)
            champions_store.end_build(conn, "big")
