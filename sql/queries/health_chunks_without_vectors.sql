-- Chunks with no vector in a generation.
SELECT count(DISTINCT (c.memory, c.chunk_id)) FROM chunks c
WHERE NOT EXISTS (SELECT 1 FROM embeddings v WHERE v.profile_id = %s AND v.generation = %s
                  AND v.memory = c.memory AND v.chunk_id = c.chunk_id)
