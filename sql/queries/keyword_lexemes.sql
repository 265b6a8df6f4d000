-- The query's lexemes (the configuration of chunks.tsv) with their document frequency in the
-- memory, rarest first, and the memory's totals (NULL: the memory has no statistics row).
-- df NULL: no chunk of the memory holds the lexeme. listed: the lexeme has a champion list
-- (migration 0025) in the memory's current generation (migration 0027).
SELECT u.lexeme, s.df, m.chunks, m.total_lexemes, l.lexeme IS NOT NULL AS listed
FROM unnest(to_tsvector('english', %(text)s)) AS u
LEFT JOIN keyword_memory_stats m ON m.memory = %(memory)s
LEFT JOIN keyword_stats s ON s.memory = %(memory)s AND s.lexeme = u.lexeme
LEFT JOIN keyword_champion_state g ON g.memory = %(memory)s
LEFT JOIN keyword_champion_lists l ON l.memory = %(memory)s AND l.generation = g.generation AND l.lexeme = u.lexeme
ORDER BY coalesce(s.df, 0), u.lexeme
