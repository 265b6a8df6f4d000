"""Keyword statistics (keyword_stats_store) and the keyword query (keyword_store) against the real database."""

from __future__ import annotations

import datetime as dt
import json
import math
import zlib
from collections.abc import Sequence

import numpy as np
import pytest

from memory_pipeline.domain.episodes import make_episode
from memory_pipeline.embedders.base import Embedder, EmbeddingProfile
from memory_pipeline.indexing.until_done import index_pending
from memory_pipeline.storage import (
    champions_store,
    forget_store,
    index_store,
    keyword_stats_store,
    keyword_store,
    search_store,
)
from memory_pipeline.storage.episodes_store import store_episodes
from memory_pipeline.storage.paths import SQL_DIR, query
from memory_pipeline.storage.search_store import Filters
from memory_pipeline_tests.support import stores

DAY1 = dt.date(2026, 3, 1)
DAY2 = dt.date(2026, 3, 2)
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


class TinyEmbedder(Embedder):
    """Deterministic 8-d vectors: indexing needs an embedder, these tests need none of its quality."""

    service_name = "test"

    def __init__(self):
        super().__init__(EmbeddingProfile("test", "tiny", 8), batch_size=64)

    def _embed_batch(self, texts: Sequence[str], *, is_query: bool) -> np.ndarray:
        return np.stack(
            [np.random.default_rng(zlib.crc32(t.encode())).standard_normal(8) for t in texts]
        )


def add(
    db, memory: str, bodies: list[str], *, day: dt.date = DAY1, kinds: Sequence[str] = ("note",)
) -> None:
    drafts = [
        make_episode(
            memory=memory,
            kind=kinds[i % len(kinds)],
            title=f"{memory} {day} {i}",
            occurred_at=T0 + dt.timedelta(days=i),
            body=body,
        )
        for i, body in enumerate(bodies)
    ]
    with db.connection() as conn:
        store_episodes(conn, drafts, day)


def index(db) -> None:
    # The writers' own upkeep of the lists is under test (record_chunks), beside rebuilds the tests
    # hold open with their own min_df: not the refresh an index run ends with (indexing.serving).
    report = index_pending(db, TinyEmbedder(), keyword_lists=False)
    assert report.pending_after == 0


def assert_stats_match_a_recount(db, *memories: str) -> None:
    with db.connection() as conn:
        for memory in memories:
            assert stores.stored_stats(conn, memory) == stores.counted_stats(conn, memory), memory


def old_bm25(
    conn, memory: str, text: str, filters: Filters | None = None, limit: int = 50
) -> list[tuple[str, float]]:
    """What the keyword channel ran before the statistics (keyword_bm25.sql, counting)."""
    filters = filters or Filters()
    lexemes = search_store.query_lexemes(conn, text)
    rows = conn.execute(
        query("keyword_bm25"),
        {
            "memory": memory,
            "lexemes": lexemes,
            "tsquery": keyword_store.or_tsquery(lexemes),
            "limit": limit,
            **filters.params(),
            **keyword_store.BM25.params(),
        },
    ).fetchall()
    return [(c, float(s)) for c, s in rows]


GARDEN = [
    "Planted tulips and garlic in the back garden with Tomás. The soil was wet.",
    "Fixed the bicycle chain; the derailleur needed oil.\n\nThe garden hose leaks again.",
    "Baked sourdough bread and a cherry pie for the book club.",
    # The same long paragraph three times: three chunk rows with one chunk id (df counts rows).
    ("same garden paragraph " * 40).strip()
    + "\n\n"
    + ("same garden paragraph " * 40).strip()
    + "\n\n"
    + ("same garden paragraph " * 40).strip()
    + "\n\n",
    "Дмитрий: Как прошла пробежка в парке?\n\nAlice: Отлично, десять километров.",
    "Config key x_y%z and path C:\\temp\\new must be kept; quote 'it''s' here.",
]


# -- statistics --------------------------------------------------------------------------------


