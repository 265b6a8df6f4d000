-- A memory's statements, newest first; retired ones (history) only when asked for.
SELECT id, memory, kind, status, text, confidence, episode_ids, passages, author, revises, observed_at,
       valid_from, valid_until, created_at, superseded_at
FROM observations
WHERE memory = %(memory)s
  AND (%(kind)s::text IS NULL OR kind = %(kind)s::text)
  AND (%(with_retired)s OR status <> 'retired')
ORDER BY observed_at DESC, id DESC
LIMIT %(limit)s
