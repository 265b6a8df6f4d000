-- The lists of the generations keyword_champions_drop_old.sql emptied (migration 0027): only
-- those without rows left, so the cascade to keyword_champions has nothing to wait for.
DELETE FROM keyword_champion_lists l
USING keyword_champion_state s
WHERE l.memory = %(memory)s AND s.memory = l.memory AND l.generation <> s.generation
  AND l.generation <> coalesce((SELECT generation FROM keyword_champion_builds WHERE memory = %(memory)s), -1)
  AND NOT EXISTS (SELECT 1 FROM keyword_champions k
                  WHERE k.memory = l.memory AND k.generation = l.generation AND k.lexeme = l.lexeme)
