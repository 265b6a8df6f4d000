-- Lock a memory's keyword statistics rows of these lexemes, in a fixed order.
SELECT 1
FROM keyword_stats
WHERE memory = %(memory)s AND lexeme = ANY(%(words)s)
ORDER BY lexeme FOR UPDATE
