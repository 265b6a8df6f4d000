-- A page of episodes to link (entities_store.link_episodes): the text names are extracted from
-- (body) and matched in (title, body), and whether names were extracted before (bodies never
-- change, so those are kept). FOR KEY SHARE holds each episode until the page's names and links
-- are committed: a forget waits instead of deleting it under the inserts (whose foreign keys
-- would then fail), while an index pass's FOR NO KEY UPDATE of the same episode does not wait.
SELECT e.id, e.memory, e.title, e.body,
       EXISTS (SELECT 1 FROM episode_names n WHERE n.episode_id = e.id) AS named
FROM episodes e
WHERE e.id = ANY(%(episode_ids)s)
ORDER BY e.id
FOR KEY SHARE OF e
