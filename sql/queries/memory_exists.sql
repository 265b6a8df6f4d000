-- Whether a memory holds any episode or observation.
SELECT EXISTS (SELECT 1
FROM episodes
WHERE memory = %(m)s) OR EXISTS (SELECT 1
FROM observations
WHERE memory = %(m)s)
