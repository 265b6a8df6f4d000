"""Fused search against the real database, a loopback embedder and a loopback reranker."""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import pytest
from pgvector import HalfVector
from psycopg import sql

from memory_pipeline.domain.entities import Entity
from memory_pipeline.domain.policies import default_policies_path, load_policies
from memory_pipeline.errors import InputError
from memory_pipeline.indexing.until_done import index_pending
from memory_pipeline.ingest import ingest_paths
from memory_pipeline.rerankers.http import HttpReranker
from memory_pipeline.search.channels.run import channel_groups
from memory_pipeline.search.service import SearchService
from memory_pipeline.storage import entities_store, hnsw_store
from memory_pipeline.storage.database import POOL_SIZE
from memory_pipeline.storage.profiles_store import active_profile
from memory_pipeline.storage.vector_store import nearest_chunks, nearest_query
from memory_pipeline_tests.helpers import count, ollama_embedder, write_jsonl
from memory_pipeline_tests.search.conftest import ALICE, NOW
from memory_pipeline_tests.support.loopback import unused_port_url
from memory_pipeline_tests.support.rerank_server import LoopbackRerankServer
from memory_pipeline_tests.support.round_trips import counting


def titles(response) -> list[str]:
    return [r.title for r in response.results]


def test_fused_search_finds_by_meaning_and_words_with_provenance(service):
    response = service.search("alice", "bicycle chain derailleur")
    assert response.results[0].title == "Bike repair"
    top = response.results[0]
    assert top.ranks["vector"] == 1 and top.ranks["keyword"] == 1
    assert top.text.startswith("Fixed the bicycle chain") and top.end - top.start == len(top.text)
    assert response.vector_status == "ok" and response.keyword_method == "full_text"
    assert len(response.results) <= 8 and response.limit == 8
    doc = response.to_json()
    assert set(doc["results"][0]) == {
        "episodeId",
        "chunkId",
        "chunkIds",
        "anchor",
        "title",
        "kind",
        "occurredAt",
        "snippet",
        "start",
        "end",
        "text",
        "score",
        "ranks",
        "grade",
        "evidence",
    }
    assert doc["vector"] == {"status": "ok", "reason": None}
    assert doc["match"] == {"grade": doc["results"][0]["grade"], "reason": None}


@pytest.mark.parametrize(
    "query",
    [
        "garden tulips Tomás",
        "Tomás",
        "bicycle",
        "LDG-4102",
        "garden garden garden",
        "'; DROP TABLE chunks; --",
        "Tomás Rocha",
        "x_y%z",
        "soil wet garlic",
        "November 2026",
    ],
)
def test_no_search_returns_another_memorys_chunk(service, db, query):
    from memory_pipeline_tests.search.conftest import memory_of

    for memory in ("alice", "bob"):
        for policy in ("default", "recent", "exact", "journal", "work"):
            response = service.search(memory, query, policy=policy, limit=50)
            for result in response.results:
                assert memory_of(db, result.chunk_id) == {memory}


def test_keyword_channel_treats_the_query_as_data(service):
    nasty = [
        '"quoted" & | ! ( ) :*',
        "back\\slash \\\\",
        "100% _under_",
        "'; DROP TABLE episodes; --",
        "<-> & !tulips",
        "x_y%z",
    ]
    for query in nasty:
        response = service.search("alice", query, channels=("keyword",))
        assert response.channels == ("keyword",)
    literal = service.search("alice", "x_y%z", channels=("keyword",))
    assert titles(literal) == ["Odd identifiers"]
    # '%' and '_' are not wildcards: "x_y%z" does not match "xAyBz"-like text elsewhere.
    assert (
        service.search("alice", "C:\\temp\\new", channels=("keyword",)).results[0].title
        == "Odd identifiers"
    )


def test_keyword_fallback_finds_what_full_text_drops(service):
    # Punctuation has no lexemes; a literal percent sign is in one chunk only.
    response = service.search("alice", "%", channels=("keyword",))
    assert response.keyword_method == "substring" and titles(response) == ["Odd identifiers"]
    nothing = service.search("alice", "zzqqxx-never", channels=("keyword",))
    assert nothing.results == []


