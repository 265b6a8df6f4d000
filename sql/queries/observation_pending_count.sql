-- How many statements still lack a vector for the (profile, generation) being written.
SELECT count(*) FROM observations o
WHERE NOT EXISTS (
    SELECT 1 FROM observation_embeddings v
    WHERE v.profile_id = %(profile_id)s AND v.generation = %(generation)s AND v.observation_id = o.id
)
