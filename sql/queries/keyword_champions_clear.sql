-- Drop a memory's champion lists (migration 0025) before keyword_champions_refresh.sql rebuilds
-- them: the rows first, then the state (its lists go with it, ON DELETE CASCADE).
WITH rows AS (
    DELETE FROM keyword_champions WHERE memory = %(memory)s
)
DELETE FROM keyword_champion_state WHERE memory = %(memory)s
