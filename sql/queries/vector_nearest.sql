-- Nearest chunks by vector; identifiers, numbers and the policy filter are composed with psycopg.sql.
SELECT memory, chunk_id, {expr} <=> %(q)s::halfvec({dim}) AS distance{windows}
FROM embeddings v
WHERE profile_id = {pid} AND generation = {gen} AND memory = %(memory)s
{policy_filter}ORDER BY {order}
LIMIT %(limit)s
