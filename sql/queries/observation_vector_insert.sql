-- One statement's vector; a concurrent pass that wrote it first wins.
INSERT INTO observation_embeddings (profile_id, generation, observation_id, memory, embedding)
VALUES (%(profile_id)s, %(generation)s, %(observation_id)s, %(memory)s, %(embedding)s)
ON CONFLICT DO NOTHING
