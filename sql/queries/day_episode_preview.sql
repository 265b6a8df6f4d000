-- The newest episodes of an ingest day, for the day's preview.
SELECT id, memory, kind, title, occurred_at, length(body)
FROM episodes WHERE ingest_day = %s ORDER BY id DESC LIMIT %s
