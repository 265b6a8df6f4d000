-- Episodes an index run committed (they have chunks) whose entity mentions were never linked
-- (no name candidates: linking writes those and the links in one transaction), e.g. because the
-- run was interrupted or failed before its linking worker reached them. `memory-pipeline index`
-- links these first (linking.EntityLinker).
SELECT e.id
FROM episodes e
WHERE EXISTS (SELECT 1 FROM chunks c WHERE c.episode_id = e.id)
  AND NOT EXISTS (SELECT 1 FROM episode_names n WHERE n.episode_id = e.id)
ORDER BY e.id
