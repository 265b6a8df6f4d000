-- Statements (any status: a contested belief is still searched) without a vector for the
-- (profile, generation) being written, oldest first.
SELECT o.id, o.memory, o.text
FROM observations o
WHERE NOT EXISTS (
    SELECT 1 FROM observation_embeddings v
    WHERE v.profile_id = %(profile_id)s AND v.generation = %(generation)s AND v.observation_id = o.id
)
ORDER BY o.id
LIMIT %(limit)s
