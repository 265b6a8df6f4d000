-- The graph channel's rule in one round trip: for each of the given entities of one memory, how
-- many episodes mention it (the rows the triggers on entity_mentions keep, migration 0022), and
-- beside each, how many of the memory's episodes have chunks (keyword_memory_stats, migration
-- 0028): the episodes a name is mentioned in are indexed ones (linking follows indexing), so this
-- is the share's denominator, kept as chunks are written and deleted instead of counted.
SELECT d.entity_id, sum(d.mentions)::bigint,
       coalesce((SELECT s.episodes FROM keyword_memory_stats s WHERE s.memory = %(memory)s), 0)
FROM entity_mention_deltas d
JOIN entities e ON e.id = d.entity_id
WHERE e.memory = %(memory)s AND d.entity_id = ANY(%(entity_ids)s::bigint[])
GROUP BY d.entity_id
