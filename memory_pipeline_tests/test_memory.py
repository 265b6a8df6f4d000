"""The Python API (``memory_pipeline.Memory``): add, index, search, forget, memories, status.

Real embedded PostgreSQL (a fresh database per test) and a loopback Ollama-format model server.
"""

from __future__ import annotations

import psycopg
import pytest

from memory_pipeline import Memory
from memory_pipeline.errors import ConfigurationError, DatabaseUnavailable, InputError
from memory_pipeline.memory import UnknownEpisode, UnknownMemory
from memory_pipeline_tests.helpers import count
from memory_pipeline_tests.support import stores
from memory_pipeline_tests.support.loopback import unused_port_url

TABLES = (
    "episodes",
    "chunks",
    "embeddings",
    "entity_mentions",
    "episode_names",
    "entities",
    "keyword_stats",
    "keyword_memory_stats",
    "search_telemetry",
)


def ep(memory: str, title: str, body: str, day: str = "2026-03-01") -> dict:
    return {"memory": memory, "kind": "note", "title": title, "occurred_at": day, "body": body}


def rows_of(memory: Memory, memory_name: str) -> dict[str, int]:
    counts = {}
    for table in TABLES:
        counts[table] = count(
            memory.db, f"SELECT count(*) FROM {table} WHERE memory = %s", memory_name
        )
    return counts


def test_add_stores_valid_items_and_locates_rejections(mem):
    report = mem.add(
        [
            ep("alice", "Bread", "Sourdough needs a warm kitchen."),
            {"memory": "alice", "kind": "note", "title": "No date", "body": "x"},
            ep("alice", "Bread again", "Sourdough needs a warm kitchen."),  # same body: a duplicate
            "not an object",
            {**ep("alice", "Typo", "y"), "titel": "z"},
        ]
    )
    assert report.inserted == 1 and report.duplicates == 1
    located = {r.location: r.reason for r in report.rejections}
    assert set(located) == {"episodes[1]", "episodes[3]", "episodes[4]"}
    assert located["episodes[1]"] == "missing field 'occurred_at'"
    assert located["episodes[3]"] == "expected a JSON object, got string"
    assert "'titel'" in located["episodes[4]"]
    assert mem.episode(report.inserted_ids[0])["title"] == "Bread"


def test_add_fills_memory_and_kind_and_validates_them(mem):
    report = mem.add(
        [{"title": "T", "occurred_at": "2026-01-01", "body": "b"}], memory="bob", kind="chat"
    )
    stored = mem.episode(report.inserted_ids[0])
    assert (stored["memory"], stored["kind"]) == ("bob", "chat")
    with pytest.raises(InputError, match="invalid memory name"):
        mem.add([], memory="../etc")
    with pytest.raises(InputError, match="at most 1000"):
        mem.add([ep("bob", "t", f"b{i}") for i in range(1001)])


def test_index_search_and_unknown_memory_names_the_existing_ones(mem, model):
    mem.add(
        [
            ep("alice", "Bread", "Sourdough needs a warm kitchen and patience."),
            ep("alice", "Bike", "The bicycle chain was oiled on Sunday."),
        ]
    )
    report = mem.index()
    assert report.episodes == 2 and report.vectors >= 2 and report.pending_after == 0
    response = mem.search("alice", "sourdough kitchen")
    assert response.results[0].title == "Bread"
    assert response.vector_status == "ok"
    with pytest.raises(UnknownMemory) as caught:
        mem.search("carol", "bread")
    assert "unknown memory 'carol'" in str(caught.value) and "alice" in str(caught.value)
    assert caught.value.known == ["alice"]
    with pytest.raises(InputError, match="invalid memory name"):
        mem.search("no/slashes", "bread")


def test_memories_and_status(mem, db_url):
    mem.add(
        [ep("alice", "A", "one"), ep("alice", "B", "two", "2026-04-02"), ep("bob", "C", "three")]
    )
    rows = {m.name: m for m in mem.memories()}
    assert (rows["alice"].episodes, rows["bob"].episodes) == (2, 1)
    assert rows["alice"].first_at.date().isoformat() == "2026-03-01"
    assert rows["alice"].last_at.date().isoformat() == "2026-04-02"
    status = mem.status().to_json()
    assert status["memories"] == 2 and status["episodes"] == 3 and status["pendingEpisodes"] == 3
    assert psycopg.conninfo.conninfo_to_dict(db_url)["dbname"] in status["database"]
    assert status["telemetry"] == {"enabled": True, "retentionDays": 90}


