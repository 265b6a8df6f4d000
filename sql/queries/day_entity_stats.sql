-- One ingest day's entity mentions (the entity_mentions partition and its check): links to the
-- day's episodes, and the day's current episodes whose proper names were not extracted yet
-- (a superseded revision's are deleted with its chunks, migration 0031).
SELECT (SELECT count(*) FROM entity_mentions m JOIN episodes e ON e.id = m.episode_id
        WHERE e.ingest_day = %(day)s)                                       AS mentions,
       (SELECT count(*) FROM episodes e WHERE e.ingest_day = %(day)s AND e.superseded_at IS NULL
          AND NOT EXISTS (SELECT 1 FROM episode_names n WHERE n.episode_id = e.id)) AS episodes_without_names
