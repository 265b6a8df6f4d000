-- Every revision of one episode's source, newest first (an episode without a source identity
-- is its only revision): when each was ingested and stopped being current, which one took its
-- place, and its length.
WITH one AS (SELECT id, memory, source_key FROM episodes WHERE id = %(id)s)
SELECT e.id, e.title, e.kind, e.occurred_at, e.ingested_at, e.source, e.source_key, e.memory,
       e.superseded_at, e.superseded_by, length(e.body)
FROM one
JOIN episodes e ON e.id = one.id
   OR (one.source_key IS NOT NULL AND e.memory = one.memory AND e.source_key = one.source_key)
ORDER BY e.id DESC
