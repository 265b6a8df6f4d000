-- Search with history (migration 0031): the memory's superseded revisions whose title or body
-- (its first 200,000 characters: the expression of the partial GIN index
-- episodes_superseded_text_idx, repeated here exactly) holds the query's words (its lexemes,
-- quoted so nothing in them is syntax), within the policy's kinds and time window. Superseded
-- revisions have no chunks (they left the index when superseded): this is the only way a
-- search meets them.
-- Bounded, as the keyword channel is: at most %(cap)s revisions holding every word, then, only
-- when those are fewer than %(limit)s, at most %(cap)s holding any (which of an over-full tier
-- follows the table's physical order); those ranked by ts_rank, the first tier first, then the
-- most recently superseded. A common word held by most revisions then costs the cap, not the
-- history's size.
WITH words AS MATERIALIZED (
    SELECT coalesce(string_agg(quoted, ' & '), '')::tsquery AS every_word,
           coalesce(string_agg(quoted, ' | '), '')::tsquery AS any_word
    FROM (SELECT '''' || replace(replace(l, '\', '\\'), '''', '''''') || '''' AS quoted
          FROM unnest(tsvector_to_array(to_tsvector('english', %(text)s))) AS l) q
),
first AS MATERIALIZED (
    SELECT e.id, 1 AS tier
    FROM episodes e
    WHERE e.superseded_at IS NOT NULL
      AND to_tsvector('english', e.title || ' ' || left(e.body, 200000)) @@ (SELECT every_word FROM words)
      AND e.memory = %(memory)s
      AND (%(kinds)s::text[] IS NULL OR e.kind = ANY(%(kinds)s::text[]))
      AND (%(since)s::timestamptz IS NULL OR e.occurred_at >= %(since)s::timestamptz)
      AND episode_in_force(e.occurred_at, e.current_from, e.superseded_at, %(until)s::timestamptz)
    LIMIT %(cap)s
),
second AS MATERIALIZED (
    SELECT e.id, 2 AS tier
    FROM episodes e
    WHERE (SELECT count(*) FROM first) < %(limit)s
      AND e.superseded_at IS NOT NULL
      AND to_tsvector('english', e.title || ' ' || left(e.body, 200000)) @@ (SELECT any_word FROM words)
      AND e.memory = %(memory)s
      AND (%(kinds)s::text[] IS NULL OR e.kind = ANY(%(kinds)s::text[]))
      AND (%(since)s::timestamptz IS NULL OR e.occurred_at >= %(since)s::timestamptz)
      AND episode_in_force(e.occurred_at, e.current_from, e.superseded_at, %(until)s::timestamptz)
    LIMIT %(cap)s
),
found AS (
    SELECT id, min(tier) AS tier FROM (SELECT * FROM first UNION ALL SELECT * FROM second) t
    GROUP BY id
)
SELECT e.id, e.title, e.kind, e.occurred_at, e.superseded_at, e.superseded_by,
       ts_rank(to_tsvector('english', e.title || ' ' || left(e.body, 200000)),
               (SELECT any_word FROM words)) AS rank,
       left(e.body, %(chars)s) AS head
FROM found f
JOIN episodes e ON e.id = f.id
ORDER BY f.tier, rank DESC, e.superseded_at DESC, e.id DESC
LIMIT %(limit)s
