-- A generation's vectors (chunk vectors and window vectors): how many, of a wrong dimension, not unit length.
SELECT count(*) FILTER (WHERE x.is_chunk),
       count(*) FILTER (WHERE NOT x.is_chunk),
       count(*) FILTER (WHERE vector_dims(x.vector) <> %s),
       count(*) FILTER (WHERE abs(l2_norm(x.vector) - 1) > 0.01)
FROM embeddings v
CROSS JOIN LATERAL (SELECT v.embedding, true
                    UNION ALL SELECT w, false FROM unnest(v.windows) AS w) AS x(vector, is_chunk)
WHERE v.profile_id = %s AND v.generation = %s
