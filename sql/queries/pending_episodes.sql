-- Pending episodes (the pending_episodes function, migration 0012) for a profile and
-- generation, oldest occurrence first, optionally one ingest day only.
SELECT e.id, e.memory, e.content_hash, e.body, e.ingest_day, e.title
FROM pending_episodes(%(profile_id)s, %(generation)s) e
WHERE (%(day)s::date IS NULL OR e.ingest_day = %(day)s::date)
ORDER BY e.occurred_at, e.id
LIMIT %(limit)s
