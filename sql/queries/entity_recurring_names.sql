-- Name candidates of the memory found in at least %(min_episodes)s episodes (each episode's names
-- array holds a name once; DISTINCT keeps the count right whatever wrote the rows).
SELECT name
FROM episode_names n, unnest(n.names) AS name
WHERE n.memory = %(memory)s
GROUP BY name
HAVING count(DISTINCT n.episode_id) >= %(min_episodes)s