def test_stats_after_indexing_equal_a_recount(db):
    add(db, "alice", GARDEN)
    add(
        db,
        "bob",
        [
            "My garden with Tomás: tulips, garlic, soil, wet. Garden garden garden.",
            "Bicycle chain and derailleur oil, LDG-4102 again.",
        ],
    )
    index(db)
    assert_stats_match_a_recount(db, "alice", "bob")
    with db.connection() as conn:
        stats, df = stores.stored_stats(conn, "alice")
        rows = conn.execute(
            "SELECT count(*), sum(length(tsv)) FROM chunks WHERE memory = 'alice'"
        ).fetchone()
        assert (stats.chunks, stats.total_lexemes) == (rows[0], rows[1])
        # 'garden' is in chunk rows of three episodes, one of them three rows with one chunk id.
        garden = conn.execute(
            "SELECT count(*), count(DISTINCT chunk_id) FROM chunks WHERE memory = 'alice' AND tsv @@ 'garden'"
        ).fetchone()
        assert df["garden"] == garden[0] == garden[1] + 2
        assert stores.stored_stats(conn, "bob")[1]["garden"] == 1
        before = (
            stores.stored_stats(conn, "alice"),
            stores.stored_stats(conn, "bob"),
        )
        keyword_stats_store.recompute(conn, ["alice", "bob"])
        assert (
            stores.stored_stats(conn, "alice"),
            stores.stored_stats(conn, "bob"),
        ) == before


def test_stats_grow_with_new_episodes(db):
    add(db, "alice", GARDEN[:3])
    index(db)
    with db.connection() as conn:
        first, first_df = stores.stored_stats(conn, "alice")
    add(db, "alice", GARDEN[3:], day=DAY2)
    add(db, "carol", ["A new memory about the garden."], day=DAY2)
    index(db)
    assert_stats_match_a_recount(db, "alice", "carol")
    with db.connection() as conn:
        second, second_df = stores.stored_stats(conn, "alice")
    assert second.chunks > first.chunks and second.total_lexemes > first.total_lexemes
    assert second_df["garden"] == first_df["garden"] + 3
    assert all(second_df[lexeme] >= df for lexeme, df in first_df.items())


def test_stats_stay_right_after_rechunk(db):
    add(db, "alice", GARDEN[:4], day=DAY1)
    add(db, "alice", GARDEN[4:], day=DAY2)
    add(db, "bob", ["Only bob's garden, ingested on the first day."], day=DAY1)
    index(db)
    with db.connection() as conn:
        indexed = (
            stores.stored_stats(conn, "alice"),
            stores.stored_stats(conn, "bob"),
        )
        day1, day2 = (
            conn.execute(
                "SELECT count(*) FROM chunks c JOIN episodes e ON e.id = c.episode_id WHERE e.ingest_day = %s",
                (day,),
            ).fetchone()[0]
            for day in (DAY1, DAY2)
        )
        # What `memory-pipeline backfill --rechunk` does first.
        assert index_store.delete_chunks_of_days(conn, DAY1, DAY1) == day1
        assert stores.stored_stats(conn, "bob") == (
            None,
            {},
        )  # no chunks left: no statistics
        assert stores.stored_stats(conn, "alice")[0].chunks == day2  # the second day's chunk rows
    assert_stats_match_a_recount(db, "alice", "bob")
    index(db)  # ... and then the days' chunks are written again
    assert_stats_match_a_recount(db, "alice", "bob")
    with db.connection() as conn:
        assert (
            stores.stored_stats(conn, "alice"),
            stores.stored_stats(conn, "bob"),
        ) == indexed


def test_migration_backfills_existing_chunks(db):
    add(db, "alice", GARDEN)
    index(db)
    with db.connection() as conn:
        indexed = stores.stored_stats(conn, "alice")
        conn.execute("DELETE FROM keyword_stats")
        conn.execute("DELETE FROM keyword_memory_stats")
        migration = (SQL_DIR / "migrations" / "0004_keyword_stats.sql").read_text(encoding="utf-8")
        conn.execute(migration.split("-- Backfill from the chunks already stored.")[1])
        # 0028's backfill of the episodes column, which 0004's rows take as 0.
        assert stores.stored_stats(conn, "alice")[0].episodes == 0
        episodes = (SQL_DIR / "migrations" / "0028_keyword_memory_episodes.sql").read_text(
            encoding="utf-8"
        )
        conn.execute(episodes[episodes.index("UPDATE keyword_memory_stats") :])
        assert stores.stored_stats(conn, "alice") == indexed and indexed[0].episodes == len(GARDEN)


# -- the keyword query ---------------------------------------------------------------------------


