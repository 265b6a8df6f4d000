-- A memory's labelled questions (all memories: memory NULL), oldest first, each with a label of
-- what it expects: the episode's title, the newest revision's title of the source, or the
-- statement's text (migration 0035).
SELECT q.id, q.memory, q.question, q.episode_id, q.source_key, q.observation_id, q.author,
       q.created_at,
       COALESCE(e.title, s.title, o.kind || ': ' || left(o.text, 80)) AS expected
FROM retrieval_questions q
LEFT JOIN episodes e ON e.id = q.episode_id
LEFT JOIN observations o ON o.id = q.observation_id
LEFT JOIN LATERAL (
    SELECT title FROM episodes
    WHERE memory = q.memory AND source_key = q.source_key
    ORDER BY id DESC LIMIT 1
) s ON q.source_key IS NOT NULL
WHERE %(memory)s::text IS NULL OR q.memory = %(memory)s
ORDER BY q.memory, q.id
