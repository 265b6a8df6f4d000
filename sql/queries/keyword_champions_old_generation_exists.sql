-- Whether any champion rows of a generation other than the current one are left to drop.
SELECT EXISTS (SELECT 1
FROM keyword_champions k
JOIN keyword_champion_state s
USING (memory)
WHERE k.memory = %s AND k.generation <> s.generation)
