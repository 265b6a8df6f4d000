-- The per-generation HNSW index over observation vectors; identifiers composed with psycopg.sql.
CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON observation_embeddings
USING hnsw ({expr} halfvec_cosine_ops) WITH (m = {m}, ef_construction = {efc})
WHERE profile_id = {pid} AND generation = {gen}
