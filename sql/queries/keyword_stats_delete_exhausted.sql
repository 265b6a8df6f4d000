-- Delete the lexemes whose last documents are removed.
DELETE
FROM keyword_stats s
USING unnest(%(words)s::text[], %(counts)s::int[]) AS d(w, n)
WHERE s.memory = %(memory)s AND s.lexeme = d.w AND s.df <= d.n
