-- A revision became current when the one it replaced was superseded (as of a date, 0034).
UPDATE episodes SET current_from = (SELECT superseded_at FROM episodes WHERE id = %s)
 WHERE id = %s
