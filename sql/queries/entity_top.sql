-- The most mentioned entities of some memories (entities_store.top_entities): `memory-pipeline
-- entities` and the entity assets' metadata.
SELECT en.memory, en.name, en.source, array_to_string(en.aliases, ', '), count(m.episode_id) AS n
FROM entities en
LEFT JOIN entity_mentions m ON m.entity_id = en.id
WHERE en.memory = ANY(%(memories)s)
GROUP BY en.id
ORDER BY n DESC, en.name
LIMIT %(limit)s
