-- Graph channel: the most recent chunks of the episodes that mention any of the entities.
-- Every chunked episode has at least one chunk, so the newest `limit` chunks lie within the
-- newest `limit` mentioning episodes that have chunks (episodes still waiting for their vectors
-- have none yet): pick those first instead of joining every mention's chunks.
WITH recent AS (
    SELECT e.id, e.occurred_at
    FROM entity_mentions m
    JOIN episodes e ON e.id = m.episode_id
    WHERE m.entity_id = ANY(%(entity_ids)s::bigint[])
      AND m.memory = %(memory)s AND e.memory = %(memory)s
      AND EXISTS (SELECT 1 FROM chunks c WHERE c.episode_id = e.id)  -- not yet chunked: skip
      AND (%(kinds)s::text[] IS NULL OR e.kind = ANY(%(kinds)s::text[]))
      AND (%(since)s::timestamptz IS NULL OR e.occurred_at >= %(since)s::timestamptz)
      AND episode_in_force(e.occurred_at, e.current_from, e.superseded_at, %(until)s::timestamptz)
    GROUP BY e.id, e.occurred_at
    ORDER BY e.occurred_at DESC, e.id DESC
    LIMIT %(limit)s
)
SELECT chunk_id, 1.0 AS score FROM (
    SELECT DISTINCT ON (c.chunk_id) c.chunk_id, r.occurred_at, r.id, c.ordinal
    FROM recent r JOIN chunks c ON c.episode_id = r.id
    ORDER BY c.chunk_id, c.ordinal
) hits
ORDER BY occurred_at DESC, id DESC, ordinal, chunk_id
LIMIT %(limit)s
