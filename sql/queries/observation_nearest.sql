-- Nearest observations by vector; identifiers and numbers are composed with psycopg.sql.
SELECT v.observation_id, {expr} <=> %(q)s::halfvec({dim}) AS distance
FROM observation_embeddings v
JOIN observations o ON o.id = v.observation_id
WHERE v.profile_id = {pid} AND v.generation = {gen} AND v.memory = %(memory)s AND o.kind = ANY(%(kinds)s::text[]) AND o.status = ANY(%(statuses)s::text[])
ORDER BY {expr} <=> %(q)s::halfvec({dim})
LIMIT %(limit)s
