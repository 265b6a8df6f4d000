-- Characters still to embed for a generation (of one ingest day, or all when the day is NULL).
SELECT coalesce(sum(length(e.body)), 0)
FROM pending_episodes(%(profile_id)s, %(generation)s) e
WHERE %(day)s::date IS NULL OR e.ingest_day = %(day)s::date
