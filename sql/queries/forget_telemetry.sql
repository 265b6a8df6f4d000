-- The search telemetry rows of one memory that name any of the given chunks, as a candidate of
-- any channel or as a result: what a forgotten episode leaves behind in telemetry.
DELETE FROM search_telemetry t
WHERE t.memory = %(memory)s
  AND (
        EXISTS (SELECT 1
                FROM jsonb_each(t.candidates) AS ch(channel, hits), jsonb_array_elements(ch.hits) AS h(hit)
                WHERE jsonb_typeof(ch.hits) = 'array' AND h.hit ->> 'chunk_id' = ANY(%(chunk_ids)s::text[]))
     OR EXISTS (SELECT 1 FROM jsonb_array_elements(t.results) AS r(hit)
                WHERE r.hit ->> 'chunk_id' = ANY(%(chunk_ids)s::text[]))
  )