@pytest.fixture
def small_world(db):
    add(db, "alice", GARDEN, kinds=("note", "journal"))
    add(db, "bob", ["My garden with Tomás: tulips, garlic, soil, wet. Garden garden garden."])
    index(db)
    return db


@pytest.mark.parametrize(
    "text",
    [
        "garden",
        "garden soil tulips",
        "Tomás",
        "bicycle oil chain",
        "пробежка в парке",
        "same paragraph",
        "garden nonexistentword",
        "it's & | ! (garden) :* \\",
    ],
)
@pytest.mark.parametrize(
    "filters", [Filters(), Filters(kinds=["journal"]), Filters(since=T0 + dt.timedelta(days=2))]
)
def test_small_memories_score_exactly_as_before(small_world, text, filters):
    with small_world.connection() as conn:
        rows, path = keyword_store.ranked(conn, "alice", text, filters, limit=50)
        before = old_bm25(conn, "alice", text, filters)
    assert path == "exact"
    assert [c for c, _ in rows] == [c for c, _ in before]
    assert [s for _, s in rows] == pytest.approx([s for _, s in before], rel=1e-12)


def test_results_only_from_the_memory_and_distinct(small_world):
    with small_world.connection() as conn:
        for cap in (keyword_store.CAP, 1):
            rows, _ = keyword_store.ranked(
                conn, "alice", "garden tulips paragraph", Filters(), cap=cap
            )
            ids = [c for c, _ in rows]
            assert ids and len(ids) == len(set(ids))
            owners = {
                m
                for (m,) in conn.execute(
                    "SELECT DISTINCT memory FROM chunks WHERE chunk_id = ANY(%s)", (ids,)
                )
            }
            assert owners == {"alice"}


def test_unknown_words_and_the_substring_fallback(small_world):
    with small_world.connection() as conn:
        assert keyword_store.ranked(conn, "alice", "zzzqqq", Filters()) == ([], "unmatched")
        assert keyword_store.ranked(conn, "alice", "   ", Filters()) == ([], "none")
        rows, method = search_store.keyword_candidates(conn, "alice", "%", Filters())  # no lexeme
        assert method == "substring" and len(rows) == 1
        # Lexemes the memory does not hold ('arden', 'ho'): full text finds nothing, the literal does.
        assert keyword_store.ranked(conn, "alice", "arden ho", Filters()) == ([], "unmatched")
        rows, method = search_store.keyword_candidates(conn, "alice", "arden ho", Filters())
        assert method == "substring" and len(rows) == 1
        assert search_store.keyword_candidates(conn, "alice", "zzqq%", Filters()) == (
            [],
            "substring",
        )
        assert search_store.keyword_candidates(conn, "alice", "garden", Filters())[1] == "full_text"


def test_a_memory_without_statistics_is_counted(small_world):
    with small_world.connection() as conn:
        conn.execute("DELETE FROM keyword_memory_stats WHERE memory = 'alice'")
        conn.execute("DELETE FROM keyword_stats WHERE memory = 'alice'")
        rows, path = keyword_store.ranked(conn, "alice", "garden soil", Filters())
        assert path == "counted" and rows == old_bm25(conn, "alice", "garden soil")


