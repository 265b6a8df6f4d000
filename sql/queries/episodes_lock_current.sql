-- Lock the still-current episodes of a batch, skipping those another writer holds.
SELECT id
FROM episodes
WHERE id = ANY(%s) AND superseded_at IS NULL
ORDER BY id
FOR NO KEY UPDATE SKIP LOCKED