def test_keyword_channel_handles_cyrillic(service):
    response = service.search("alice", "пробежка в парке", channels=("keyword",))
    assert titles(response) == ["Поездка"] and response.keyword_method == "full_text"


def test_graph_channel_follows_names_and_aliases(service):
    response = service.search("alice", "what did tom say", channels=("graph",))
    assert response.entities == ["Tomás Rocha"]
    assert set(titles(response)) == {"Garden plan", "Old garden memory"}
    # Most recent first.
    assert titles(response) == ["Garden plan", "Old garden memory"]
    assert service.search("alice", "tomato soup", channels=("graph",)).results == []


def test_date_channel_lists_the_chunks_of_the_days_and_months_a_query_names(service):
    day = service.search("alice", "what happened on 25 November 2026?", channels=("date",))
    assert titles(day) == ["Bike repair"] and day.results[0].ranks == {"date": 1}
    # Newest first; every chunk of the month counts alike (fusion.FLAT_CHANNELS): only recency
    # and salience, within a near-tie, part them.
    month = service.search("alice", "anything from November 2026", channels=("date",))
    assert titles(month) == ["Bike repair", "Garden plan"]
    assert month.results[0].score == pytest.approx(month.results[1].score, abs=0.01)
    assert titles(service.search("bob", "November 2026", channels=("date",))) == [
        "Bob bicycle",
        "Bob garden",
    ]
    assert titles(service.search("alice", "November 2026", policy="work", channels=("date",))) == [
        "Garden plan"
    ]
    assert service.search("alice", "what did I bake in 2026", channels=("date",)).results == []
    # In the default search the named day lifts its episode above a better match by words.
    fused = service.search("alice", "garden soil on 25 November 2026")
    assert fused.results[0].title == "Bike repair" and fused.results[0].ranks["date"] == 1


def test_the_default_policys_channel_groups_each_get_a_pooled_connection_at_once(db):
    # vector, keyword, graph, date (a query naming a date) and the statement channels together:
    # a pool smaller than that made one channel wait for another's connection.
    default = load_policies(default_policies_path())["default"]
    assert channel_groups(default.channels) == [
        ("vector",),
        ("keyword",),
        ("graph",),
        ("date",),
        ("observation", "belief"),
    ]
    assert db.pool.max_size == POOL_SIZE == len(channel_groups(default.channels))


def test_graph_channel_sees_entity_changes_made_after_it_cached_the_names(db, service):
    # The service keeps each memory's entity matcher; an alias added by an import (an UPDATE of
    # the row), a new entity and a deleted one must each show in the very next search.
    assert service.search("alice", "what did grandma say", channels=("graph",)).results == []
    with db.connection() as conn:
        report = entities_store.EntityReport()
        entities_store.import_entities(
            conn, [("alice", Entity("Tomás Rocha", ("Grandma",)))], report
        )
        entities_store.link_mentions(conn, "alice", report)
    assert service.search("alice", "what did grandma say", channels=("graph",)).entities == [
        "Tomás Rocha"
    ]
    assert service.search("alice", "the derailleur", channels=("graph",)).results == []
    with db.connection() as conn:
        entities_store.import_entities(
            conn, [("alice", Entity("Derailleur", ()))], entities_store.EntityReport()
        )
        entities_store.link_mentions(conn, "alice", entities_store.EntityReport())
    assert titles(service.search("alice", "the derailleur", channels=("graph",))) == ["Bike repair"]
    with db.connection() as conn:
        conn.execute("DELETE FROM entities WHERE memory = 'alice' AND name = 'Derailleur'")
    assert service.search("alice", "the derailleur", channels=("graph",)).results == []


def test_policy_filters_kinds_and_time_window_in_every_channel(service):
    journal = service.search("alice", "garden bicycle bread", policy="journal", limit=50)
    assert {r.kind for r in journal.results} <= {"journal", "note"} and journal.results
    recent = service.search("alice", "garden tulips roses", policy="recent", limit=50)
    assert "Old garden memory" not in titles(recent) and "Garden plan" in titles(recent)
    vector_only = service.search(
        "alice", "garden", policy="journal", channels=("vector",), limit=50
    )
    # Filtering inside the index scan still yields every allowed chunk as a candidate.
    assert sorted(titles(vector_only)) == sorted(
        ["Garden plan", "Bike repair", "Recipe night", "Odd identifiers"]
    )


