-- The nearest chunks ({ranked}: vector_nearest or vector_nearest_windows, composed with
-- psycopg.sql), in the order it returns them, each with its search-result row as
-- search_results.sql reads it (texts unread) when it is among the first %(rows)s by distance
-- (rank: chunks tied at the edge all get theirs), so the vector channel needs no second round
-- trip for its candidates' rows. A chunk gone since its vector was written has no row (NULLs).
WITH ranked (memory, chunk_id, distance, win) AS MATERIALIZED ({ranked}),
numbered AS (SELECT row_number() OVER () AS seq, ranked.* FROM ranked),
placed AS (SELECT numbered.*, rank() OVER (ORDER BY distance) AS place FROM numbered)
SELECT p.memory, p.chunk_id, p.distance, p.win,
       r.id, r.title, r.kind, r.occurred_at, r.salience, r.start_char, r.end_char, r.anchor
FROM placed p
LEFT JOIN LATERAL (
    SELECT e.id, e.title, e.kind, e.occurred_at, e.salience, c.start_char, c.end_char, c.anchor
    FROM chunks c
    JOIN episodes e ON e.id = c.episode_id
    WHERE p.place <= %(rows)s  -- here, not in ON: rows past it are never looked up
      AND c.memory = p.memory AND c.chunk_id = p.chunk_id
    ORDER BY c.ordinal
    LIMIT 1
) r ON true
ORDER BY p.seq
