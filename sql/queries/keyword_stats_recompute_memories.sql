-- Recount the totals of the given memories from their chunks: rows that changed are updated,
-- memories left without chunks lose their row (the DELETE and the upsert touch disjoint rows).
WITH fresh AS (
    SELECT memory, count(*)::int AS chunks, sum(length(tsv))::bigint AS total_lexemes,
           count(DISTINCT episode_id)::int AS episodes
    FROM chunks
    WHERE memory = ANY(%(memories)s::text[])
    GROUP BY memory
),
gone AS (
    DELETE FROM keyword_memory_stats m
    WHERE m.memory = ANY(%(memories)s::text[]) AND NOT EXISTS (SELECT 1 FROM fresh f WHERE f.memory = m.memory)
)
INSERT INTO keyword_memory_stats AS m (memory, chunks, total_lexemes, episodes)
SELECT memory, chunks, total_lexemes, episodes FROM fresh ORDER BY memory
ON CONFLICT (memory) DO UPDATE
    SET chunks = EXCLUDED.chunks, total_lexemes = EXCLUDED.total_lexemes, episodes = EXCLUDED.episodes
    WHERE (m.chunks, m.total_lexemes, m.episodes) IS DISTINCT FROM (EXCLUDED.chunks, EXCLUDED.total_lexemes, EXCLUDED.episodes)
