-- Date channel: the chunks of the episodes that occurred within any of the periods a query names
-- ([starts[i], ends[i]) pairs, domain.dates), newest episode first, each in text order. Every
-- one scores 1.0: a chunk of a named day is as much "of that day" as any other
-- (fusion.FLAT_CHANNELS). episodes_memory_occurred_idx finds the episodes.
SELECT c.chunk_id, 1.0 AS score
FROM episodes e
JOIN chunks c ON c.episode_id = e.id
WHERE e.memory = %(memory)s
  AND EXISTS (SELECT 1 FROM unnest(%(starts)s::timestamptz[], %(ends)s::timestamptz[]) AS p(s, t)
              WHERE e.occurred_at >= p.s AND e.occurred_at < p.t)
  AND (%(kinds)s::text[] IS NULL OR e.kind = ANY(%(kinds)s::text[]))
  AND (%(since)s::timestamptz IS NULL OR e.occurred_at >= %(since)s::timestamptz)
  AND episode_in_force(e.occurred_at, e.current_from, e.superseded_at, %(until)s::timestamptz)
ORDER BY e.occurred_at DESC, e.id DESC, c.ordinal, c.chunk_id
LIMIT %(limit)s
