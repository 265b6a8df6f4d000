-- The memories whose champion lists (migration 0025) a refresh rebuilds (large: more than
-- %(min_df)s chunk rows) or drops (small, or without chunks any more, but still with lists).
-- With %(stale_change)s set, only the large ones whose lists are missing or were built from a
-- chunk count that differs from today's by more than that share (keyword_store.STALE_CHANGE).
SELECT m.memory, true AS large
FROM keyword_memory_stats m
LEFT JOIN keyword_champion_state s ON s.memory = m.memory
WHERE m.chunks > %(min_df)s
  AND (%(stale_change)s::float8 IS NULL OR s.memory IS NULL OR s.chunks IS NULL
       OR abs(m.chunks - s.chunks) > %(stale_change)s::float8 * s.chunks)
UNION
SELECT s.memory, false
FROM keyword_champion_state s
WHERE NOT EXISTS (SELECT 1 FROM keyword_memory_stats m WHERE m.memory = s.memory AND m.chunks > %(min_df)s)
ORDER BY 1
