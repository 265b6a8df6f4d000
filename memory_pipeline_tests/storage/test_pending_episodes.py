"""Pending episodes, defined once (the pending_episodes SQL function, migration 0012): every
query that asks agrees, and PostgreSQL inlines the definition into each of them."""

from __future__ import annotations

from memory_pipeline.embedders.base import EmbeddingProfile
from memory_pipeline.ingest import ingest_paths
from memory_pipeline.storage import index_store, profiles_store
from memory_pipeline.storage.paths import query
from memory_pipeline_tests.helpers import episode, write_jsonl

QUERIES = ("pending_episode_ids", "pending_by_day", "claim_episodes")


def test_every_pending_query_agrees_on_the_one_definition_inlined(db, tmp_path):
    ingest_paths(db, [write_jsonl(tmp_path / "e.jsonl", [episode(i) for i in range(4)])])
    with db.connection() as conn:
        profile = profiles_store.register_profile(
            conn, EmbeddingProfile("ollama", "m", 3)
        ).writing()
        ids = [row[0] for row in conn.execute("SELECT id FROM episodes ORDER BY occurred_at, id")]
        unchunked, vectorless, done, other_generation = ids
        for ordinal, episode_id in enumerate(ids[1:]):  # one chunk each for the last three
            conn.execute(
                "INSERT INTO chunks (episode_id, ordinal, memory, chunk_id, start_char, end_char, token_estimate, text)"
                " SELECT id, 0, memory, %s, 0, 4, 1, 'text' FROM episodes WHERE id = %s",
                (f"c{ordinal}", episode_id),
            )
        for chunk_id, generation in (("c1", profile.generation), ("c2", profile.generation + 1)):
            conn.execute(
                "INSERT INTO embeddings (profile_id, generation, memory, chunk_id, embedding)"
                " VALUES (%s, %s, 'alice', %s, '[1,0,0]')",
                (profile.id, generation, chunk_id),
            )
        expected = [unchunked, vectorless, other_generation]

        assert index_store.pending_ids(conn, profile, limit=10) == expected
        assert list(index_store.pending_by_day(conn, profile).values()) == [3]  # one ingest day
        claimed, finished = index_store.claim_episodes(conn, profile, ids)
        assert ([p.id for p in claimed], finished) == (expected, [done])
        index_store.release_claims(conn, ids)
        # No stored profile yet: everything is pending.
        assert index_store.pending_ids(conn, None, limit=10) == ids

        params = {
            "profile_id": profile.id,
            "generation": profile.generation,
            "day": None,
            "limit": 10,
            "ids": ids,
            "lock_class": index_store.CLAIM_LOCK_CLASS,
        }
        for name in QUERIES:
            assert "pending_episodes(%(profile_id)s, %(generation)s)" in query(name), name
            plan = "\n".join(
                row[0] for row in conn.execute("EXPLAIN " + query(name), params, prepare=False)
            )
            assert "Function Scan on pending_episodes" not in plan, (name, plan)  # inlined
        conn.execute("SELECT pg_advisory_unlock_all()")
