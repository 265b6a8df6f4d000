-- Claim the episodes among `ids` no other index pass holds: a session advisory lock each, kept
-- until release_claims.sql (or until the connection ends, so a pass that dies releases them).
-- Returns every episode claimed, with whether it is still pending (the test of
-- pending_episodes.sql): another pass may have finished it since the ids were listed; the caller
-- releases those at once. (lock_class, id mod 2^31-1) is the two-int advisory key space, apart
-- from the migrations' one-bigint lock; a rare key clash only makes a pass skip an episode.
WITH claimed AS MATERIALIZED (
    SELECT id, ord
    FROM unnest(%(ids)s::bigint[]) WITH ORDINALITY AS t(id, ord)
    WHERE pg_try_advisory_lock(%(lock_class)s, mod(id, 2147483647)::int4)
)
SELECT e.id, e.memory, e.content_hash, e.body, e.ingest_day,
       (NOT EXISTS (SELECT 1 FROM chunks c WHERE c.episode_id = e.id)
        OR EXISTS (
            SELECT 1 FROM chunks c
            WHERE c.episode_id = e.id
              AND NOT EXISTS (
                    SELECT 1 FROM embeddings v
                    WHERE v.profile_id = %(profile_id)s AND v.generation = %(generation)s
                      AND v.memory = c.memory AND v.chunk_id = c.chunk_id))) AS pending
FROM claimed JOIN episodes e USING (id)
ORDER BY claimed.ord
