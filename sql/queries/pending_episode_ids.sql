-- The ids of pending episodes (the pending_episodes function, migration 0012), oldest
-- occurrence first: an index pass reads its list once (this is a scan of every episode) and
-- then claims from it round by round with claim_episodes.sql.
SELECT e.id
FROM pending_episodes(%(profile_id)s, %(generation)s) e
WHERE (%(day)s::date IS NULL OR e.ingest_day = %(day)s::date)
ORDER BY e.occurred_at, e.id
LIMIT %(limit)s
