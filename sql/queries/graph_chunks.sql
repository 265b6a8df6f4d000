-- Graph channel: the most recent chunks of the episodes that mention any of the entities.
SELECT chunk_id, 1.0 AS score FROM (
    SELECT DISTINCT ON (c.chunk_id) c.chunk_id, e.occurred_at, c.ordinal
    FROM entity_mentions m
    JOIN episodes e ON e.id = m.episode_id
    JOIN chunks c ON c.episode_id = e.id
    WHERE m.entity_id = ANY(%(entity_ids)s::bigint[])
      AND m.memory = %(memory)s AND e.memory = %(memory)s
      AND (%(kinds)s::text[] IS NULL OR e.kind = ANY(%(kinds)s::text[]))
      AND (%(since)s::timestamptz IS NULL OR e.occurred_at >= %(since)s::timestamptz)
    ORDER BY c.chunk_id
) hits
ORDER BY occurred_at DESC, ordinal, chunk_id
LIMIT %(limit)s
