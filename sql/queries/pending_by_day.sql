-- Pending episodes per ingest day for a profile and generation (see pending_episodes.sql):
-- how many, the newest one's id (sensor run keys), and the oldest ingest time (backlog check).
SELECT e.ingest_day, count(*) AS pending, max(e.id) AS newest_id, min(e.ingested_at) AS oldest_ingested_at
FROM episodes e
WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.episode_id = e.id)
   OR EXISTS (
        SELECT 1 FROM chunks c
        WHERE c.episode_id = e.id
          AND NOT EXISTS (
                SELECT 1 FROM embeddings v
                WHERE v.profile_id = %(profile_id)s AND v.generation = %(generation)s
                  AND v.memory = c.memory AND v.chunk_id = c.chunk_id))
GROUP BY e.ingest_day
ORDER BY e.ingest_day
