-- The statement_vectors asset's check, for one (profile, generation): live statements (active
-- or contested: both are searched), those without a vector, and among the vectors, wrong
-- dimensions and non-unit lengths.
WITH live AS (
    SELECT o.id FROM observations o WHERE o.status IN ('active', 'contested')
)
SELECT (SELECT count(*) FROM live)                                          AS statements,
       (SELECT count(*) FROM live l WHERE NOT EXISTS (
            SELECT 1 FROM observation_embeddings v
            WHERE v.profile_id = %(profile_id)s AND v.generation = %(generation)s
              AND v.observation_id = l.id))                                 AS missing,
       count(*)                                                             AS vectors,
       count(*) FILTER (WHERE vector_dims(v.embedding) <> %(dim)s)          AS wrong_dimension,
       count(*) FILTER (WHERE abs(l2_norm(v.embedding) - 1) > 0.01)         AS not_normalized
FROM observation_embeddings v
WHERE v.profile_id = %(profile_id)s AND v.generation = %(generation)s
