-- The vectors, of every profile and generation, of the given chunk ids of one memory that no
-- remaining chunk row uses (vectors are keyed by content: an identical chunk text in another
-- episode of the memory keeps its vector).
DELETE FROM embeddings v
WHERE v.memory = %(memory)s
  AND v.chunk_id = ANY(%(chunk_ids)s::text[])
  AND NOT EXISTS (SELECT 1 FROM chunks c WHERE c.memory = v.memory AND c.chunk_id = v.chunk_id)
