-- Make a stale generation usable again (its state given), clearing the reason.
UPDATE embedding_generations
SET state = %s, stale_reason = NULL
WHERE profile_id = %s AND generation = %s AND state = 'stale'
