-- The first statement of loading a rebuild's new generation (keyword_champions_load.sql, migration
-- 0027): the chunk rows its staged rows point to, locked FOR KEY SHARE now or not at all
-- (NOWAIT). Each inserted row's foreign-key check takes that lock on its chunk; a deleter
-- (forget, `backfill --rechunk`) deleting chunks in some order while the load inserts in another
-- could deadlock with it, and PostgreSQL would abort one of the two, maybe the deleter. So the
-- load fails fast instead, lets the deleter finish, and tries again (keyword_store.load_build).
-- Once these are held, a deleter of them waits for the load; the memory's writers never do.
SELECT count(*)
FROM (SELECT 1
      FROM chunks c
      JOIN (SELECT DISTINCT episode_id, ordinal FROM keyword_champion_staged WHERE memory = %(memory)s) s
        ON c.episode_id = s.episode_id AND c.ordinal = s.ordinal
      FOR KEY SHARE OF c NOWAIT) locked
