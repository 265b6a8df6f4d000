-- Links of one page of episodes, in one statement; existing links are kept (the statement's row
-- count is the number of new links).
INSERT INTO entity_mentions (entity_id, episode_id, memory)
SELECT entity_id, episode_id, %(memory)s
FROM unnest(%(entity_ids)s::bigint[], %(episode_ids)s::bigint[]) AS l (entity_id, episode_id)
ON CONFLICT DO NOTHING
