"""index_store's reads on the write path stay cheap on tables the planner knows nothing about."""

from __future__ import annotations

from memory_pipeline.embedders.base import EmbeddingProfile
from memory_pipeline.storage import index_store, profiles_store
from memory_pipeline.storage.paths import query


def test_existing_vectors_probes_the_key_per_key_on_an_embeddings_table_never_analyzed(db):
    # Every first index pass writes into an embeddings table autovacuum has not analyzed yet: the
    # old join was then planned as a hash over all of the generation's vectors, at every call.
    with db.connection() as conn:
        conn.execute(
            "ALTER TABLE embeddings SET (autovacuum_enabled = off)"
        )  # no analyze meanwhile
        profile = profiles_store.register_profile(
            conn, EmbeddingProfile("ollama", "m", 3)
        ).writing()
        conn.execute(
            "INSERT INTO embeddings (profile_id, generation, memory, chunk_id, embedding)"
            " SELECT %s, %s, 'alice', 'c' || i, '[1,0,0]' FROM generate_series(1, 3000) AS i",
            (profile.id, profile.generation),
        )
        keys = [("alice", f"c{i}") for i in range(2990, 3010)] + [("bob", "c1")]

        assert index_store.existing_vectors(conn, profile, keys) == {
            ("alice", f"c{i}") for i in range(2990, 3001)
        }
        params = {
            "memories": [m for m, _ in keys],
            "chunk_ids": [c for _, c in keys],
            "profile_id": profile.id,
            "generation": profile.generation,
        }
        plan = "\n".join(
            row[0]
            for row in conn.execute("EXPLAIN " + query("existing_vectors"), params, prepare=False)
        )
        assert "Hash" not in plan and "Seq Scan" not in plan, plan
        assert (
            "Index Only Scan using embeddings_pkey" in plan
            or "Index Scan using embeddings_pkey" in plan
        ), plan
