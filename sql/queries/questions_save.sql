-- A labelled question, one text per memory: saving it again points it at the new answer.
INSERT INTO retrieval_questions (memory, question, episode_id, source_key, observation_id, author)
VALUES (%s, %s, %s, %s, %s, %s)
ON CONFLICT (memory, question) DO UPDATE SET episode_id = EXCLUDED.episode_id,
    source_key = EXCLUDED.source_key, observation_id = EXCLUDED.observation_id,
    author = EXCLUDED.author
RETURNING id, (xmax = 0)
