-- Register a generation as building unless it exists.
INSERT INTO embedding_generations (profile_id, generation, state)
VALUES (%s, %s, 'building') ON CONFLICT DO NOTHING