@pytest.mark.parametrize("bm25", [keyword_store.BM25, keyword_store.Bm25(k1=0.5, b=0.3)])
def test_scores_are_textbook_bm25_with_the_constants_passed(small_world, bm25):
    """bm25_weight (migration 0017), the one definition every keyword query sums, against BM25
    computed here from the chunks' own lexeme counts; and inlined (no call per row)."""
    text = "garden soil tulips"
    with small_world.connection() as conn:
        rows, path = keyword_store.ranked(conn, "alice", text, Filters(), bm25=bm25)
        lexemes = search_store.query_lexemes(conn, text)
        # A chunk id can have several rows (the same text in two episodes): N counts rows, the
        # candidates (df, avgdl) distinct ids, as keyword_stats and keyword_exact.sql do.
        n = conn.execute("SELECT count(*) FROM chunks WHERE memory = 'alice'").fetchone()[0]
        docs = {
            c: dict(zip(lexes, counts))
            for c, lexes, counts in conn.execute(
                "SELECT c.chunk_id, array_agg(u.lexeme), array_agg(coalesce(array_length(u.positions, 1), 1))"
                " FROM (SELECT DISTINCT ON (chunk_id) chunk_id, tsv FROM chunks WHERE memory = 'alice') c,"
                " unnest(c.tsv) u GROUP BY c.chunk_id"
            )
        }
        _, name, params = keyword_store.planned_query(conn, "alice", text, Filters(), bm25=bm25)
        plan = "\n".join(
            r[0] for r in conn.execute("EXPLAIN VERBOSE " + query(name), params, prepare=False)
        )
    assert "bm25_weight" not in plan
    matching = {c: d for c, d in docs.items() if any(lex in d for lex in lexemes)}
    avgdl = sum(len(d) for d in matching.values()) / len(
        matching
    )  # over the candidates, as documented
    expected = {}
    for c, d in matching.items():
        expected[c] = sum(
            math.log(1 + (n - df + 0.5) / (df + 0.5))
            * d[lex]
            * (bm25.k1 + 1)
            / (d[lex] + bm25.k1 * (1 - bm25.b + bm25.b * len(d) / avgdl))
            for lex in lexemes
            if lex in d
            for df in [sum(lex in other for other in docs.values())]
        )
    assert path == "exact" and dict(rows) == pytest.approx(expected, rel=1e-9)


COMMON = ["river", "mountain", "village", "harbor", "forest", "meadow"]


def common_body(i: int) -> str:
    # Chunks holding one or two of the common words (a few words apart, so they are not stop words).
    words = [COMMON[i % 6], COMMON[(i * 7 + 3) % 6]] if i % 5 == 0 else [COMMON[i % 6]]
    return f"Entry {i}: we walked by the " + " and later the ".join(words) + f" on day {i}."


def test_capped_path_keeps_the_top_of_exact_bm25(db):
    cap = 12
    bodies = [common_body(i) for i in range(60)]
    bodies.append("Entry rare: the zyxwortle stood near the river and the mountain.")
    add(db, "big", bodies)
    add(
        db, "other", ["zyxwortle river mountain zyxwortle zyxwortle"]
    )  # another memory: never returned
    index(db)
    with db.connection() as conn:
        plan = keyword_store.plan(conn, "big", "zyxwortle river mountain", cap=cap)
        assert plan.path == "capped" and plan.gate == "'zyxwortl'" and sum(plan.dfs) > cap
        assert plan.common is not None and all(
            "&" in q for q in plan.common
        )  # river & mountain together
        rows, path = keyword_store.ranked(
            conn, "big", "zyxwortle river mountain", Filters(), limit=8, cap=cap
        )
        exact = old_bm25(conn, "big", "zyxwortle river mountain", limit=8)
        both = conn.execute(
            "SELECT count(DISTINCT chunk_id) FROM chunks WHERE memory = 'big' AND tsv @@ 'river & mountain'"
        ).fetchone()[0]
    assert path == "capped"
    rare_chunk = exact[0][0]
    assert rows[0][0] == rare_chunk
    # The chunks holding two of the words rank next, in both: the same top results.
    assert {c for c, _ in rows[:both]} == {c for c, _ in exact[:both]}
    # A query of common words only: the chunks holding both come first, as in exact BM25.
    with db.connection() as conn:
        rows, path = keyword_store.ranked(
            conn, "big", "river mountain", Filters(), limit=8, cap=cap
        )
        exact = old_bm25(conn, "big", "river mountain", limit=8)
    assert path == "capped"
    assert {c for c, _ in rows[:both]} == {c for c, _ in exact[:both]}


