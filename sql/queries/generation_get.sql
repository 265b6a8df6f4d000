-- One generation with its state and canary.
SELECT profile_id, generation, state, stale_reason, canary_text, canary_vector
FROM embedding_generations WHERE profile_id = %s AND generation = %s
