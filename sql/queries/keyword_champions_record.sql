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
),
-- The weights are computed once per chunk row first (MATERIALIZED): joined to the lists in one
-- query, the planner drove the lists' rows through the chunks and unnested every chunk's vector
-- once per list (12.7 s for 3,000 episodes against 172 lists; benchmarks/README.md).
weights AS MATERIALIZED (
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
    WHERE c.episode_id = ANY(%(episode_ids)s::bigint[])
)
INSERT INTO keyword_champions (memory, generation, lexeme, weight, episode_id, ordinal)
SELECT w.memory, w.generation, w.lexeme, w.weight, w.episode_id, w.ordinal
FROM weights w
JOIN keyword_champion_lists l ON l.memory = w.memory AND l.generation = w.generation AND l.lexeme = w.lexeme
WHERE w.weight > l.floor
ORDER BY 1, 3, 5, 6
