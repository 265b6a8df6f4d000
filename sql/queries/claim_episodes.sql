-- Claim the episodes among `ids` no other index pass holds: a session advisory lock each, kept
-- until release_claims.sql (or until the connection ends, so a pass that dies releases them).
-- Returns every episode claimed, with whether it is still pending (the pending_episodes
-- function, migration 0012): another pass may have finished it since the ids were listed; the
-- caller releases those at once. (lock_class, id mod 2^31-1) is the two-int advisory key space,
-- apart from the migrations' one-bigint lock; a rare key clash only makes a pass skip an episode.
WITH claimed AS MATERIALIZED (
    SELECT id, ord
    FROM unnest(%(ids)s::bigint[]) WITH ORDINALITY AS t(id, ord)
    WHERE pg_try_advisory_lock(%(lock_class)s, mod(id, 2147483647)::int4)
)
SELECT e.id, e.memory, e.content_hash, e.body, e.ingest_day, e.title, (p.id IS NOT NULL) AS pending
FROM claimed
JOIN episodes e USING (id)
LEFT JOIN pending_episodes(%(profile_id)s, %(generation)s) p ON p.id = claimed.id
ORDER BY claimed.ord
