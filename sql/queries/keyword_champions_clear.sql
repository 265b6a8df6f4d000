-- Drop a memory's champion lists (migration 0025): in a rebuild's swap before
-- keyword_champions_install.sql, or for a memory no longer large enough. The rows first, then
-- the state (its lists go with it, ON DELETE CASCADE).
WITH rows AS (
    DELETE FROM keyword_champions WHERE memory = %(memory)s
)
DELETE FROM keyword_champion_state WHERE memory = %(memory)s
