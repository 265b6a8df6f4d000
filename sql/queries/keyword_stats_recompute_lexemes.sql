-- Recount the document frequencies of the given memories from their chunks: changed rows are
-- updated, lexemes no chunk holds any more are deleted (disjoint from the upserted rows).
WITH fresh AS (
    SELECT c.memory, u.lexeme, count(*)::int AS df
    FROM chunks c, unnest(tsvector_to_array(c.tsv)) AS u(lexeme)
    WHERE c.memory = ANY(%(memories)s::text[])
    GROUP BY c.memory, u.lexeme
),
gone AS (
    DELETE FROM keyword_stats s
    WHERE s.memory = ANY(%(memories)s::text[])
      AND NOT EXISTS (SELECT 1 FROM fresh f WHERE f.memory = s.memory AND f.lexeme = s.lexeme)
)
INSERT INTO keyword_stats AS s (memory, lexeme, df)
SELECT memory, lexeme, df FROM fresh ORDER BY memory, lexeme
ON CONFLICT (memory, lexeme) DO UPDATE SET df = EXCLUDED.df WHERE s.df <> EXCLUDED.df
