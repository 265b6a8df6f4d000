-- One ingest day's episodes by memory and kind.
SELECT memory, kind, count(*) AS episodes, sum(length(body)) AS characters
FROM episodes
WHERE ingest_day = %(day)s
GROUP BY memory, kind
ORDER BY memory, kind
