-- Add the chunk rows of the given episodes, written earlier in the same transaction, to the
-- champion lists (migration 0025) of their memories' current generation (migration 0027): every
-- (row, listed lexeme) whose term weight, with the avgdl, k1 and b of the lists' refresh, exceeds
-- the list's floor. Only memories with
-- lists are read past the state row, and only weights above the lowest floor reach the join to
-- the lists (about two thirds of the postings weigh less). Each row's weights are computed beside
-- its own vector (OFFSET 0 keeps the subquery whole), so that join carries no tsvector.
-- While a rebuild of a memory is registered (migration 0026), its episodes are also logged in
-- the backlog, for the rebuild's swap to weigh again through the new floors.
WITH logged AS (
    INSERT INTO keyword_champion_backlog (memory, episode_id)
    SELECT DISTINCT c.memory, c.episode_id
    FROM chunks c JOIN keyword_champion_builds b ON b.memory = c.memory
    WHERE c.episode_id = ANY(%(episode_ids)s::bigint[])
    ON CONFLICT DO NOTHING
)
INSERT INTO keyword_champions (memory, generation, lexeme, weight, episode_id, ordinal)
SELECT c.memory, s.generation, p.lexeme, p.weight, c.episode_id, c.ordinal
FROM chunks c
JOIN keyword_champion_state s ON s.memory = c.memory
JOIN LATERAL (
    SELECT u.lexeme,
           bm25_weight(1, 0, coalesce(array_length(u.positions, 1), 1)::float8, length(v.tsv)::float8,
                       s.avgdl, s.k1, s.b) AS weight
    FROM (SELECT (array[c.tsv])[1] AS tsv OFFSET 0) v, unnest(v.tsv) AS u
    OFFSET 0
) p ON p.weight > s.min_floor
JOIN keyword_champion_lists l ON l.memory = c.memory AND l.generation = s.generation AND l.lexeme = p.lexeme
WHERE c.episode_id = ANY(%(episode_ids)s::bigint[])
  AND p.weight > l.floor
ORDER BY 1, 3, 5, 6
