-- Everything a search result shows, for the chosen chunk ids of one memory; the texts only when
-- %(texts)s (a text not asked for is never read: the CASE never touches it).
SELECT DISTINCT ON (c.chunk_id)
       c.chunk_id, e.id, e.title, e.kind, e.occurred_at, e.salience,
       c.start_char, c.end_char, CASE WHEN %(texts)s::boolean THEN c.text END, c.anchor
FROM chunks c
JOIN episodes e ON e.id = c.episode_id
WHERE c.memory = %(memory)s AND c.chunk_id = ANY(%(chunk_ids)s::text[])
ORDER BY c.chunk_id, c.ordinal
