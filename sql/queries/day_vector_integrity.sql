-- One ingest day's vectors for one (profile, generation) (the embeddings partition and its
-- check): the day's distinct chunks, those without a vector, and among the vectors they have
-- (the chunk's and its paragraph windows'), wrong dimensions and non-unit lengths.
WITH day_chunks AS (
    SELECT DISTINCT c.memory, c.chunk_id
    FROM chunks c JOIN episodes e ON e.id = c.episode_id
    WHERE e.ingest_day = %(day)s
), vectors AS (
    SELECT x.vector, x.is_chunk
    FROM day_chunks d
    JOIN embeddings v ON v.profile_id = %(profile_id)s AND v.generation = %(generation)s
                     AND v.memory = d.memory AND v.chunk_id = d.chunk_id
    CROSS JOIN LATERAL (SELECT v.embedding, true
                        UNION ALL SELECT w, false FROM unnest(v.windows) AS w) AS x(vector, is_chunk)
)
SELECT (SELECT count(*) FROM day_chunks)                                    AS chunks,
       (SELECT count(*) FROM day_chunks d WHERE NOT EXISTS (
            SELECT 1 FROM embeddings v
            WHERE v.profile_id = %(profile_id)s AND v.generation = %(generation)s
              AND v.memory = d.memory AND v.chunk_id = d.chunk_id))        AS missing,
       count(*) FILTER (WHERE is_chunk)                                     AS vectors,
       count(*) FILTER (WHERE NOT is_chunk)                                 AS window_vectors,
       count(*) FILTER (WHERE vector_dims(vector) <> %(dim)s)               AS wrong_dimension,
       count(*) FILTER (WHERE abs(l2_norm(vector) - 1) > 0.01)              AS not_normalized
FROM vectors
