-- The swap of a champion-list rebuild (migration 0027), under the memory's keyword_memory_stats
-- row lock, after keyword_champions_swap_lock.sql: the loaded generation becomes the memory's
-- current one, with the avgdl, k1, b, lowest floor and chunk count its snapshot read, and the
-- rows it holds for the episodes writers logged meanwhile go (keyword_champions_record.sql weighs
-- those episodes into it next, through its floors). Returns the generation made current (no row:
-- nothing was loaded). Searches read either generation whole: one flips in this commit.
WITH build AS (
    SELECT memory, generation, avgdl, k1, b, min_floor, chunks
    FROM keyword_champion_builds
    WHERE memory = %(memory)s AND avgdl IS NOT NULL AND generation IS NOT NULL
),
logged AS (
    DELETE FROM keyword_champions k
    USING build, keyword_champion_backlog g
    WHERE k.memory = build.memory AND k.generation = build.generation
      AND g.memory = build.memory AND g.episode_id = k.episode_id
)
INSERT INTO keyword_champion_state AS s (memory, avgdl, k1, b, min_floor, chunks, generation, refreshed_at)
SELECT memory, avgdl, k1, b, min_floor, chunks, generation, now() FROM build
ON CONFLICT (memory) DO UPDATE
SET avgdl = excluded.avgdl, k1 = excluded.k1, b = excluded.b, min_floor = excluded.min_floor,
    chunks = excluded.chunks, generation = excluded.generation, refreshed_at = excluded.refreshed_at
RETURNING s.generation
