-- The texts link_mentions matches entity names in, for a page of episode ids.
SELECT id, title, body FROM episodes WHERE id = ANY(%(episode_ids)s)