def test_old_memory_can_still_win(service):
    response = service.search("alice", "grandmother roses pear tree")
    assert response.results[0].title == "Old garden memory"


def test_vector_channel_unavailable_degrades_to_keyword_and_graph(db, world):
    down = SearchService(
        db, load_policies(), embedder=ollama_embedder(unused_port_url()), clock=lambda: NOW
    )
    response = down.search("alice", "bicycle chain Tomás")
    assert response.vector_status.startswith(
        "unavailable: the Ollama embedding service is unavailable"
    )
    assert response.to_json()["vector"]["status"] == "unavailable"
    assert response.results and all(r.ranks["vector"] is None for r in response.results)
    other = SearchService(
        db, load_policies(), embedder=ollama_embedder(unused_port_url(), dim=256), clock=lambda: NOW
    )
    mismatch = other.search("alice", "bicycle")
    assert "vectors of two models are never compared" in mismatch.vector_status
    assert titles(mismatch)[0] == "Bike repair"


def test_reranker_orders_the_pool_and_failures_keep_the_fused_order(db, world):
    policies = load_policies()
    fused = SearchService(db, policies, embedder=world, clock=lambda: NOW).search(
        "alice", "garden bread pie", limit=2
    )
    with LoopbackRerankServer() as server:
        reranked = SearchService(
            db, policies, embedder=world, clock=lambda: NOW, reranker=HttpReranker(server.url)
        ).search("alice", "cherry pie book club", limit=2)
        assert reranked.reranker == "ran" and titles(reranked)[0] == "Recipe night"
        assert len(server.requests[0]["documents"]) > 2
        assert reranked.results[0].score == pytest.approx(1.0)
    for mode in ("error500", "nonsense", "garbage", "partial"):
        with LoopbackRerankServer(mode=mode) as server:
            svc = SearchService(
                db, policies, embedder=world, clock=lambda: NOW, reranker=HttpReranker(server.url)
            )
            response = svc.search("alice", "garden bread pie", limit=2)
        assert response.reranker.startswith("fallback: ") and titles(response) == titles(fused)
    with LoopbackRerankServer(delay_s=3) as server:
        svc = SearchService(
            db,
            policies,
            embedder=world,
            clock=lambda: NOW,
            reranker=HttpReranker(server.url, timeout_s=0.5),
        )
        started = time.monotonic()
        slow = svc.search("alice", "garden bread pie", limit=2)
        assert time.monotonic() - started < 2.5
    assert slow.reranker.startswith("fallback: timed out") and titles(slow) == titles(fused)
    down = SearchService(
        db, policies, embedder=world, clock=lambda: NOW, reranker=HttpReranker(unused_port_url())
    )
    assert down.search("alice", "garden bread pie", limit=2).reranker.startswith(
        "fallback: unreachable"
    )
    exact = SearchService(
        db, policies, embedder=world, clock=lambda: NOW, reranker=HttpReranker(unused_port_url())
    )
    assert (
        exact.search("alice", "garden", policy="exact").reranker == "off"
    )  # the policy turns it off


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"memory": "nobody", "query": "x"}, "unknown memory 'nobody'"),
        ({"memory": "bad name!", "query": "x"}, "memory 'bad name!'"),
        ({"memory": "alice", "query": "   "}, "the query is empty"),
        ({"memory": "alice", "query": "x" * 100_000}, "100000 characters"),
        ({"memory": "alice", "query": "nul\x00byte"}, "NUL"),
        ({"memory": "alice", "query": "x", "policy": "nope"}, "unknown policy 'nope'"),
        ({"memory": "alice", "query": "x", "limit": 0}, "--limit 0"),
        ({"memory": "alice", "query": "x", "limit": 51}, "--limit 51"),
        (
            {"memory": "alice", "query": "x", "channels": ("vector", "smell")},
            "unknown channel 'smell'",
        ),
    ],
)
def test_bad_input_gets_a_clear_error(service, kwargs, message):
    memory, query = kwargs.pop("memory"), kwargs.pop("query")
    with pytest.raises(InputError) as info:
        service.search(memory, query, **kwargs)
    assert message in str(info.value)


