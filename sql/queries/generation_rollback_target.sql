-- The newest earlier generation that a rollback can serve.
SELECT generation FROM embedding_generations
WHERE profile_id = %s AND generation < %s AND state IN ('ready', 'retired')
ORDER BY generation DESC LIMIT 1
