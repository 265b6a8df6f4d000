-- What answers each of a memory's questions, as search results name it: the episode ids
-- (a source: every revision of it) and the statement key ("<kind>:<id>", search.results).
SELECT q.id,
       CASE WHEN q.episode_id IS NOT NULL THEN ARRAY[q.episode_id]
            WHEN q.source_key IS NOT NULL THEN ARRAY(
                SELECT e.id FROM episodes e
                WHERE e.memory = q.memory AND e.source_key = q.source_key)
            ELSE '{}'::bigint[] END AS episode_ids,
       CASE WHEN q.observation_id IS NOT NULL THEN o.kind || ':' || o.id END AS statement_key
FROM retrieval_questions q
LEFT JOIN observations o ON o.id = q.observation_id
WHERE q.memory = %(memory)s
ORDER BY q.id
