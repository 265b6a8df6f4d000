-- Which of the given (memory, chunk_id) keys already have a vector in the generation: one probe
-- of the primary key per key. The LIMIT inside the LATERAL keeps the planner from turning this
-- into a join: on an embeddings table not analyzed since a backfill began (every first index),
-- the join was estimated at a couple of rows per generation and planned as a hash over ALL of
-- the generation's vectors, rebuilt at every call (124 ms per 500 keys at 100,000 vectors,
-- twice per commit: `git show 93c90e6:benchmarks/README.md`, "existing_vectors"); the probes cost the same at any
-- size and with any statistics.
SELECT k.memory, k.chunk_id
FROM unnest(%(memories)s::text[], %(chunk_ids)s::text[]) AS k(memory, chunk_id)
CROSS JOIN LATERAL (
    SELECT 1
    FROM embeddings v
    WHERE v.profile_id = %(profile_id)s AND v.generation = %(generation)s
      AND v.memory = k.memory AND v.chunk_id = k.chunk_id
    LIMIT 1
) AS found
