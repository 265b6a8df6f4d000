-- How alike one chunk is to a few others of its memory, by their stored vectors in a profile's
-- generation: 1 - cosine distance of the halfvecs, one primary-key probe per chunk. What is
-- true now (search.in_time) reads it for the first results of a search, to tell which of them
-- tell one subject.
SELECT o.chunk_id, 1 - (a.embedding <=> o.embedding) AS cosine
FROM embeddings a
JOIN embeddings o
  ON o.profile_id = a.profile_id AND o.generation = a.generation AND o.memory = a.memory
 AND o.chunk_id = ANY(%(others)s::text[])
WHERE a.profile_id = %(profile_id)s AND a.generation = %(generation)s
  AND a.memory = %(memory)s AND a.chunk_id = %(chunk_id)s
