-- One ingest day's chunks (the chunks partition): rows, characters, and the day's current
-- episodes still without a chunk (its check; superseded revisions have none on purpose).
SELECT count(c.episode_id)                              AS chunks,
       coalesce(sum(length(c.text)), 0)                 AS characters,
       count(DISTINCT e.id) FILTER (WHERE c.episode_id IS NULL AND e.superseded_at IS NULL)
                                                        AS episodes_without_chunks,
       count(DISTINCT e.id)                             AS episodes
FROM episodes e
LEFT JOIN chunks c ON c.episode_id = e.id
WHERE e.ingest_day = %(day)s
