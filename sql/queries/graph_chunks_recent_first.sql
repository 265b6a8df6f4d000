-- Graph channel for entities mentioned in many episodes: walk the memory's episodes newest
-- first (index on memory, occurred_at) and keep those that mention an entity; the first
-- `limit` found hold the newest `limit` chunks. Same result as graph_chunks.sql.
WITH recent AS (
    SELECT e.id, e.occurred_at
    FROM episodes e
    WHERE e.memory = %(memory)s
      AND EXISTS (SELECT 1 FROM entity_mentions m
                  WHERE m.episode_id = e.id AND m.entity_id = ANY(%(entity_ids)s::bigint[]))
      AND EXISTS (SELECT 1 FROM chunks c WHERE c.episode_id = e.id)  -- not yet chunked: skip
      AND (%(kinds)s::text[] IS NULL OR e.kind = ANY(%(kinds)s::text[]))
      AND (%(since)s::timestamptz IS NULL OR e.occurred_at >= %(since)s::timestamptz)
      AND episode_in_force(e.occurred_at, e.current_from, e.superseded_at, %(until)s::timestamptz)
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
