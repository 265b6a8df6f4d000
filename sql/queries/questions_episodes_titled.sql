-- The current episodes of a memory with exactly this title.
SELECT id FROM episodes WHERE memory = %s AND title = %s AND superseded_at IS NULL
 ORDER BY id
