-- Register a rebuild of a memory's champion lists (migration 0026), run under the memory's
-- keyword_memory_stats row lock (writers of the memory that already counted their chunks have
-- committed; the others wait, and then see the registration and log their episodes). Builds whose
-- backend is gone (a crashed process) are dropped with everything they left; so is anything an
-- earlier build of this memory left.
WITH stale AS (
    DELETE FROM keyword_champion_builds b
    WHERE b.memory = %(memory)s OR NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = b.pid)
    RETURNING b.memory
),
backlog AS (
    DELETE FROM keyword_champion_backlog g
    WHERE g.memory = %(memory)s OR g.memory IN (SELECT memory FROM stale)
),
staged_lists AS (
    DELETE FROM keyword_champion_staged_lists l
    WHERE l.memory = %(memory)s OR l.memory IN (SELECT memory FROM stale)
),
staged AS (
    DELETE FROM keyword_champion_staged s
    WHERE s.memory = %(memory)s OR s.memory IN (SELECT memory FROM stale)
)
SELECT count(*) FROM stale