def test_words_most_chunks_hold_are_not_read_once_the_rare_ones_settle_the_answer(db):
    # 120 chunks all holding "river" (idf near 0), 40 of them "village" too, 10 of them the rare
    # "zyxwortle". With limit 8 and a cap of 12, the rare word's 10 chunks are the gate; each
    # scores more than "river" and "village" together can reach in any chunk (their idf x
    # (k1 + 1)), so the tiers of the common words are never read: the answer is exact BM25's.
    bodies = [
        f"Entry {i}: river"
        + (" and village" if i % 3 == 0 else "")
        + (" with the zyxwortle" if i % 12 == 0 else "")
        + f" on day {i}."
        for i in range(120)
    ]
    add(db, "big", bodies)
    index(db)
    text = "zyxwortle river village"
    with db.connection() as conn:
        plan = keyword_store.plan(conn, "big", text, cap=12)
        assert plan.path == "capped" and plan.gate == "'zyxwortl'" and plan.beyond == (40, 120)
        bound = keyword_store.ceiling(plan.chunks, plan.beyond, keyword_store.BM25)
        _, name, params = keyword_store.planned_query(conn, "big", text, Filters(), limit=8, cap=12)
        assert params["common_bound"] == pytest.approx(bound)
        explained = "\n".join(
            r[0]
            for r in conn.execute(
                "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) " + query(name), params
            )
        )
        rows, path = keyword_store.ranked(conn, "big", text, Filters(), limit=8, cap=12)
        exact = old_bm25(conn, "big", text, limit=8)
    assert path == "capped" and [c for c, _ in rows] == [c for c, _ in exact]
    assert min(score for _, score in rows) > bound
    # The common words' tier: planned, never run.
    common_scan = [line for line in explained.splitlines() if "ANY (" in line]
    assert common_scan, explained
    assert "(never executed)" in explained.split("ANY (")[0].rsplit("->", 1)[-1], explained
    # Without rare chunks enough to settle it (limit 11 > 10), the common tiers are read again
    # (the cap's 2 other candidates).
    with db.connection() as conn:
        rows, _ = keyword_store.ranked(conn, "big", text, Filters(), limit=11, cap=12)
    assert len(rows) == 11


def test_capped_path_keeps_filters_and_treats_the_query_as_data(db):
    add(db, "big", [common_body(i) for i in range(40)], kinds=("note", "journal"))
    index(db)
    with db.connection() as conn:
        for text in ("river mountain", "river & !mountain | (village):*", "'river' \\ mountain"):
            rows, path = keyword_store.ranked(conn, "big", text, Filters(kinds=["journal"]), cap=5)
            assert path == "capped" and rows
            kinds = {
                k
                for (k,) in conn.execute(
                    "SELECT DISTINCT e.kind FROM chunks c JOIN episodes e ON e.id = c.episode_id WHERE c.chunk_id = ANY(%s)",
                    ([c for c, _ in rows],),
                )
            }
            assert kinds == {"journal"}
            assert [s for _, s in rows] == sorted((s for _, s in rows), reverse=True)
        rows, _ = keyword_store.ranked(
            conn, "big", "river", Filters(since=T0 + dt.timedelta(days=100)), cap=5
        )
        assert rows == []
        # As of a moment (migration 0034): only episodes that had occurred before it.
        until = T0 + dt.timedelta(days=10)
        rows, path = keyword_store.ranked(
            conn, "big", "river mountain", Filters(until=until), cap=5
        )
        assert path == "capped" and rows
        latest = conn.execute(
            "SELECT max(e.occurred_at) FROM chunks c JOIN episodes e ON e.id = c.episode_id"
            " WHERE c.chunk_id = ANY(%s)",
            ([c for c, _ in rows],),
        ).fetchone()[0]
        assert latest < until


# -- champion lists ------------------------------------------------------------------------------


def assert_lists_hold_the_rows_above_their_floor(conn, memory: str) -> int:
    """Every champion list of ``memory``'s current generation against the chunks as they are now:
    exactly the chunk rows holding the lexeme whose weight (k1, b and avgdl of the refresh)
    exceeds the floor. Returns the rows checked."""
    stored = sorted(
        conn.execute(
            "SELECT k.lexeme, k.episode_id, k.ordinal FROM keyword_champions k JOIN keyword_champion_state s"
            " ON s.memory = k.memory AND s.generation = k.generation WHERE k.memory = %s",
            (memory,),
        ).fetchall()
    )
    counted = sorted(
        conn.execute(
            """SELECT l.lexeme, c.episode_id, c.ordinal
           FROM keyword_champion_state s
           JOIN keyword_champion_lists l ON l.memory = s.memory AND l.generation = s.generation
           JOIN chunks c ON c.memory = s.memory
           CROSS JOIN LATERAL unnest(c.tsv) u
           WHERE s.memory = %s AND u.lexeme = l.lexeme
             AND bm25_weight(1, 0, coalesce(array_length(u.positions, 1), 1), length(c.tsv), s.avgdl, s.k1, s.b)
                 > l.floor""",
            (memory,),
        ).fetchall()
    )
    assert stored == counted
    return len(stored)


