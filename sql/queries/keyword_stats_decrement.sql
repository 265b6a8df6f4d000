-- Lower the document frequency of the lexemes that remain.
UPDATE keyword_stats s
SET df = s.df - d.n
FROM unnest(%(words)s::text[], %(counts)s::int[]) AS d(w, n)
WHERE s.memory = %(memory)s AND s.lexeme = d.w
