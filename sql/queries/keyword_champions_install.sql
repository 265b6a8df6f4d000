-- The swap of a champion-list rebuild (migration 0026), after keyword_champions_clear.sql, under
-- the memory's keyword_memory_stats row lock: the staged state and lists become the memory's,
-- and of the staged rows those whose chunk row still exists, except the chunks of episodes a
-- writer logged in the backlog meanwhile (keyword_champions_record.sql weighs those again next,
-- through the new floors: the snapshot may not hold them, or hold an older version).
WITH state AS (
    INSERT INTO keyword_champion_state (memory, avgdl, k1, b, min_floor, chunks)
    SELECT memory, avgdl, k1, b, min_floor, chunks
    FROM keyword_champion_builds
    WHERE memory = %(memory)s AND avgdl IS NOT NULL
    RETURNING memory
),
lists AS (
    INSERT INTO keyword_champion_lists (memory, lexeme, floor)
    SELECT l.memory, l.lexeme, l.floor
    FROM keyword_champion_staged_lists l JOIN state USING (memory)
    RETURNING lexeme
)
INSERT INTO keyword_champions (memory, lexeme, weight, episode_id, ordinal)
SELECT s.memory, s.lexeme, s.weight, s.episode_id, s.ordinal
FROM state
JOIN keyword_champion_staged s USING (memory)
JOIN chunks c ON c.episode_id = s.episode_id AND c.ordinal = s.ordinal
WHERE NOT EXISTS (SELECT 1 FROM keyword_champion_backlog g WHERE g.memory = s.memory AND g.episode_id = s.episode_id)
ORDER BY s.lexeme, s.weight DESC
