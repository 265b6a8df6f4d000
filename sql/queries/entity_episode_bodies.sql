-- Bodies of the given episodes that have no stored name candidates yet (bodies never change, so
-- names extracted once stay right).
SELECT e.id, e.memory, e.body
FROM episodes e
WHERE e.id = ANY(%(episode_ids)s)
  AND NOT EXISTS (SELECT 1 FROM episode_names n WHERE n.episode_id = e.id)
