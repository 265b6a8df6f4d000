-- The first statement of a champion-list swap (migration 0026) after the memory's
-- keyword_memory_stats row lock: every other row the swap writes or references that a deleter
-- could hold, locked now or not at all (NOWAIT). A deleter (forget, `backfill --rechunk`) deletes
-- chunks (their list rows go by cascade) before it waits for that stats row; were the swap to wait
-- for its rows while holding the stats row, the two would deadlock. So the swap fails fast
-- instead, lets the deleter finish, and tries again; once these are held it waits for nothing.
SELECT (SELECT count(*) FROM (SELECT 1 FROM keyword_champions WHERE memory = %(memory)s
                              FOR UPDATE NOWAIT) old),
       (SELECT count(*) FROM (SELECT 1 FROM chunks c
                              WHERE (c.episode_id, c.ordinal) IN (SELECT episode_id, ordinal FROM keyword_champion_staged
                                                                  WHERE memory = %(memory)s)
                              FOR KEY SHARE NOWAIT) staged),
       (SELECT count(*) FROM (SELECT 1 FROM chunks c
                              WHERE c.episode_id IN (SELECT episode_id FROM keyword_champion_backlog
                                                     WHERE memory = %(memory)s)
                              FOR KEY SHARE NOWAIT) logged)
