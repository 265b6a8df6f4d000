-- The per-generation HNSW index; identifiers and numbers are composed with psycopg.sql.
CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON embeddings
USING hnsw ((embedding::halfvec({dim})) halfvec_cosine_ops) WITH (m = {m}, ef_construction = {efc})
WHERE profile_id = {pid} AND generation = {gen}
