-- The first statement of a champion-list swap (migrations 0026, 0027) after the memory's
-- keyword_memory_stats row lock: the chunk rows of the episodes writers logged during the build,
-- which the swap weighs into the new generation (keyword_champions_record.sql), locked FOR KEY
-- SHARE now or not at all (NOWAIT). A deleter (forget, `backfill --rechunk`) deletes chunks, and
-- by cascade their list rows, before it waits for that stats row; were the swap to wait for those
-- rows while holding the stats row, the two would deadlock. So the swap fails fast instead, lets
-- the deleter finish, and tries again. Once these are held no deleter can start on them (it
-- waits for the swap), so the swap waits for nothing.
SELECT count(*)
FROM (SELECT 1
      FROM chunks c
      JOIN keyword_champion_backlog g ON g.memory = %(memory)s AND g.episode_id = c.episode_id
      FOR KEY SHARE OF c NOWAIT) logged