def test_every_search_writes_telemetry(service, db):
    response = service.search("alice", "bicycle chain Tomás", limit=3)
    with db.connection() as conn:
        row = conn.execute(
            """SELECT memory, query, policy, result_limit, channels, latency_ms, vector_status, reranker,
                      candidates, results FROM search_telemetry ORDER BY id DESC LIMIT 1"""
        ).fetchone()
    (
        memory,
        query,
        policy,
        limit,
        channels,
        latency,
        vector_status,
        reranker,
        candidates,
        results,
    ) = row
    assert (memory, query, policy, limit) == ("alice", "bicycle chain Tomás", "default", 3)
    assert (
        channels == ["vector", "keyword", "graph", "date", "observation", "belief"]
        and latency > 0
        and vector_status == "ok"
    )
    assert reranker == "off"
    assert candidates["vector"][0]["rank"] == 1 and "score" in candidates["keyword"][0]
    assert candidates["graph"] and [r["chunk_id"] for r in results] == [
        r.chunk_id for r in response.results
    ]


def test_telemetry_commits_without_waiting_for_the_disk(service, db):
    # A trigger (the test's own) stores the session's synchronous_commit in the row it sees being
    # inserted: the search's telemetry row is written with it off, so no search waits for a WAL
    # flush; the search's own reads are unaffected.
    with db.connection() as conn:
        conn.execute("""CREATE FUNCTION probe_commit_mode() RETURNS trigger LANGUAGE plpgsql AS $$
                        BEGIN NEW.reranker := current_setting('synchronous_commit'); RETURN NEW; END $$""")
        conn.execute("""CREATE TRIGGER probe_commit_mode BEFORE INSERT ON search_telemetry
                        FOR EACH ROW EXECUTE FUNCTION probe_commit_mode()""")
    try:
        service.search("alice", "bicycle chain", limit=3)
        with db.connection() as conn:
            mode = conn.execute(
                "SELECT reranker FROM search_telemetry ORDER BY id DESC LIMIT 1"
            ).fetchone()[0]
            assert (
                conn.execute("SHOW synchronous_commit").fetchone()[0] == "on"
            )  # only that transaction
        assert mode == "off"
    finally:
        with db.connection() as conn:
            conn.execute("DROP TRIGGER probe_commit_mode ON search_telemetry")
            conn.execute("DROP FUNCTION probe_commit_mode()")


def test_the_telemetry_row_and_the_vector_query_each_cost_one_round_trip(service, db):
    from memory_pipeline.storage import search_store

    response = service.search("alice", "bicycle chain", limit=3)
    with db.connection() as conn:
        profile = active_profile(conn)
        rows = "SELECT count(*) FROM search_telemetry"
        before = conn.execute(rows).fetchone()[0]
        with counting(conn) as telemetry:
            search_store.record_telemetry(conn, service._telemetry(response, {}))
        with counting(conn) as vector:
            hits = nearest_chunks(conn, profile, "alice", np.ones(profile.dim), by_windows=True)
        assert conn.execute(rows).fetchone()[0] == before + 1
    assert telemetry.count == 1 and vector.count == 1 and hits


def test_the_vector_channel_reads_its_candidates_rows_in_its_own_statement(service, db):
    from memory_pipeline.search.channels.vector import VECTOR_CANDIDATES, vector_channel
    from memory_pipeline.storage.search_store import Filters, chunk_rows

    q = service._channel_query("alice", "bicycle chain", Filters(), with_rows=True)
    with db.connection() as conn:
        q.query_vector.get()  # the model's call is not the database's round trip
        with counting(conn) as trips:
            result = vector_channel(conn, q)
        ids = [cid for cid, _ in result.hits]
        assert result.rows == chunk_rows(conn, "alice", ids, texts=False)
        profile = active_profile(conn)
        vector = q.query_vector.get()
        hits = nearest_chunks(conn, profile, "alice", vector, limit=12, with_rows=3)
        plain = nearest_chunks(conn, profile, "alice", vector, limit=12)
    assert trips.count == 2 and ids and set(result.rows) == set(ids)  # serving, then the rows
    assert len(ids) <= VECTOR_CANDIDATES
    assert [(h.chunk_id, h.distance) for h in hits] == [(h.chunk_id, h.distance) for h in plain]
    read = [h.row is not None for h in hits]
    assert read[:3] == [True] * 3 and len(hits) > 3
    tied = [h for h in hits[3:] if h.distance == hits[2].distance]
    assert sum(read[3:]) == len(tied)  # past the first 3, only ties with the third


