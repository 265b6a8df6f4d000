-- The current episodes ingested on a day, with their memory.
SELECT id, memory FROM episodes WHERE ingest_day = %s AND superseded_at IS NULL ORDER BY id
