-- The memories whose champion lists (migration 0025) the nightly refresh rebuilds (large: more
-- than %(min_df)s chunk rows) or drops (small, or without chunks any more, but still with lists).
SELECT m.memory, true AS large
FROM keyword_memory_stats m
WHERE m.chunks > %(min_df)s
UNION
SELECT s.memory, false
FROM keyword_champion_state s
WHERE NOT EXISTS (SELECT 1 FROM keyword_memory_stats m WHERE m.memory = s.memory AND m.chunks > %(min_df)s)
ORDER BY 1
