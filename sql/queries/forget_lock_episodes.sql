-- The episodes to forget (all of the memory's when whole; with an episode, every revision of its
-- source, migration 0031), locked: an index pass writing one of
-- them finishes first, one that starts later finds it gone.
SELECT id, ingest_day
FROM episodes
WHERE memory = %(memory)s
  AND (%(whole)s OR id = ANY(%(ids)s::bigint[])
       OR source_key IN (SELECT source_key FROM episodes
                         WHERE memory = %(memory)s AND id = ANY(%(ids)s::bigint[])))
ORDER BY id
FOR UPDATE
