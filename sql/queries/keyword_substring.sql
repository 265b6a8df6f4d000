-- Keyword fallback when full text finds nothing: the query as a literal substring
-- (identifiers, codes, words the parser drops). strpos, not LIKE: the query is data, so
-- percent signs, underscores and backslashes in it are matched literally. Most recent first.
SELECT chunk_id, 1.0 AS score FROM (
    SELECT DISTINCT ON (c.chunk_id) c.chunk_id, e.occurred_at
    FROM chunks c
    JOIN episodes e ON e.id = c.episode_id
    WHERE c.memory = %(memory)s
      AND strpos(lower(c.text), lower(%(needle)s)) > 0
      AND (%(kinds)s::text[] IS NULL OR e.kind = ANY(%(kinds)s::text[]))
      AND (%(since)s::timestamptz IS NULL OR e.occurred_at >= %(since)s::timestamptz)
      AND episode_in_force(e.occurred_at, e.current_from, e.superseded_at, %(until)s::timestamptz)
    ORDER BY c.chunk_id
) hits
ORDER BY occurred_at DESC, chunk_id
LIMIT %(limit)s
