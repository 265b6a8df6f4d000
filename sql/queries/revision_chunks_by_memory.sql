-- The chunk ids of episodes, per memory.
SELECT memory, array_agg(DISTINCT chunk_id) FROM chunks WHERE episode_id = ANY(%s) GROUP BY memory
