-- Mark a building generation ready, keeping the first time it became ready.
UPDATE embedding_generations SET state = 'ready', ready_at = coalesce(ready_at, now())
WHERE profile_id = %s AND generation = %s AND state = 'building'
