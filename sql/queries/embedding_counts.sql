-- A generation's vectors, and how many of them carry window vectors.
SELECT count(*), count(*) FILTER (WHERE windows IS NOT NULL)
FROM embeddings
WHERE profile_id = %s AND generation = %s
