-- Current episodes without any chunk yet (the `chunks` stage's work; a superseded revision has
-- none on purpose, migration 0031), oldest occurrence first, optionally one ingest day only.
SELECT e.id, e.memory, e.content_hash, e.body, e.ingest_day, e.title
FROM episodes e
WHERE (%(day)s::date IS NULL OR e.ingest_day = %(day)s::date)
  AND e.superseded_at IS NULL
  AND NOT EXISTS (SELECT 1 FROM chunks c WHERE c.episode_id = e.id)
ORDER BY e.occurred_at, e.id
LIMIT %(limit)s
