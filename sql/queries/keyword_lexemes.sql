-- The query's lexemes (the configuration of chunks.tsv) with their document frequency in the
-- memory, rarest first, and the memory's totals (NULL: the memory has no statistics row).
-- df NULL: no chunk of the memory holds the lexeme.
SELECT u.lexeme, s.df, m.chunks, m.total_lexemes
FROM unnest(to_tsvector('english', %(text)s)) AS u
LEFT JOIN keyword_memory_stats m ON m.memory = %(memory)s
LEFT JOIN keyword_stats s ON s.memory = %(memory)s AND s.lexeme = u.lexeme
ORDER BY coalesce(s.df, 0), u.lexeme