def test_forget_episode_removes_every_derived_row_and_search_never_returns_it(mem):
    shared = "The weekly market sells apples, pears and cheese from the valley farms."
    report = mem.add(
        [
            ep("alice", "Secret", "Zanzibar vacation plan with Lucinda Okonkwo.\n\n" + shared),
            ep(
                "alice",
                "Other",
                "Lucinda Okonkwo called about the garden.\n\n" + shared,
                "2026-03-02",
            ),
            ep("alice", "Third", "Lucinda Okonkwo brought cheese.", "2026-03-03"),
            ep("bob", "Bob's", "Zanzibar vacation plan with Lucinda Okonkwo."),
        ]
    )
    secret = report.inserted_ids[0]
    mem.index()
    from memory_pipeline.storage import entities_store

    with mem.db.connection() as conn:
        stores.refresh_memories(conn, ["alice", "bob"], entities_store.EntityReport())
    assert mem.search("alice", "Zanzibar vacation").results[0].episode_id == secret
    before_alice, before_bob = rows_of(mem, "alice"), rows_of(mem, "bob")
    chunks_of_secret = count(mem.db, "SELECT count(*) FROM chunks WHERE episode_id = %s", secret)
    mentions_of_secret = count(
        mem.db, "SELECT count(*) FROM entity_mentions WHERE episode_id = %s", secret
    )
    assert (
        chunks_of_secret >= 1 and mentions_of_secret >= 1 and before_alice["search_telemetry"] == 1
    )

    counts = mem.forget("alice", episode_id=secret)

    assert (counts.episodes, counts.chunks, counts.mentions, counts.telemetry) == (
        1,
        chunks_of_secret,
        mentions_of_secret,
        1,
    )
    after = rows_of(mem, "alice")
    assert after["episodes"] == before_alice["episodes"] - 1
    assert after["chunks"] == before_alice["chunks"] - chunks_of_secret
    assert after["entity_mentions"] == before_alice["entity_mentions"] - mentions_of_secret
    assert after["search_telemetry"] == 0
    # The shared paragraph's vector stays only if another chunk has the same text; the
    # episode's own chunk vectors are gone.
    assert (
        after["embeddings"] == before_alice["embeddings"] - counts.vectors and counts.vectors >= 1
    )
    assert (
        count(
            mem.db,
            "SELECT count(*) FROM embeddings v WHERE v.memory = 'alice' AND NOT EXISTS "
            "(SELECT 1 FROM chunks c WHERE c.memory = v.memory AND c.chunk_id = v.chunk_id)",
        )
        == 0
    )
    # Keyword statistics equal a recount of what is left.

    with mem.db.connection() as conn:
        assert stores.stored_stats(conn, "alice") == stores.counted_stats(conn, "alice")
        assert "zanzibar" not in stores.stored_stats(conn, "alice")[1]
    for query in ("Zanzibar vacation", "zanzibar"):
        assert all(r.episode_id != secret for r in mem.search("alice", query).results)
        assert not [r for r in mem.search("alice", query).results if "Zanzibar" in r.text]
    assert rows_of(mem, "bob") == {**before_bob}
    with pytest.raises(UnknownEpisode):
        mem.episode(secret)
    with pytest.raises(UnknownEpisode):
        mem.forget("alice", episode_id=secret)


def test_forget_episode_of_another_memory_is_not_found(mem):
    report = mem.add([ep("alice", "A", "apples"), ep("bob", "B", "bananas")])
    with pytest.raises(UnknownEpisode):
        mem.forget("alice", episode_id=report.inserted_ids[1])
    assert count(mem.db, "SELECT count(*) FROM episodes") == 2


def test_forget_memory_removes_it_and_nothing_else(mem):
    mem.add(
        [
            ep("alice", "A", "apples and pears"),
            ep("alice", "B", "pears and plums"),
            ep("bob", "C", "apples and pears"),
        ]
    )
    mem.index()
    mem.search("alice", "pears")
    mem.search("bob", "pears")
    before_bob = rows_of(mem, "bob")
    counts = mem.forget("alice")
    assert counts.episodes == 2
    assert rows_of(mem, "alice") == {t: 0 for t in TABLES}
    assert rows_of(mem, "bob") == before_bob
    with pytest.raises(UnknownMemory, match="existing: bob"):
        mem.search("alice", "pears")
    with pytest.raises(UnknownMemory):
        mem.forget("alice")


def test_telemetry_opt_out_and_retention(db_url, model):
    with Memory.open(
        url=db_url,
        embed_provider="ollama",
        embed_url=model.url,
        telemetry=False,
        record_in_dagster=False,
    ) as mem:
        mem.add([ep("alice", "A", "apples")])
        mem.search("alice", "apples", channels=("keyword",))
        assert count(mem.db, "SELECT count(*) FROM search_telemetry") == 0
    with Memory.open(url=db_url, telemetry_days=7, record_in_dagster=False) as mem:
        mem.search("alice", "apples", channels=("keyword",))
        with mem.db.connection() as conn:
            conn.execute("UPDATE search_telemetry SET searched_at = now() - interval '8 days'")
        mem.search("alice", "apples", channels=("keyword",))
        assert mem.purge_telemetry() == 1
        assert count(mem.db, "SELECT count(*) FROM search_telemetry") == 1


def test_settings_are_checked_before_the_database_starts(tmp_path):
    with pytest.raises(ConfigurationError, match="MEMORY_PIPELINE_EMBED_PROVIDER"):
        Memory.open(home=tmp_path, embed_provider="nope")
    with pytest.raises(ConfigurationError, match="MEMORY_PIPELINE_TELEMETRY_DAYS"):
        Memory.open(home=tmp_path, telemetry_days=0)
    assert not (tmp_path / "pgdata").exists()


def test_an_unreachable_database_is_database_unavailable():
    url = unused_port_url().replace("http://", "postgresql://u:secret@") + "/db"
    with pytest.raises(DatabaseUnavailable) as caught:
        Memory.open(url=url)
    assert "secret" not in str(caught.value)
