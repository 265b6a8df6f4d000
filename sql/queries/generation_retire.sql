-- Retire a generation (a stale one keeps its state).
UPDATE embedding_generations
SET state = 'retired'
WHERE profile_id = %s AND generation = %s AND state <> 'stale'
