-- Every memory with its current episode count (superseded revisions are history), its chunk count, the span of its episodes' dates, and its
-- current (not retired) statements: a memory that holds only statements is listed too, as
-- memory_exists and the unknown-memory messages count it (its dates are then NULL).
WITH by_episodes AS (
    SELECT e.memory, count(*) FILTER (WHERE e.superseded_at IS NULL) AS episodes, coalesce(sum(c.chunks), 0)::bigint AS chunks,
           min(e.occurred_at) AS first_at, max(e.occurred_at) AS last_at
    FROM episodes e
    LEFT JOIN (SELECT episode_id, count(*) AS chunks FROM chunks GROUP BY episode_id) c
           ON c.episode_id = e.id
    GROUP BY e.memory
), by_statements AS (
    SELECT memory, count(*) FILTER (WHERE status <> 'retired') AS statements
    FROM observations
    GROUP BY memory
)
SELECT memory, coalesce(episodes, 0) AS episodes, coalesce(chunks, 0)::bigint AS chunks,
       first_at, last_at, coalesce(statements, 0) AS statements
FROM by_episodes FULL JOIN by_statements USING (memory)
ORDER BY memory
