-- The newest earlier generation whatever its state, to say why none can be served.
SELECT generation, state, stale_reason FROM embedding_generations
WHERE profile_id = %s AND generation < %s ORDER BY generation DESC LIMIT 1
