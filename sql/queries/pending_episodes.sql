-- Pending episodes (DESIGN.md): no chunks yet, or a chunk without a vector for the given
-- profile and generation. Oldest occurrence first, optionally one ingest day only.
SELECT e.id, e.memory, e.content_hash, e.body, e.ingest_day
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
