-- Refine the nearest chunks by their window vectors; {near} is vector_nearest, composed with psycopg.sql.
WITH near AS MATERIALIZED ({near}) SELECT n.memory, n.chunk_id, coalesce(best.distance, n.distance), best.window
FROM near n
LEFT
JOIN LATERAL (SELECT w <=> %(q)s::halfvec({dim}) AS distance, (o - 1)::int AS window
FROM unnest(n.windows) WITH ORDINALITY AS x(w, o)
ORDER BY 1
LIMIT 1) best ON true