def test_a_repeated_vector_search_reads_the_serving_profile_in_its_statements_round_trip(
    service, db
):
    from memory_pipeline.search.channels.vector import VectorChannel, vector_channel
    from memory_pipeline.storage.profiles_store import mark_stale, record_calibration
    from memory_pipeline.storage.search_store import Filters

    channel = VectorChannel()
    q = service._channel_query("alice", "bicycle chain", Filters(), with_rows=True)
    q.query_vector.get()  # the model's call is not the database's round trip
    with db.connection() as conn:
        profile = active_profile(conn)
        trips = []
        for _ in range(2):
            with counting(conn) as seen:
                result = channel(conn, q)
            trips.append(seen.count)
        assert result == vector_channel(conn, q)
        # A write that changes what the channel reads shows in the very next search.
        measured = dataclasses.replace(result.calibration, close=0.123, reason=None)
        record_calibration(conn, profile.id, profile.generation, measured)
        assert channel(conn, q).calibration == measured
        mark_stale(conn, profile.id, profile.generation, "its canary moved")
        with counting(conn) as seen:
            stale = channel(conn, q)
        assert stale == vector_channel(conn, q) and not stale.hits
        assert "changed (its canary moved)" in stale.status and seen.count == 1
        conn.execute(
            "UPDATE embedding_generations SET state = 'ready', stale_reason = NULL "
            "WHERE profile_id = %s AND generation = %s",
            (profile.id, profile.generation),
        )
        assert channel(conn, q) == dataclasses.replace(result, calibration=measured)
        # Another generation serving (a reindex's switch): its vectors, here none yet.
        switch = "UPDATE embedding_profiles SET generation = generation + %s WHERE id = %s"
        conn.execute(switch, (1, profile.id))
        switched = channel(conn, q)
        assert switched == vector_channel(conn, q) and not switched.hits
        conn.execute(switch, (-1, profile.id))
        assert channel(conn, q).hits == result.hits
    assert trips == [2, 1]  # serving then the statement; then both in one


def test_both_graph_query_plans_return_the_same_chunks(db, world):
    from memory_pipeline.storage import search_store
    from memory_pipeline.storage.search_store import Filters

    with db.connection() as conn:
        ids = [r[0] for r in conn.execute("SELECT id FROM entities WHERE memory = 'alice'")]
        by_mentions = search_store.graph_candidates(
            conn, "alice", ids, Filters(), mentions=1, episodes=1000
        )
        recent_first = search_store.graph_candidates(
            conn, "alice", ids, Filters(), mentions=999, episodes=1000
        )
        limited = search_store.graph_candidates(
            conn, "alice", ids, Filters(), limit=1, mentions=999, episodes=1000
        )
    assert by_mentions == recent_first and len(by_mentions) >= 2
    assert limited == by_mentions[:1]


