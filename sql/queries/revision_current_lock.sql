-- Lock the current revision of a source.
SELECT id, content_hash
FROM episodes
WHERE memory = %s AND source_key = %s AND superseded_at IS NULL
FOR NO KEY UPDATE
