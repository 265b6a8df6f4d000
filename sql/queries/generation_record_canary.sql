-- Record a generation's canary (text and vector) once.
UPDATE embedding_generations SET canary_text = %s, canary_vector = %s
WHERE profile_id = %s AND generation = %s AND canary_vector IS NULL