def test_graph_channel_follows_only_names_that_narrow_the_memory_down(db, world):
    from memory_pipeline.domain.entities import entity_matcher
    from memory_pipeline.search.channels.graph import followed_entities
    from memory_pipeline.storage import keyword_stats_store, search_store

    with db.connection() as conn:
        conn.execute(
            "INSERT INTO entities (memory, name, source) VALUES ('alice', 'Everyone', 'import')"
        )
        conn.execute("""INSERT INTO entity_mentions (entity_id, episode_id, memory)
                        SELECT n.id, e.id, 'alice' FROM entities n, episodes e
                        WHERE n.name = 'Everyone' AND e.memory = 'alice'""")
        tom = conn.execute(
            "SELECT id FROM entities WHERE memory = 'alice' AND name = 'Tomás Rocha'"
        ).fetchone()[0]
        matcher = entity_matcher(search_store.memory_entities(conn, "alice"))
        # In all 6 episodes: singles nothing out. Tomás: 2 of 6 (all 6 indexed).
        assert followed_entities(conn, "alice", "everyone and tom", matcher) == (
            [tom],
            2,
            len(ALICE),
        )
        assert followed_entities(conn, "alice", "nobody", matcher) == ([], 0, 0)
        everyone = conn.execute(
            "SELECT id FROM entities WHERE memory = 'alice' AND name = 'Everyone'"
        ).fetchone()[0]
        assert search_store.graph_rule_counts(conn, "alice", [everyone, tom]) == (
            {everyone: 6, tom: 2},
            len(ALICE),
        )
        # The share is of the indexed episodes, as the keyword statistics keep them: with four of
        # them left (the others' chunks deleted, as a re-chunk does), Tomás's 2 are half, no more.
        conn.execute("""DELETE FROM chunks WHERE episode_id IN
                        (SELECT id FROM episodes WHERE memory = 'alice' ORDER BY id LIMIT 2)""")
        keyword_stats_store.recompute(conn, ["alice"])
        assert search_store.graph_rule_counts(conn, "alice", [everyone, tom]) == (
            {everyone: 6, tom: 2},
            4,
        )
        assert followed_entities(conn, "alice", "everyone and tom", matcher) == ([tom], 2, 4)
        conn.execute("""DELETE FROM chunks WHERE episode_id IN
                        (SELECT id FROM episodes WHERE memory = 'alice' ORDER BY id LIMIT 3)""")
        keyword_stats_store.recompute(conn, ["alice"])
        # Fewer than four: every mentioned name is followed, as in any small memory.
        assert followed_entities(conn, "alice", "everyone and tom", matcher) == (
            [everyone, tom],
            8,
            3,
        )


def test_graph_channel_skips_mentioning_episodes_that_have_no_chunks_yet(db, world):
    from memory_pipeline.storage import search_store
    from memory_pipeline.storage.search_store import Filters

    with db.connection() as conn:
        ids = [r[0] for r in conn.execute("SELECT id FROM entities WHERE memory = 'alice'")]
        before = search_store.graph_candidates(
            conn, "alice", ids, Filters(), mentions=1, episodes=1000
        )
        # The newest mentioning episode loses its chunks (as while it waits for its vectors).
        conn.execute("DELETE FROM chunks WHERE chunk_id = %s", (before[0][0],))
        for mentions in (1, 999):  # both plans
            after = search_store.graph_candidates(
                conn, "alice", ids, Filters(), limit=1, mentions=mentions, episodes=1000
            )
            assert after == [before[1]]


FILLER = [
    "Quarterly invoices arrived late because the accountant moved offices across town again",
    "Weather stayed grey and windy with hail showers most afternoons near the harbour",
    "Neighbours repainted their fence bright yellow and planted lavender along the path",
    "Library books about medieval architecture are due back before next Thursday evening",
    "Cousin Maria sent postcards from Lisbon showing trams, tiles and enormous custard tarts",
    "Spreadsheet formulas broke after the software update renamed several column headers",
    "Kitchen tap keeps dripping although the plumber replaced every washer last month",
]


