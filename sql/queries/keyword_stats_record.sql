-- Add the chunk rows of the given episodes, written earlier in the same transaction, to the
-- keyword statistics, in one statement: the memories' totals first (the CTE is read completely
-- before the sort below returns a row), then each lexeme's document frequency (chunk rows holding
-- it), both in key order, so concurrent writers lock rows in one order and cannot deadlock.
-- ts_stat counts the lexemes of the chunks in C (ndoc = rows holding the word), cheaper than
-- unnesting and hash-aggregating them here; its query text is built by format(), so
-- the ids and the memory name are quoted literals (format's L conversion).
WITH memories AS (
    INSERT INTO keyword_memory_stats AS m (memory, chunks, total_lexemes)
    SELECT c.memory, count(*), sum(length(c.tsv))
    FROM chunks c
    WHERE c.episode_id = ANY(%(episode_ids)s::bigint[])
    GROUP BY c.memory
    ORDER BY c.memory
    ON CONFLICT (memory) DO UPDATE
        SET chunks = m.chunks + EXCLUDED.chunks, total_lexemes = m.total_lexemes + EXCLUDED.total_lexemes
    RETURNING m.memory
)
INSERT INTO keyword_stats AS s (memory, lexeme, df)
SELECT memories.memory, t.word, t.ndoc
FROM memories,
     LATERAL ts_stat(format('SELECT tsv FROM chunks WHERE episode_id = ANY(%%L::bigint[]) AND memory = %%L',
                            %(episode_ids)s::bigint[], memories.memory)) AS t
ORDER BY 1, 2
ON CONFLICT (memory, lexeme) DO UPDATE SET df = s.df + EXCLUDED.df
