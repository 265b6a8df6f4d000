-- The ids of pending episodes (the test of pending_episodes.sql), oldest occurrence first: an
-- index pass reads its list once (this is a scan of every episode) and then claims from it
-- round by round with claim_episodes.sql.
SELECT e.id
FROM episodes e
WHERE (%(day)s::date IS NULL OR e.ingest_day = %(day)s::date)
  AND (
        NOT EXISTS (SELECT 1 FROM chunks c WHERE c.episode_id = e.id)
     OR EXISTS (
            SELECT 1 FROM chunks c
            WHERE c.episode_id = e.id
              AND NOT EXISTS (
                    SELECT 1 FROM embeddings v
                    WHERE v.profile_id = %(profile_id)s AND v.generation = %(generation)s
                      AND v.memory = c.memory AND v.chunk_id = c.chunk_id))
  )
ORDER BY e.occurred_at, e.id
LIMIT %(limit)s