def test_vector_channel_scores_a_chunk_by_its_best_paragraph_window(db, tmp_path, embed_server):
    # One long chat whose fifth turn is about the question, among unrelated turns (its chunk
    # vector is diluted), and a short note that shares one word with the question.
    long_chat = "\n\n".join(
        FILLER[:4] + ["The bicycle chain snapped on the steep climb"] + FILLER[4:]
    )
    rows = [
        {
            "memory": "m",
            "kind": "chat",
            "title": "Long chat",
            "occurred_at": "2026-11-01T09:00:00Z",
            "body": long_chat,
        },
        {
            "memory": "m",
            "kind": "note",
            "title": "Shop hours",
            "occurred_at": "2026-11-01T09:00:00Z",
            "body": "bicycle shop opens at nine",
        },
    ]
    ingest_paths(db, [write_jsonl(tmp_path / "w.jsonl", rows)])
    embedder = ollama_embedder(embed_server.url)
    index_pending(db, embedder)
    query = "bicycle chain snapped climb"
    vector = embedder.embed_query(query)
    with db.connection() as conn:
        profile = active_profile(conn)
        title = dict(
            conn.execute(
                "SELECT c.chunk_id, e.title FROM chunks c JOIN episodes e ON e.id = c.episode_id"
            )
        )
        by_chunk = nearest_chunks(conn, profile, "m", vector, limit=5)
        by_window = nearest_chunks(conn, profile, "m", vector, limit=5, by_windows=True)
    assert [title[h.chunk_id] for h in by_chunk] == ["Shop hours", "Long chat"]
    assert [title[h.chunk_id] for h in by_window] == ["Long chat", "Shop hours"]
    # The window's distance is that of the best window: the turn with the one before it.
    window = "\n\n".join([FILLER[3], "The bicycle chain snapped on the steep climb"])
    expected = 1 - float(np.dot(vector, embedder.embed_documents([window])[0]))
    assert by_window[0].distance == pytest.approx(expected, abs=5e-3)
    # A chunk without windows keeps its chunk distance.
    assert by_window[1].distance == pytest.approx(by_chunk[0].distance, abs=1e-6)
    assert (by_window[0].window, by_window[1].window) == (4, None)  # FILLER[3] + the bicycle turn
    service = SearchService(db, load_policies(), embedder=embedder, clock=lambda: NOW)
    response = service.search("m", query, channels=("vector",))
    assert titles(response) == ["Long chat", "Shop hours"]
    # The long chat's snippet starts at the turn that matched, not at the chunk's start.
    assert response.results[0].snippet.startswith("…The bicycle chain snapped on the steep climb")


@pytest.mark.parametrize("filtered", [False, True])
def test_the_window_rescoring_statement_still_walks_the_hnsw_index(db, world, filtered):
    with db.connection() as conn:
        profile = active_profile(conn)
        index = hnsw_store.ensure_index(conn, profile).name
        statement = nearest_query(profile, filtered=filtered, by_windows=True)
        params = {
            "q": HalfVector(world.embed_query("garden")),
            "memory": "alice",
            "limit": 50,
            "kinds": ["note"] if filtered else None,
            "since": None,
            "until": None,
        }
        with conn.transaction():
            # A tiny, analyzed table (index passes leave it so): its rows are read and sorted
            # faster than the graph is walked, so make the choice visible.
            conn.execute("SET LOCAL enable_seqscan = off")
            conn.execute("SET LOCAL enable_sort = off")
            plan = "\n".join(r[0] for r in conn.execute(sql.SQL("EXPLAIN ") + statement, params))
    assert f"Index Scan using {index}" in plan and "CTE near" in plan


def test_adjacent_chunks_of_one_episode_come_back_as_one_passage(db, tmp_path, embed_server):
    # Paragraphs of ~1,000 characters are one chunk each; "zebra crossing" is in the second and
    # third, "zebra" alone in the fifth (not adjacent to them) and in a second episode.
    paragraphs = [f"Section {i}. " + (FILLER[i % len(FILLER)] + ". ") * 11 for i in range(6)]
    for i in (1, 2):
        paragraphs[i] += "The zebra crossing by the school was repainted."
    paragraphs[4] += "A zebra appeared in a dream."
    body = "\n\n".join(paragraphs)
    rows = [
        {
            "memory": "m",
            "kind": "doc",
            "title": "Town report",
            "occurred_at": "2026-11-01T09:00:00Z",
            "body": body,
        },
        {
            "memory": "m",
            "kind": "note",
            "title": "Zoo",
            "occurred_at": "2026-11-02T09:00:00Z",
            "body": "zebra zebra",
        },
    ]
    ingest_paths(db, [write_jsonl(tmp_path / "w.jsonl", rows)])
    index_pending(db, ollama_embedder(embed_server.url))
    service = SearchService(db, load_policies(), embedder=None, clock=lambda: NOW)
    # By default an episode is one result, its best passage: the fifth section is passed over.
    default = service.search("m", "zebra crossing school", channels=("keyword",), limit=8)
    assert [r.title for r in default.results] == ["Town report", "Zoo"]
    assert default.results[0].text.startswith("Section 1.")
    response = service.search(
        "m", "zebra crossing school", channels=("keyword",), limit=8, passages=True
    )
    assert sorted(r.title for r in response.results) == ["Town report", "Town report", "Zoo"]
    sewn = response.results[0]
    (lone,) = [r for r in response.results[1:] if r.title == "Town report"]
    assert len(sewn.chunk_ids) == 2 and sewn.chunk_id in sewn.chunk_ids
    assert sewn.text == body[sewn.start : sewn.end] and sewn.text.startswith("Section 1.")
    assert sewn.text.rstrip().endswith("repainted.") and "Section 2." in sewn.text
    assert lone.chunk_ids == (lone.chunk_id,) and lone.text.startswith("Section 4.")
    # The limit counts passages: one passage of two chunks fills a limit of 1.
    assert [
        r.chunk_ids
        for r in service.search(
            "m", "zebra crossing school", channels=("keyword",), limit=1
        ).results
    ] == [sewn.chunk_ids]
    assert response.to_json()["results"][0]["chunkIds"] == list(sewn.chunk_ids)
    unsewn = service.search("m", "zebra crossing school", channels=("keyword",), limit=8, sew=False)
    assert len(unsewn.results) == 4 and all(len(r.chunk_ids) == 1 for r in unsewn.results)
    from memory_pipeline.search.render import human_table, markdown_table

    assert "Town report (2 adjacent chunks)" in human_table(response)
    assert "| Town report (2 adjacent chunks) |" in markdown_table(response)


