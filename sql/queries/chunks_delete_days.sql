-- Delete the chunk rows of the episodes ingested in a range of days; how many per memory.
WITH d AS (DELETE FROM chunks c USING episodes e
           WHERE e.id = c.episode_id AND e.ingest_day BETWEEN %s AND %s RETURNING c.memory)
SELECT memory, count(*) FROM d GROUP BY memory
