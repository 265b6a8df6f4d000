-- Every memory with its episode and chunk counts and the span of its episodes' dates.
SELECT e.memory, count(*) AS episodes, coalesce(sum(c.chunks), 0)::bigint AS chunks,
       min(e.occurred_at) AS first_at, max(e.occurred_at) AS last_at
FROM episodes e
LEFT JOIN (SELECT episode_id, count(*) AS chunks FROM chunks GROUP BY episode_id) c ON c.episode_id = e.id
GROUP BY e.memory
ORDER BY e.memory