def test_a_memory_of_few_rows_is_searched_exactly_without_the_graph(db, world, monkeypatch):
    # A memory of at most EXACT_MAX_ROWS chunk rows compares every one of its vectors (read through
    # the primary key), so it never walks a graph that mostly holds other memories' nodes; a
    # larger one takes the HNSW index. Both give the exact order here (few rows).
    from memory_pipeline.search.channels import vector as vector_channel
    from memory_pipeline.storage import profiles_store, vector_store

    with db.connection() as conn:
        profile = active_profile(conn)
        index = hnsw_store.ensure_index(conn, profile).name
        alice_rows = profiles_store.serving_in(conn, "alice").rows
        assert alice_rows == count(db, "SELECT count(*) FROM chunks WHERE memory = 'alice'") > 0
        vector = world.embed_query("garden tulips")
        params = {
            "q": HalfVector(vector),
            "memory": "alice",
            "limit": 5,
            "kinds": None,
            "since": None,
        }
        plans = {}
        for exact in (False, True):
            with conn.transaction():
                conn.execute("SET LOCAL enable_seqscan = off")
                conn.execute("SET LOCAL enable_sort = off")  # as above: make the choice visible
                statement = nearest_query(profile, filtered=False, by_windows=True, exact=exact)
                plans[exact] = "\n".join(
                    r[0] for r in conn.execute(sql.SQL("EXPLAIN ") + statement, params)
                )
        exact_hits = vector_store.nearest_chunks(
            conn, profile, "alice", vector, limit=5, exact=True
        )
        stored = conn.execute(
            "SELECT chunk_id, embedding FROM embeddings WHERE memory = 'alice'"
        ).fetchall()
    assert f"Index Scan using {index}" in plans[False]
    assert index not in plans[True] and "embeddings_pkey" in plans[True]
    q = np.asarray(vector, dtype=np.float32)
    by_hand = sorted(
        stored,
        key=lambda r: (
            -float(np.dot(q, np.asarray(r[1].to_list())))
            / float(np.linalg.norm(np.asarray(r[1].to_list())) * np.linalg.norm(q))
        ),
    )
    assert [h.chunk_id for h in exact_hits] == [r[0] for r in by_hand[:5]]
    # The service takes the exact scan for alice (rows <= EXACT_MAX_ROWS) and the index once the
    # limit is below her rows; the answers agree.
    taken: list = []
    real = vector_channel.nearest_chunks

    def spy(*args, **kwargs):
        taken.append(kwargs.get("exact"))
        return real(*args, **kwargs)

    monkeypatch.setattr(vector_channel, "nearest_chunks", spy)
    service = SearchService(db, load_policies(), embedder=world, clock=lambda: NOW)
    exact_titles = titles(service.search("alice", "garden tulips", channels=("vector",)))
    monkeypatch.setattr(vector_channel, "EXACT_MAX_ROWS", alice_rows - 1)
    graph_titles = titles(service.search("alice", "garden tulips", channels=("vector",)))
    assert taken == [True, False] and exact_titles == graph_titles