def test_champion_lists_stay_right_after_every_writer(db):
    add(db, "big", [common_body(i) for i in range(60)], day=DAY1)
    add(db, "big", [common_body(i) for i in range(60, 80)], day=DAY2)
    index(db)
    with db.connection() as conn:
        build = champions_store.refresh_champions(conn, "big", min_df=5, size=4)
        rows = build.rows
        assert build.outcome == "built" and build.attempts == 1 and build.backlog == 0
        floors = dict(
            conn.execute(
                "SELECT lexeme, floor FROM keyword_champion_lists WHERE memory = 'big'"
            ).fetchall()
        )
        stems = {"river", "mountain", "villag", "harbor", "forest", "meadow"}  # COMMON, as lexemes
        assert stems <= set(floors) and rows == assert_lists_hold_the_rows_above_their_floor(
            conn, "big"
        )
        assert all(floors[w] > 0 for w in stems)  # more rows than the size: a real floor
    # New chunks that beat the floors (short, the word twice) join the lists as they are written.
    add(db, "big", ["River river.", "Meadow meadow, forest forest."], day=DAY2)
    index(db)
    with db.connection() as conn:
        assert assert_lists_hold_the_rows_above_their_floor(conn, "big") > rows
        # What `backfill --rechunk` does: delete a day's chunks, then write them again.
        index_store.delete_chunks_of_days(conn, DAY2, DAY2)
        assert_lists_hold_the_rows_above_their_floor(conn, "big")
    index(db)
    with db.connection() as conn:
        assert_lists_hold_the_rows_above_their_floor(conn, "big")
        episode = conn.execute(
            "SELECT DISTINCT c.episode_id FROM keyword_champions k JOIN chunks c USING (episode_id, ordinal)"
            " WHERE k.memory = 'big' LIMIT 1"
        ).fetchone()[0]
        forget_store.forget(conn, "big", [episode])
        assert_lists_hold_the_rows_above_their_floor(conn, "big")
        forget_store.forget(conn, "big")
        assert conn.execute("SELECT count(*) FROM keyword_champion_lists").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM keyword_champions").fetchone()[0] == 0


def test_a_common_word_reads_its_champions_exactly_as_bm25_ranks_it(db):
    bodies = [common_body(i) for i in range(60)]
    bodies.append("Entry rare: the zyxwortle stood near the river and the mountain.")
    add(db, "big", bodies, kinds=("note", "journal"))
    index(db)
    cap, limit = 12, 6
    with db.connection() as conn:
        before, _ = keyword_store.ranked(conn, "big", "river", Filters(), limit=limit, cap=cap)
        champions_store.refresh_champions(conn, "big", min_df=cap, size=8)
        add(db, "big", ["The river, the river: a short river note."], day=DAY2)  # after the refresh
        index(db)
        for text, filters in (
            ("river", Filters()),
            ("zyxwortle river", Filters()),
            ("river", Filters(kinds=["journal"])),
        ):
            plan = keyword_store.plan(conn, "big", text, cap=cap)
            assert plan.path == "capped" and plan.champion == "river" and plan.common is None
            rows, _ = keyword_store.ranked(conn, "big", text, filters, limit=limit, cap=cap)
            exact = old_bm25(conn, "big", text, filters, limit=limit)
            # The exact top, with the scores the capped path gives (N and avgdl of the whole memory).
            assert [c for c, _ in rows] == [c for c, _ in exact], (text, filters)
        assert rows and keyword_store.plan(conn, "big", "river mountain", cap=cap).champion is None
        # The nightly refresh rebuilds large memories' lists and drops those of memories now small.
        assert [
            b.memory for b in champions_store.refresh_all_champions(conn, min_df=cap, size=8)
        ] == ["big"]
        assert champions_store.refresh_all_champions(conn, min_df=10**6) == []
        assert conn.execute("SELECT count(*) FROM keyword_champion_state").fetchone()[0] == 0
        # Before the lists, a sample of the rows in table order: not the top (why they exist).
        assert [c for c, _ in before] != [c for c, _ in old_bm25(conn, "big", "river", limit=limit)]


