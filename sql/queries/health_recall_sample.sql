-- A stable sample of a generation's vectors, the queries of the recall check.
SELECT memory, embedding
FROM embeddings
WHERE profile_id = %s AND generation = %s
ORDER BY md5(chunk_id)
LIMIT %s
