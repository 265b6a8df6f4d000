-- What a search cannot see yet: of the memory's newest %(window)s episodes (by id, newest first:
-- the ones ingest stored last; the window stays an index-only scan), the current ones
-- (superseded revisions are out of the index on purpose, migration 0031) that no chunk holds,
-- each with whether its title or the first %(chars)s characters of its body hold a word of the
-- query (any of its lexemes, quoted so nothing in them is syntax) and is within the policy's
-- kinds and time window, and the start of its body for a snippet. One statement after the
-- channels; a fully indexed memory costs the window's primary-key probes into chunks.
WITH newest AS (
    SELECT id FROM episodes WHERE memory = %(memory)s ORDER BY id DESC LIMIT %(window)s
),
words AS (
    SELECT coalesce(
        string_agg('''' || replace(replace(l, '\', '\\'), '''', '''''') || '''', ' | '), ''
    )::tsquery AS q
    FROM unnest(tsvector_to_array(to_tsvector('english', %(text)s))) AS l
)
SELECT e.id, e.title, e.kind, e.occurred_at,
       (%(kinds)s::text[] IS NULL OR e.kind = ANY(%(kinds)s::text[]))
       AND (%(since)s::timestamptz IS NULL OR e.occurred_at >= %(since)s::timestamptz)
       AND episode_in_force(e.occurred_at, e.current_from, e.superseded_at, %(until)s::timestamptz)
       AND to_tsvector('english', e.title || ' ' || left(e.body, %(chars)s)) @@ words.q AS matches,
       left(e.body, %(snippet)s) AS head
FROM newest n
JOIN episodes e ON e.id = n.id
CROSS JOIN words
WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.episode_id = e.id)
  AND e.superseded_at IS NULL
ORDER BY e.id DESC