def test_the_led_common_tier_matches_exactly_the_chunks_holding_m_of_the_words(db):
    # Every set of six words a chunk can hold, against "at least m of them" as one tsquery and as
    # the led tsqueries the capped path scans (any of them): the same chunks, for every m.
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]
    held = [[w for i, w in enumerate(words) if mask >> i & 1] for mask in range(2 ** len(words))]
    with db.connection() as conn:
        for m in range(1, len(words) + 1):
            led = keyword_store._at_least_led(m, words)
            assert all(q.startswith(f"'{w}'") for q, w in zip(led, words)) or m == 1
            rows = conn.execute(
                """SELECT array_to_tsvector(h.words) @@ %(one)s::tsquery, array_to_tsvector(h.words) @@ ANY(%(led)s::tsquery[])
                   FROM jsonb_to_recordset(%(held)s::jsonb) AS h(words text[])""",
                {
                    "one": keyword_store._at_least(m, words),
                    "led": list(led),
                    "held": json.dumps([{"words": h} for h in held]),
                },
            ).fetchall()
            assert rows == [(len(h) >= m, len(h) >= m) for h in held], m


def test_the_fill_takes_chunks_holding_the_rarest_common_word(db):
    # Chunks of one or two of the common words, "harbor" in fewer of them than the others.
    add(
        db, "big", [common_body(i) for i in range(120) if not (COMMON[i % 6] == "harbor" and i % 4)]
    )
    index(db)
    text, cap, limit = "river harbor mountain village", 3, 30
    with db.connection() as conn:
        plan = keyword_store.plan(conn, "big", text, cap=cap)
        assert plan.path == "capped" and plan.gate is None and plan.lexemes[0] == "harbor", plan
        m = (
            plan.common[0].split(" | ")[0].count("&") + 1
        )  # the common tier: chunks holding m of the words
        assert plan.common == keyword_store._at_least_led(m, plan.lexemes), plan
        # The fill: chunks holding "harbor" and m - 2 others, not any m - 1 of the four words.
        assert plan.fill == keyword_store._with_rarest(
            m - 1, plan.lexemes
        ) and plan.fill.startswith("'harbor'")
        rows, _ = keyword_store.ranked(conn, "big", text, Filters(), limit=limit, cap=cap)
        held = conn.execute(
            """SELECT (SELECT count(*) FROM unnest(tsv) u WHERE u.lexeme = ANY(%(lexemes)s)), tsv @@ 'harbor'
               FROM chunks WHERE memory = 'big' AND chunk_id = ANY(%(ids)s)""",
            {"lexemes": list(plan.lexemes), "ids": [c for c, _ in rows]},
        ).fetchall()
    assert rows and all(n >= m or (harbor and n >= m - 1) for n, harbor in held)
    assert any(n < m for n, _ in held)  # the fill ran
    assert (
        keyword_store._with_rarest(2, ["harbor", "river", "mountain"])
        == "'harbor' & ('river' | 'mountain')"
    )


def _plan_nodes(node: dict):
    yield node
    for child in node.get("Plans", ()):
        yield from _plan_nodes(child)


def test_recording_chunks_in_the_lists_unnests_each_chunk_row_once(db):
    # Weights first, then the lists: joined in one query, the planner drove the lists' rows
    # through the chunks and unnested every chunk's vector once per list (12.7 s against 0.13 s
    # for 3,000 episodes: benchmarks/README.md), in every writer's commit and under a rebuild's lock.
    add(db, "big", [common_body(i) for i in range(60)], day=DAY1)
    index(db)
    with db.connection() as conn:
        assert champions_store.refresh_champions(conn, "big", min_df=5, size=4).outcome == "built"
        ids = [r[0] for r in conn.execute("SELECT id FROM episodes WHERE memory = 'big'")]
        rows = conn.execute(
            "SELECT count(*) FROM chunks WHERE episode_id = ANY(%s)", (ids,)
        ).fetchone()[0]
        assert (
            conn.execute(
                "SELECT count(*) FROM keyword_champion_lists WHERE memory = 'big'"
            ).fetchone()[0]
            > 1
        )
        conn.execute("BEGIN")
        try:
            [[plan]] = conn.execute(
                "EXPLAIN (ANALYZE, FORMAT JSON) " + query("keyword_champions_record"),
                {"episode_ids": ids},
            ).fetchall()
        finally:
            conn.execute("ROLLBACK")
    loops = [
        n["Actual Loops"]
        for n in _plan_nodes(plan[0]["Plan"])
        if n.get("Function Name") == "unnest"
    ]
    assert loops == [rows], loops
