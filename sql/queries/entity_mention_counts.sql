-- How many episodes mention each of the given entities of one memory: the sum of the rows the
-- triggers on entity_mentions keep per entity (migration 0022), not a count of the mentions.
SELECT d.entity_id, sum(d.mentions)::bigint
FROM entity_mention_deltas d
JOIN entities e ON e.id = d.entity_id
WHERE e.memory = %(memory)s AND d.entity_id = ANY(%(entity_ids)s::bigint[])
GROUP BY d.entity_id
