-- Load a champion-list rebuild's staged lists (keyword_champions_stage.sql) as its new generation
-- (migration 0027) into keyword_champion_lists and keyword_champions, beside the memory's writers
-- and searches, which read the current generation only. The rows of chunks deleted since the
-- snapshot are left out; so are the chunks of episodes writers logged in the backlog meanwhile:
-- the swap (keyword_champions_flip.sql, then keyword_champions_record.sql) weighs those again,
-- the snapshot may not hold them or hold an older version. Run after
-- keyword_champions_load_lock.sql in the same transaction. A memory's first build also writes
-- its state row, at generation 0 (no lists: nothing reads or grows the new ones before the swap).
WITH build AS (
    SELECT memory, generation, avgdl, k1, b, min_floor
    FROM keyword_champion_builds
    WHERE memory = %(memory)s AND avgdl IS NOT NULL AND generation IS NOT NULL
),
state AS (
    INSERT INTO keyword_champion_state (memory, avgdl, k1, b, min_floor, generation)
    SELECT memory, avgdl, k1, b, min_floor, 0 FROM build
    ON CONFLICT (memory) DO NOTHING
),
lists AS (
    INSERT INTO keyword_champion_lists (memory, generation, lexeme, floor)
    SELECT l.memory, build.generation, l.lexeme, l.floor
    FROM keyword_champion_staged_lists l JOIN build USING (memory)
)
INSERT INTO keyword_champions (memory, generation, lexeme, weight, episode_id, ordinal)
SELECT s.memory, build.generation, s.lexeme, s.weight, s.episode_id, s.ordinal
FROM build
JOIN keyword_champion_staged s USING (memory)
JOIN chunks c ON c.episode_id = s.episode_id AND c.ordinal = s.ordinal
WHERE NOT EXISTS (SELECT 1 FROM keyword_champion_backlog g WHERE g.memory = s.memory AND g.episode_id = s.episode_id)
ORDER BY s.lexeme COLLATE "C", s.weight DESC
