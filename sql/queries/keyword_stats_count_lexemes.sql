-- A memory's document frequency per lexeme, counted from its chunks.
SELECT u.lexeme, count(*) FROM chunks c, unnest(tsvector_to_array(c.tsv)) AS u(lexeme)
WHERE c.memory = %s GROUP BY u.lexeme
