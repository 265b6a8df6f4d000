-- The staged generation's champion rows and lists, counted before the swap checks them.
SELECT (SELECT count(*)
FROM keyword_champions
WHERE memory = %(m)s AND generation = %(g)s), (SELECT count(*)
FROM keyword_champion_lists
WHERE memory = %(m)s AND generation = %(g)s)
