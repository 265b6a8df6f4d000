-- Add the chunk rows of the given episodes, written earlier in the same transaction, to the
-- keyword statistics (and the episodes to the memories' counts), in one statement. ts_stat counts the chunks' lexemes in C (ndoc = chunk
-- rows holding the word; its query text is built by format(), the ids and the memory name
-- quoted as literals), cheaper than unnesting and hash-aggregating them here; the memory's
-- summed document length is the sum of those counts (each chunk row contributes its number of
-- distinct lexemes, length(tsv)). Row locks in one order in every writer, so concurrent writers
-- cannot deadlock: the memories' totals first (the sort below cannot return a row before the
-- join under it has read every row the memories CTE inserted), then the lexemes in key order.
WITH batch AS (
    SELECT c.memory, count(*) AS chunks, count(DISTINCT c.episode_id) AS episodes
    FROM chunks c
    WHERE c.episode_id = ANY(%(episode_ids)s::bigint[])
    GROUP BY c.memory
),
stat AS MATERIALIZED (
    SELECT batch.memory, t.word, t.ndoc
    FROM batch,
         LATERAL ts_stat(format('SELECT tsv FROM chunks WHERE episode_id = ANY(%%L::bigint[]) AND memory = %%L',
                                %(episode_ids)s::bigint[], batch.memory)) AS t
),
memories AS (
    INSERT INTO keyword_memory_stats AS m (memory, chunks, total_lexemes, episodes)
    SELECT batch.memory, batch.chunks, coalesce((SELECT sum(stat.ndoc) FROM stat WHERE stat.memory = batch.memory), 0),
           batch.episodes
    FROM batch
    ORDER BY batch.memory
    ON CONFLICT (memory) DO UPDATE
        SET chunks = m.chunks + EXCLUDED.chunks, total_lexemes = m.total_lexemes + EXCLUDED.total_lexemes,
            episodes = m.episodes + EXCLUDED.episodes
    RETURNING m.memory
)
INSERT INTO keyword_stats AS s (memory, lexeme, df)
SELECT stat.memory, stat.word, stat.ndoc
FROM stat JOIN memories ON memories.memory = stat.memory
ORDER BY 1, 2
ON CONFLICT (memory, lexeme) DO UPDATE SET df = s.df + EXCLUDED.df
