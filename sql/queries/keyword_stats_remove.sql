-- What the chunk rows of the given episodes (about to be deleted in the same transaction: a
-- superseded revision leaving the index, migration 0031) add to the keyword statistics, per
-- memory and lexeme, counted as keyword_stats_record.sql counts them (ts_stat: ndoc = chunk rows
-- holding the word; a memory's summed length is the sum of those). The store subtracts it,
-- instead of recounting the whole memory as keyword_stats_recompute_*.sql do.
WITH batch AS (
    SELECT c.memory, count(*) AS chunks, count(DISTINCT c.episode_id) AS episodes
    FROM chunks c
    WHERE c.episode_id = ANY(%(episode_ids)s::bigint[])
    GROUP BY c.memory
)
SELECT batch.memory, batch.chunks, batch.episodes, t.word, t.ndoc
FROM batch,
     LATERAL ts_stat(format('SELECT tsv FROM chunks WHERE episode_id = ANY(%%L::bigint[]) AND memory = %%L',
                            %(episode_ids)s::bigint[], batch.memory)) AS t
ORDER BY batch.memory, t.word
