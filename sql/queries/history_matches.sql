-- Search with history (migration 0031): the memory's superseded revisions whose title or body
-- (its first 200,000 characters, the expression of the partial GIN index
-- episodes_superseded_text_idx, which this must repeat exactly) holds a word of the query (any
-- of its lexemes, quoted so nothing in them is syntax), within the policy's kinds and time
-- window, best ts_rank first, then the most recently superseded. Superseded revisions have no
-- chunks (they left the index when superseded), so this is the only way a search meets them.
SELECT e.id, e.title, e.kind, e.occurred_at, e.superseded_at, e.superseded_by,
       ts_rank(to_tsvector('english', e.title || ' ' || left(e.body, 200000)), w.q) AS rank,
       left(e.body, %(chars)s) AS head
FROM episodes e,
     (SELECT coalesce(
          string_agg('''' || replace(replace(l, '\', '\\'), '''', '''''') || '''', ' | '), ''
      )::tsquery AS q
      FROM unnest(tsvector_to_array(to_tsvector('english', %(text)s))) AS l) w
WHERE e.superseded_at IS NOT NULL
  AND e.memory = %(memory)s
  AND to_tsvector('english', e.title || ' ' || left(e.body, 200000)) @@ w.q
  AND (%(kinds)s::text[] IS NULL OR e.kind = ANY(%(kinds)s::text[]))
  AND (%(since)s::timestamptz IS NULL OR e.occurred_at >= %(since)s::timestamptz)
ORDER BY rank DESC, e.superseded_at DESC, e.id DESC
LIMIT %(limit)s
