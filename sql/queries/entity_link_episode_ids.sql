-- The current episodes of a memory (of one ingest day, or all when the day is NULL) to link.
SELECT id
FROM episodes
WHERE memory = %s AND (%s::date IS NULL OR ingest_day = %s::date) AND superseded_at IS NULL
ORDER BY id
