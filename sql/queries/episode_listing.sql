-- A memory's current episodes, newest first (by id: the order ingest stored them, so a source
-- edited last comes first), with each one's source identity and how many revisions that source
-- has (1 for an episode that is a source of its own). Superseded revisions are history, listed
-- by episode_history.sql. episodes_memory_id_idx walks the memory newest first; the counts read
-- episodes_source_idx (migration 0031).
SELECT e.id, e.title, e.kind, e.occurred_at, e.ingested_at, e.source, e.source_key,
       CASE WHEN e.source_key IS NULL THEN 1
            ELSE (SELECT count(*) FROM episodes r
                  WHERE r.memory = e.memory AND r.source_key = e.source_key)
       END AS revisions
FROM episodes e
WHERE e.memory = %(memory)s AND e.superseded_at IS NULL
  AND (%(before)s::bigint IS NULL OR e.id < %(before)s::bigint)
ORDER BY e.id DESC
LIMIT %(limit)s
