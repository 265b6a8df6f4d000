-- Lock the episodes of a memory with this content.
SELECT id, source_key, superseded_at
FROM episodes
WHERE memory = %s AND content_hash = %s
FOR NO KEY UPDATE
