-- Claim pending episodes for one index pass (the pending test of pending_episodes.sql), oldest
-- occurrence first: a session advisory lock per episode, taken in the order below and only until
-- `limit` are held, so a concurrent pass skips them (claim before embedding) and a pass that
-- dies releases them with its connection. The candidates are materialized first: a lock test in
-- the same scan as the ORDER BY would be evaluated on every pending row, not just the kept ones.
-- (lock_class, episode id mod 2^31-1) is the two-int advisory key space, apart from the
-- migrations' one-bigint lock; a rare key clash only makes a pass skip an episode another holds.
-- `held`: the episodes this session claimed already (its own locks would be granted again).
WITH candidates AS MATERIALIZED (
    SELECT e.id
    FROM episodes e
    WHERE (%(day)s::date IS NULL OR e.ingest_day = %(day)s::date)
      AND NOT e.id = ANY(%(held)s::bigint[])
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
    LIMIT %(scan)s
), claimed AS MATERIALIZED (
    SELECT id FROM candidates
    WHERE pg_try_advisory_lock(%(lock_class)s, mod(id, 2147483647)::int4)
    LIMIT %(limit)s
)
SELECT e.id, e.memory, e.content_hash, e.body, e.ingest_day
FROM episodes e JOIN claimed USING (id)
ORDER BY e.occurred_at, e.id
